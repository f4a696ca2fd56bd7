// Makes the SQLite connection reuse compiled statements for SQL text it has seen, through a bounded LRU cache.
import type Database from "better-sqlite3";
import { LRUCache } from "lru-cache";

/** How many distinct SQL texts keep their compiled statement (least recently used ones are dropped). */
const STATEMENT_CACHE_SIZE = 512;

/**
 * Makes `sqlite.prepare` return a cached compiled statement for SQL text it has seen (an LRU of
 * {@link STATEMENT_CACHE_SIZE} entries): drizzle prepares every query it runs that is not a
 * prepared query, and compiling the SQL cost more than running it on the ledger's hot paths
 * (`lru-cache` keeps the most recently used). Private to the SQLite store: one connection, used by
 * one unit of work at a time (the store's mutex), and every caller uses a statement to the end
 * synchronously (`run`/`get`/`all`; nothing iterates lazily), so one compiled statement can serve
 * every caller of the same text. Its row modes (`raw`, `pluck`, `expand`) are reset on each
 * hand-out, so a caller that set one (drizzle sets `raw` for typed selects) never leaks it to the next.
 */
export function cachePreparedStatements(sqlite: Database.Database): void {
  const prepare = sqlite.prepare.bind(sqlite);
  const cache = new LRUCache<string, Database.Statement>({ max: STATEMENT_CACHE_SIZE });
  (sqlite as { prepare: (source: string) => Database.Statement }).prepare = (source: string) => {
    const cached = cache.get(source);
    if (cached) {
      if (cached.reader) cached.pluck(false).expand(false).raw(false);
      return cached;
    }
    const stmt = prepare(source);
    cache.set(source, stmt);
    return stmt;
  };
}
