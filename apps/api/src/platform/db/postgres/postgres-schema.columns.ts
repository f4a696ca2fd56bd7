// Column and CHECK helpers shared by the files of the PostgreSQL schema.
import { sql } from "drizzle-orm";
import { bigint } from "drizzle-orm/pg-core";

/** `col IN ('a','b',...)` for a CHECK constraint built from one of the contracts' status lists (same text as the SQLite schema's). */
export function oneOf(column: string, values: readonly string[]) {
  return sql.raw(`${column} IN (${values.map((v) => `'${v}'`).join(", ")})`);
}

/**
 * A time or duration in milliseconds: PostgreSQL `bigint` (64-bit; `integer` is 32-bit there and
 * would overflow in 1970 + 24.8 days), read and written as a JS `number` (exact up to 2^53 ms).
 */
export function ms(name: string) {
  return bigint(name, { mode: "number" });
}
