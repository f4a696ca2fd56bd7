import type { Db, Tx } from "./database.js";

/** Prepared queries per drizzle session (one per open store; a transaction shares its database's session). */
const bySession = new WeakMap<object, Map<string, unknown>>();

/**
 * The drizzle prepared query named `name` for the store behind `handle` (the database or a
 * transaction on it: both run on the same connection), built once with `build(handle)` and reused:
 * drizzle builds the SQL of a query anew on every call, which costs more than running a one-row
 * read (a select of every column of a wide table takes ~60 µs to build, ~2 µs to run). Only for
 * queries of a fixed shape whose values are `sql.placeholder`s. Synchronous use only (better-sqlite3).
 */
export function preparedQuery<T>(handle: Db | Tx, name: string, build: (db: Db | Tx) => T): T {
  // drizzle keeps the session on the database and on each of its transactions (same object)
  const session = (handle as unknown as { session: object }).session;
  let cache = bySession.get(session);
  if (!cache) {
    cache = new Map();
    bySession.set(session, cache);
  }
  let query = cache.get(name) as T | undefined;
  if (query === undefined) {
    query = build(handle);
    cache.set(name, query);
  }
  return query;
}
