// Column and CHECK helpers shared by the files of the SQLite schema.
import { sql } from "drizzle-orm";

/** `col IN ('a','b',...)` for a CHECK constraint built from one of the contracts' status lists. */
export function oneOf(column: string, values: readonly string[]) {
  return sql.raw(`${column} IN (${values.map((v) => `'${v}'`).join(", ")})`);
}
