import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { LRUCache } from "lru-cache";
import { drizzle, type BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import * as schema from "./schema.js";
import { isStoreBusy, noteCommit, StoreBusyError, STARTUP_BUSY_TIMEOUT_MS, STORE_BUSY_TIMEOUT_MS } from "./store-busy.js";

/** The drizzle database handle of the control plane (synchronous better-sqlite3 driver). */
export type Db = BetterSQLite3Database<typeof schema>;
/** A handle usable inside `db.transaction(tx => ...)`; the same query API as {@link Db}. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

/** The folder of drizzle-kit migrations (`apps/api/drizzle`). */
export const MIGRATIONS_FOLDER = join(dirname(fileURLToPath(import.meta.url)), "../../../drizzle");

/** An open store: the drizzle handle plus the raw connection (for pragmas and close). */
export interface Store {
  db: Db;
  sqlite: Database.Database;
  close(): void;
}

/** How many distinct SQL texts keep their compiled statement (least recently used ones are dropped). */
const STATEMENT_CACHE_SIZE = 512;

/**
 * Makes `sqlite.prepare` return a cached compiled statement for SQL text it has seen (an LRU of
 * {@link STATEMENT_CACHE_SIZE} entries): drizzle prepares every query it runs, and compiling the
 * SQL cost more than running it on the ledger's hot paths (`lru-cache` keeps the most recently used). Every caller uses a statement to the end
 * synchronously (`run`/`get`/`all`; nothing here iterates lazily), so one compiled statement can
 * serve every caller of the same text. Its row modes (`raw`, `pluck`, `expand`) are reset on each
 * hand-out, so a caller that set one (drizzle sets `raw` for typed selects) never leaks it to the next.
 */
function cachePreparedStatements(sqlite: Database.Database): void {
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

/**
 * Opens (creating the parent folder) and migrates the SQLite store at `file` (`":memory:"` for
 * tests): WAL journal, `synchronous = FULL`, foreign keys on, busy timeout 5000 ms while migrating
 * and {@link STORE_BUSY_TIMEOUT_MS} (20 ms) once open (see `store-busy.ts`), compiled
 * statements cached by SQL text (see {@link cachePreparedStatements}).
 *
 * Migrations run with foreign keys OFF, because a drizzle-kit table rebuild (`DROP TABLE` + rename)
 * under foreign keys ON would cascade-delete child rows; after migrating, `foreign_key_check` must
 * be empty or this throws `Error("store.foreign_key_violation ...")`.
 * @throws Error when the file cannot be opened or a migration fails (startup must stop).
 */
export function openStore(file: string): Store {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const sqlite = new Database(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = FULL");
  sqlite.pragma(`busy_timeout = ${STARTUP_BUSY_TIMEOUT_MS}`);
  sqlite.pragma("foreign_keys = OFF");
  const db = drizzle(sqlite, { schema });
  migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
  const violations = sqlite.pragma("foreign_key_check") as unknown[];
  if (violations.length > 0) {
    sqlite.close();
    throw new Error(`store.foreign_key_violation: ${violations.length} rows violate foreign keys after migration`);
  }
  sqlite.pragma("foreign_keys = ON");
  cachePreparedStatements(sqlite);
  // Serving from now on: a lock wait blocks the event loop, so it is short; the rest is asynchronous (retryWhenBusy).
  sqlite.pragma(`busy_timeout = ${STORE_BUSY_TIMEOUT_MS}`);
  return { db, sqlite, close: () => sqlite.close() };
}

/**
 * Runs `fn` in one write transaction that takes SQLite's write lock at BEGIN (`BEGIN IMMEDIATE`),
 * so a read-then-write inside it never fails to upgrade with SQLITE_BUSY while another connection
 * writes (`busy_timeout` applies instead). Synchronous; a throw rolls everything back and rethrows.
 * @throws StoreBusyError (`store.busy`) when another connection held the write lock for longer than
 *   the busy timeout ({@link STORE_BUSY_TIMEOUT_MS} once serving): nothing was written; callers retry
 *   asynchronously with `retryWhenBusy`. A commit is reported to the operation in progress (`noteCommit`).
 */
export function writeTransaction<T>(db: Db, fn: (tx: Tx) => T): T {
  const observer = durableWriteObservers.get(db);
  let out: T;
  try {
    out = observer
      ? db.transaction(
          (tx) => {
            const value = fn(tx);
            observer.beforeCommit();
            return value;
          },
          { behavior: "immediate" },
        )
      : db.transaction(fn, { behavior: "immediate" });
  } catch (err) {
    if (isStoreBusy(err) && !(err instanceof StoreBusyError)) throw new StoreBusyError(false, { cause: err });
    throw err;
  }
  noteCommit();
  observer?.afterCommit();
  return out;
}

/**
 * Test seam (crash-safety verification, issue 5): sees each {@link writeTransaction} of one handle
 * at its durable boundary. `beforeCommit` runs inside the transaction after its work (a throw rolls
 * the whole transaction back, as a crash before COMMIT would); `afterCommit` runs once it is durable
 * (a throw there is a crash after COMMIT: the write stands, the caller never sees its result).
 * Production code never installs one.
 */
export interface DurableWriteObserver {
  beforeCommit(): void;
  afterCommit(): void;
}

const durableWriteObservers = new WeakMap<Db, DurableWriteObserver>();

/** Installs (or, with `null`, removes) the {@link DurableWriteObserver} of `db`. Test-only. */
export function observeDurableWrites(db: Db, observer: DurableWriteObserver | null): void {
  if (observer) durableWriteObservers.set(db, observer);
  else durableWriteObservers.delete(db);
}
