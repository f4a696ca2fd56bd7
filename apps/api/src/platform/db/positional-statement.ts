// One statement of a fixed text with positional parameters, run in the caller's unit of work without drizzle, on either store.
import type { StoreTx } from "./store.port.js";

/** PostgreSQL texts by their SQLite text (`?` numbered `$1`…), built once per text. */
const pgTexts = new Map<string, string>();

/**
 * The PostgreSQL text of a statement written with SQLite's `?` parameters: each `?` numbered `$1`, `$2`… in
 * order. The text must hold no `?` other than its parameters (no string literal or comment with one).
 */
function pgTextOf(text: string): string {
  let pg = pgTexts.get(text);
  if (pg === undefined) {
    let n = 0;
    pg = text.replace(/\?/g, () => `$${++n}`);
    pgTexts.set(text, pg);
  }
  return pg;
}

/**
 * Runs ONE statement of the fixed SQL `text` (`?` parameters, `values` in order, as driver values: strings,
 * numbers, null, and what `driverColumns` in prepared-shapes.ts converts a column's value to) in `tx` and
 * returns its rows, keyed by the names the statement gives its columns (no camelCase mapping). SQLite: the
 * store's compiled statement (`StoreTx.sqliteStatement`); PostgreSQL: the same text numbered `$1`… as the named
 * prepared statement `name` (`StoreTx.pgPrepared`; `name` must always stand for the same text). `returnsRows`:
 * the statement is a `SELECT` or has `RETURNING` (SQLite runs the others with `run`; the answer is then empty).
 *
 * For the multi-row writes of a repair or a batch, where drizzle's placeholder filling (one named argument per
 * column per row) and row mapping cost more than the statement (docs/performance-notes.md). The text must be
 * SQL both dialects run the same way (a row-value `IN (VALUES …)` list, a `CAST` where PostgreSQL must know a
 * `VALUES` column's type).
 * @throws the store's error (a constraint, a busy store); Error when `tx` is neither store's unit of work.
 */
export async function positionalStatement(
  tx: StoreTx,
  name: string,
  text: string,
  values: readonly unknown[],
  returnsRows: boolean,
): Promise<Array<Record<string, unknown>>> {
  if (tx.sqliteStatement) {
    const stmt = tx.sqliteStatement(text);
    if (!returnsRows) {
      stmt.run(...values);
      return [];
    }
    return stmt.all(...values) as Array<Record<string, unknown>>;
  }
  if (tx.pgPrepared) return tx.pgPrepared(name, pgTextOf(text), values);
  throw new Error(`${name}: the unit of work offers no raw statement (StoreTx.sqliteStatement or StoreTx.pgPrepared)`);
}

/**
 * The row list of a multi-row `VALUES`: `(c1, c2, …)` repeated `rows` times, joined by `, `, where each `columns`
 * entry is one column's parameter as written (`?`, or `CAST(? AS INTEGER)` where PostgreSQL must know the type of
 * a `VALUES` column it compares with a number).
 */
export function valuesRows(rows: number, columns: readonly string[]): string {
  const one = `(${columns.join(", ")})`;
  return Array.from({ length: rows }, () => one).join(", ");
}
