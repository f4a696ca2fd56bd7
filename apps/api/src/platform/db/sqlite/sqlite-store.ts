// The embedded SQLite store: one connection behind an async mutex, WAL and full sync, with its opener and integrity check.
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { Mutex } from "async-mutex";
import { drizzle, type BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { assertSchemaNotNewer, compareSchema, StoreSchemaBehindError, type SchemaState } from "../schema-version.js";
import * as schema from "./sqlite-schema.js";
import { isStoreBusy, noteCommit, StoreBusyError, STARTUP_BUSY_TIMEOUT_MS, STORE_BUSY_TIMEOUT_MS } from "../store-busy.js";
import {
  StoreNestedTransactionError,
  type DurableWriteObserver,
  type QueryDb,
  type SqliteStatement,
  type Store,
  type StoreTx,
  type TransactionOptions,
} from "../store.port.js";
import { cachePreparedStatements } from "./statement-cache.js";
import { isInUnitOfWork, runInUnitOfWork } from "../unit-of-work-scope.js";
import { traceUnitOfWork } from "../store-tracing.js";

/** The folder of drizzle-kit SQLite migrations (`apps/api/drizzle`). */
export const MIGRATIONS_FOLDER = join(dirname(fileURLToPath(import.meta.url)), "../../../../drizzle");

/** The drizzle handle of the SQLite store (synchronous better-sqlite3 driver); SQLite-only code (tests, bench floors) may use it. */
export type SqliteDb = BetterSQLite3Database<typeof schema>;

/**
 * Options of {@link openSqliteStore}. `detectNestedTransactions` (default true): a transaction or
 * read started inside a transaction of the same store is refused at once with
 * `StoreNestedTransactionError` (tracked with the process's one `AsyncLocalStorage`, `unit-of-work-scope.ts`); when false, such a call
 * waits on the store's own mutex forever (a deadlock), so turn it off only where that cost matters
 * and the code is known not to nest.
 */
export interface SqliteStoreOptions {
  detectNestedTransactions?: boolean;
  /**
   * false: open without migrating, and refuse a file whose schema is not this build's (`StoreSchemaBehindError`,
   * `store.schema_behind`; `StoreSchemaNewerError`, `store.schema_newer`). The operator CLI's `--db`: a migration
   * there could change the schema under an API of the previous build still serving the file. Default true.
   */
  migrate?: boolean;
}

/**
 * The embedded SQLite store (the default; one file, WAL, `synchronous = FULL`,
 * one API process). better-sqlite3 is synchronous and cannot run an async callback inside its own
 * `db.transaction`, so the port's async unit of work is built here:
 *
 * - ONE connection, and ONE async mutex (`async-mutex`) per store that EVERY access takes: a write
 *   transaction (`BEGIN IMMEDIATE` … `await fn(tx)` … `COMMIT`, `ROLLBACK` on a throw) and every
 *   read ({@link read}, no BEGIN: each statement sees what is committed). So while a transaction
 *   is open and awaiting, nothing else of this process runs a statement on the connection: a read
 *   can never see that transaction's uncommitted rows, and no statement of another caller can slip
 *   into it. (The alternative, a second read-only connection, would not work for `:memory:`
 *   stores; reads are short, so queueing them behind a write costs little.)
 * - `BEGIN IMMEDIATE` takes SQLite's write lock at once, so a read-then-write inside a transaction
 *   never fails to upgrade while another PROCESS writes; the busy timeout applies instead:
 *   {@link STORE_BUSY_TIMEOUT_MS} (20 ms, the wait blocks the event loop) once serving, 5000 ms
 *   with `{startup: true}`. Past it the transaction rejects with `StoreBusyError` (`store.busy`,
 *   nothing written) and callers retry asynchronously (`retryWhenBusy`); each commit is reported
 *   with `noteCommit` (the retry's `afterCommit` rule).
 * - Nested calls: see {@link SqliteStoreOptions.detectNestedTransactions}.
 *
 * `db` and `sqlite` are the raw handles, for SQLite-only code outside the services (migration
 * tests, bench floors, fixtures); services never see them.
 */
export class SqliteStore implements Store {
  readonly dialect = "sqlite" as const;
  private readonly mutex = new Mutex();
  private readonly detectNested: boolean;
  private readonly preparedQueries = new Map<string, unknown>();
  /**
   * `StoreTx.sqliteStatement`'s statements, by SQL text (a handful of fixed texts). Kept here, not only in the
   * connection's statement cache, whose hand-out resets row modes another caller of the same text may rely on;
   * their texts (upper-case keywords) are not drizzle's, so the two never share a compiled statement.
   */
  private readonly rawStatements = new Map<string, Database.Statement>();
  private readonly handle: StoreTx;
  private observer: DurableWriteObserver | null = null;
  private closed = false;
  /** Compiled once here (not through `sqlite.prepare` later, which a crash-injecting test wraps), so a rollback always runs. */
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;

  constructor(
    /** The drizzle handle (SQLite-only code). */
    readonly db: SqliteDb,
    /** The raw connection (pragmas, SQLite-only code). */
    readonly sqlite: Database.Database,
    opts: SqliteStoreOptions = {},
  ) {
    this.begin = sqlite.prepare("BEGIN IMMEDIATE");
    this.commit = sqlite.prepare("COMMIT");
    this.rollback = sqlite.prepare("ROLLBACK");
    this.detectNested = opts.detectNestedTransactions !== false;
    const query = db as unknown as QueryDb;
    this.handle = {
      db: query,
      tables: schema,
      prepared: <Q>(name: string, build: (db: QueryDb) => Q): Q => {
        let q = this.preparedQueries.get(name) as Q | undefined;
        if (q === undefined) {
          q = build(query);
          this.preparedQueries.set(name, q);
        }
        return q;
      },
      sqliteStatement: (text: string): SqliteStatement => {
        let stmt = this.rawStatements.get(text);
        if (stmt === undefined) {
          // Through `sqlite.prepare` (not cached by drizzle), so a test's wrapper of it sees these statements too.
          stmt = this.sqlite.prepare(text);
          this.rawStatements.set(text, stmt);
        }
        return stmt;
      },
    };
  }

  /** See {@link Store.transaction} and the class comment. */
  async transaction<T>(fn: (tx: StoreTx) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    this.refuseNested();
    return traceUnitOfWork("transaction", "sqlite", () => this.transactionUntraced(fn, opts));
  }

  /** {@link transaction} inside its span. */
  private async transactionUntraced<T>(fn: (tx: StoreTx) => Promise<T>, opts: TransactionOptions): Promise<T> {
    return this.mutex.runExclusive(async () => {
      this.assertOpen();
      if (opts.startup) this.sqlite.pragma(`busy_timeout = ${STARTUP_BUSY_TIMEOUT_MS}`);
      try {
        this.begin.run();
      } catch (err) {
        throw isStoreBusy(err) && !(err instanceof StoreBusyError) ? new StoreBusyError(false, { cause: err }) : err;
      } finally {
        if (opts.startup) this.sqlite.pragma(`busy_timeout = ${STORE_BUSY_TIMEOUT_MS}`);
      }
      let out: T;
      try {
        out = await (this.detectNested ? runInUnitOfWork(this, () => fn(this.handle)) : fn(this.handle));
        this.observer?.beforeCommit();
        this.commit.run();
      } catch (err) {
        if (this.sqlite.inTransaction) this.rollback.run();
        throw isStoreBusy(err) && !(err instanceof StoreBusyError) ? new StoreBusyError(false, { cause: err }) : err;
      }
      noteCommit();
      this.observer?.afterCommit();
      return out;
    });
  }

  /** See {@link Store.read} and the class comment (reads take the mutex too; no BEGIN). */
  async read<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    this.refuseNested();
    return traceUnitOfWork("read", "sqlite", () =>
      this.mutex.runExclusive(async () => {
        this.assertOpen();
        return this.detectNested ? runInUnitOfWork(this, () => fn(this.handle)) : fn(this.handle);
      }),
    );
  }

  /**
   * True for SQLite's unique-constraint failure, a unique index or the primary key
   * (`SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_CONSTRAINT_PRIMARYKEY`: PostgreSQL's 23505 covers both),
   * also when drizzle wrapped it in a `cause`.
   */
  isUniqueViolation(err: unknown): boolean {
    for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
      const code = (e as { code?: unknown }).code;
      if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") return true;
    }
    return false;
  }

  /** See {@link Store.observeDurableWrites}. Test-only. */
  observeDurableWrites(observer: DurableWriteObserver | null): void {
    this.observer = observer;
  }

  /** Waits for the unit of work in progress (the mutex), then closes the connection. Idempotent. */
  /** See `Store.schemaState`: one read of the migration table (within the busy timeout). */
  async schemaState(): Promise<SchemaState> {
    const applied = this.sqlite.prepare("SELECT max(created_at) AS ms FROM __drizzle_migrations").get() as { ms: number | null };
    return compareSchema(applied.ms === null ? null : Number(applied.ms), MIGRATIONS_FOLDER);
  }

  async close(): Promise<void> {
    await this.mutex.runExclusive(() => {
      if (this.closed) return;
      this.closed = true;
      this.sqlite.close();
    });
  }

  /**
   * Synchronous close for SQLite-only code that cannot wait (a test tearing a store down, a process
   * exit): closes the connection now, whatever runs.
   */
  closeNow(): void {
    if (this.closed) return;
    this.closed = true;
    this.sqlite.close();
  }

  private refuseNested(): void {
    if (this.detectNested && isInUnitOfWork(this)) throw new StoreNestedTransactionError();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("store.closed: the store was closed");
  }
}

