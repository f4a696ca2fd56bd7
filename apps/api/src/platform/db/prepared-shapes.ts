// Helpers for prepared writes whose column list varies: one cached prepared query per set of columns given a value.
import { sql, type Column, type Placeholder } from "drizzle-orm";

/**
 * Helpers for prepared writes whose column list varies with the caller's values (an INSERT of the
 * columns a row sets, an UPDATE of the columns a `set` holds): one prepared query per SHAPE (the
 * sorted names of the columns given a value), cached by the store under `name:shape`
 * (`StoreTx.prepared`, docs/ARCHITECTURE.md). A handful of shapes exist per call site, so the cache
 * stays small; building a query's SQL with drizzle costs far more than running a one-row write
 * (docs/performance-notes.md).
 */

/** The keys of `values` whose value is not `undefined`, sorted (a column left `undefined` keeps its default, as drizzle's `.values()`/`.set()` do). */
export function shapeOf(values: object): string[] {
  const keys: string[] = [];
  for (const [k, v] of Object.entries(values)) if (v !== undefined) keys.push(k);
  return keys.sort();
}

/** `{ [key]: sql.placeholder(prefix + key) }` for each of `keys` (the values of a prepared `.values()` or `.set()`). */
export function placeholdersFor(keys: readonly string[], prefix = ""): Record<string, Placeholder<string>> {
  const out: Record<string, Placeholder<string>> = {};
  for (const k of keys) out[k] = sql.placeholder(prefix + k);
  return out;
}

/** `{ [prefix + key]: values[key] }` for each of `keys`: the arguments of a query built with {@link placeholdersFor}. */
export function argumentsFor(keys: readonly string[], values: object, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[prefix + k] = (values as Record<string, unknown>)[k];
  return out;
}

/**
 * For a raw statement (`StoreTx.sqliteStatement`) of the columns `keys` of `table` (its drizzle column
 * objects, by property name): the SQL column names, quoted, in order, and the driver values of `values` for
 * them, each converted as drizzle converts it (`mapToDriverValue`: a boolean column's `true` to 1, …; null
 * stays null). Throws a TypeError naming a key `table` has no column for.
 */
export function driverColumns(table: object, keys: readonly string[]): { names: string[]; values: (values: object) => unknown[] } {
  const columns = keys.map((k) => {
    const column = (table as Record<string, unknown>)[k] as Column | undefined;
    if (column === undefined || typeof column.mapToDriverValue !== "function") throw new TypeError(`no column ${k}`);
    return column;
  });
  return {
    names: columns.map((c) => `"${c.name}"`),
    values: (values) =>
      keys.map((k, i) => {
        const v = (values as Record<string, unknown>)[k];
        return v === null || v === undefined ? null : columns[i]!.mapToDriverValue(v);
      }),
  };
}

/**
 * The row counts of the multi-row statements that write `n` rows (n ≥ 0): `n` split into powers of two,
 * largest first, none above `max` (a power of two; default 256): 1,000 → 256, 256, 256, 128, 64, 32, 8. A
 * call site that prepares one statement per count (`name:count`) so caches at most log2(max) + 1 of them,
 * and writes `n` rows in at most ⌈n / max⌉ + log2(max) statements.
 */
export function powerOfTwoChunks(n: number, max = 256): number[] {
  const out: number[] = [];
  let left = n;
  while (left >= max) {
    out.push(max);
    left -= max;
  }
  for (let size = max / 2; size >= 1; size /= 2) if (left >= size) (out.push(size), (left -= size));
  return out;
}
