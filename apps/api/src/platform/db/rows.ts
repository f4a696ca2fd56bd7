/** The first row of a query's result, or undefined (the dialect-neutral `.get()`: `firstRow(await q.limit(1))`). */
export function firstRow<T>(rows: readonly T[]): T | undefined {
  return rows[0];
}