/**
 * Opens (creating the parent folder) and migrates the SQLite store at `file` (`":memory:"` for
 * tests): WAL journal, `synchronous = FULL`, foreign keys on, busy timeout 5000 ms while migrating
 * and {@link STORE_BUSY_TIMEOUT_MS} (20 ms) once open (see `store-busy.ts`), compiled statements
 * cached by SQL text (`statement-cache.ts`).
 *
 * Migrations run with foreign keys OFF, because a drizzle-kit table rebuild (`DROP TABLE` + rename)
 * under foreign keys ON would cascade-delete child rows; after a start that applied a migration,
 * `foreign_key_check` must be empty or this throws `Error("store.foreign_key_violation ...")`. A start
 * that applied none skips that whole-file read (every write since ran with foreign keys ON), so opening
 * a large store stays fast; `checkSqliteStore` (sqlite-store-check.ts) runs the full check on an operator's demand.
 * @throws Error when the file cannot be opened (better-sqlite3's `SQLITE_NOTADB`, `SQLITE_CANTOPEN`,
 *   `SQLITE_READONLY` codes) or a migration fails (startup must stop); `StoreSchemaNewerError`
 *   (`store.schema_newer`) when a newer build migrated the file; with `opts.migrate` false,
 *   `StoreSchemaBehindError` (`store.schema_behind`) when this build's migrations have not all been applied.
 */
export function openSqliteStore(file: string, opts: SqliteStoreOptions = {}): SqliteStore {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const sqlite = new Database(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = FULL");
  sqlite.pragma(`busy_timeout = ${STARTUP_BUSY_TIMEOUT_MS}`);
  sqlite.pragma("foreign_keys = OFF");
  const db = drizzle(sqlite, { schema });
  let migrated: boolean;
  try {
    if (opts.migrate === false) {
      const state = compareSchema(newestAppliedMs(sqlite), MIGRATIONS_FOLDER);
      if (state === "behind") throw new StoreSchemaBehindError();
      migrated = false;
    } else {
      const before = appliedMigrations(sqlite);
      migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
      migrated = appliedMigrations(sqlite) !== before;
    }
    assertSchemaNotNewer(newestAppliedMs(sqlite), MIGRATIONS_FOLDER);
  } catch (err) {
    sqlite.close();
    throw err;
  }
  // Only a migration ran with foreign keys off: a start that applied none skips the whole-file check
  // (seconds at a million effects); `npm run store:check` runs it, and SQLite's integrity check, on demand.
  const violations = migrated ? (sqlite.pragma("foreign_key_check") as unknown[]) : [];
  if (violations.length > 0) {
    sqlite.close();
    throw new Error(`store.foreign_key_violation: ${violations.length} rows violate foreign keys after migration`);
  }
  sqlite.pragma("foreign_keys = ON");
  cachePreparedStatements(sqlite);
  // Serving from now on: a lock wait blocks the event loop, so it is short; the rest is asynchronous (retryWhenBusy).
  sqlite.pragma(`busy_timeout = ${STORE_BUSY_TIMEOUT_MS}`);
  return new SqliteStore(db, sqlite, opts);
}

/** How many migrations `__drizzle_migrations` records (0 before the first migration created the table). */
/** The newest applied migration's time (ms, drizzle's `__drizzle_migrations.created_at`), or null when none is recorded (or the table is missing). */
function newestAppliedMs(sqlite: Database.Database): number | null {
  if (appliedMigrations(sqlite) === 0) return null;
  const applied = sqlite.prepare("SELECT max(created_at) AS ms FROM __drizzle_migrations").get() as { ms: number | null };
  return applied.ms === null ? null : Number(applied.ms);
}

function appliedMigrations(sqlite: Database.Database): number {
  const table = sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  return table === undefined ? 0 : (sqlite.prepare("SELECT count(*) FROM __drizzle_migrations").pluck().get() as number);
}
