// The async store port every service sees of the database: units of work, the query builder type, and their errors.
import type { SchemaState } from "./schema-version.js";
import type { SQL } from "drizzle-orm";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type * as schema from "./sqlite/sqlite-schema.js";

/**
 * The async store port (docs/DESIGN.md §11): what every application service sees of the database.
 * A store implementation (embedded SQLite under `platform/db/sqlite/`, PostgreSQL under
 * `platform/db/postgres/`) is the only code that knows its driver; services and repositories use
 * only this file's types. Concurrency is expressed as compare-and-set on (status, version) in the
 * repositories, never as "the database serialises writers".
 */

/**
 * The drizzle query builder a repository writes its queries with. Typed against the SQLite schema
 * (`sqlite/sqlite-schema.ts`); the PostgreSQL store hands its own `drizzle-orm/node-postgres` builder, cast to
 * this type, with a schema of the same table and column names. Repositories therefore use only
 * awaited query builders (`.returning()`, `(await q.limit(1))[0]`, never `.run()/.get()/.all()`)
 * and raw `sql` accepted by both dialects (docs/ARCHITECTURE.md "Dialect-neutral repositories").
 */
export type QueryDb = BaseSQLiteDatabase<"async", unknown, typeof schema>;

/** The tables of the store's dialect, by their `sqlite/sqlite-schema.ts` export names (typed as the SQLite tables). */
export type StoreTables = typeof schema;

/**
 * One unit of work handed to {@link Store.transaction} or {@link Store.read}: the query builder,
 * the tables, and a cache of prepared queries. Valid only until the callback's promise settles;
 * a repository method takes it as its first argument.
 */
export interface StoreTx {
  /** The query builder of this unit of work (inside a transaction: its connection). */
  readonly db: QueryDb;
  /** The tables to query (use these, never `sqlite/sqlite-schema.ts` imports, so the PostgreSQL store can reuse the code). */
  readonly tables: StoreTables;
  /**
   * The prepared query named `name`, built with `build(db)` (a query of a fixed shape whose values
   * are `sql.placeholder`s, ending in `.prepare()`; `db` is THIS unit of work's builder) and reused
   * as long as it runs on the same connection (the SQLite store: once per store): building the SQL
   * of a query costs more than running a one-row read. Run it with `.execute(values)` (rows).
   */
  prepared<Q>(name: string, build: (db: QueryDb) => Q): Q;
  /**
   * PostgreSQL stores only (undefined on SQLite): runs ONE statement built with drizzle's `sql` in this
   * unit of work and returns its rows, keyed by the names the statement gives its columns (no camelCase
   * mapping, `bigint` as the driver parses it). For what PostgreSQL does in one round trip and SQLite
   * cannot (several writes in one data-modifying `WITH`); a repository keeps its dialect-neutral
   * statements as the SQLite path, with the same effect.
   */
  readonly pgRows?: (query: SQL) => Promise<Array<Record<string, unknown>>>;
  /**
   * PostgreSQL stores only (undefined on SQLite): runs ONE statement of a fixed text (`$1`… parameters,
   * `values` in order) as a named prepared statement `name` (parsed once per connection, then only bound
   * and executed) and returns its rows as {@link pgRows} does. For the hot statements a repository sends
   * many times; `name` must always stand for the same `text`.
   */
  readonly pgPrepared?: (name: string, text: string, values: readonly unknown[]) => Promise<Array<Record<string, unknown>>>;
  /**
   * SQLite stores only (undefined on PostgreSQL): the compiled statement of the fixed SQL `text` (`?`
   * parameters, driver values: numbers, strings, null), compiled once per store and reused. For the hottest
   * writes (a reconciliation outcome's), where drizzle's placeholder filling and row mapping cost more than the
   * statement; run it synchronously inside THIS unit of work. A repository keeps its drizzle statement as the
   * other dialect's path, with the same effect.
   */
  readonly sqliteStatement?: (text: string) => SqliteStatement;
}

/**
 * A compiled SQLite statement ({@link StoreTx.sqliteStatement}): `run` answers how many rows the statement
 * itself changed (`changes`; rows changed by triggers are not counted), `get` the first row (column names as
 * in the SQL) or undefined, `all` every row (only for a statement that returns rows: a `SELECT` or a write with
 * `RETURNING`). All throw the driver's error (a constraint, a busy store).
 */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/**
 * Test seam (crash-safety verification): sees each {@link Store.transaction} at its durable
 * boundary. `beforeCommit` runs inside the transaction after its work (a throw rolls the whole
 * transaction back, as a crash before COMMIT would); `afterCommit` runs once it is durable (a throw
 * there is a crash after COMMIT: the write stands, the caller never sees its result). Production
 * code never installs one.
 */
export interface DurableWriteObserver {
  beforeCommit(): void;
  afterCommit(): void;
}

/** Options of one {@link Store.transaction}. */
export interface TransactionOptions {
  /**
   * Startup work (nothing is served yet): the transaction may wait for another connection's lock as
   * long as the migrations did (SQLite: 5000 ms instead of the serving 20 ms). Default false.
   */
  startup?: boolean;
}

/**
 * An open store.
 * - {@link transaction}: ONE write unit of work, all or nothing: `fn`'s writes commit together
 *   (durably) when its promise resolves, and roll back when it rejects (the error is rethrown).
 *   A call made from inside another transaction of the same store is refused with
 *   {@link StoreNestedTransactionError} (`store.nested_transaction`), never joined and never
 *   left waiting on itself. When another process holds the store's write lock past the bounded
 *   wait it rejects with `StoreBusyError` (`store.busy`, nothing written; see `store-busy.ts`).
 * - {@link read}: reads (no writes) outside a write transaction; they never see another
 *   transaction's uncommitted rows (each implementation says how). A read from inside a
 *   transaction is refused like a nested transaction: read through the transaction's `tx`.
 * - {@link isUniqueViolation}: true when an error thrown by a query is the store's unique-constraint
 *   violation, primary key included (SQLite `SQLITE_CONSTRAINT_UNIQUE`/`_PRIMARYKEY`, PostgreSQL SQLSTATE 23505).
 * - {@link observeDurableWrites}: installs (`null`: removes) the {@link DurableWriteObserver}. Test-only.
 * - {@link close}: waits for the unit of work in progress, then closes the connections.
 * - {@link schemaState}: reads the newest applied migration (one trivial query, within the store's
 *   bound) and compares it with this build's (`compareSchema`); for `GET /ready`. Rejects as a query does.
 * - {@link watchAvailability} (PostgreSQL only: a store that can be unreachable): installs (`null`:
 *   removes) the {@link StoreAvailabilityObserver} told of each unit of work's end. SQLite, a local
 *   file, has no such state (its only wait is the busy timeout) and does not implement it.
 */
export interface Store {
  readonly dialect: "sqlite" | "postgres";
  transaction<T>(fn: (tx: StoreTx) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  read<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  isUniqueViolation(err: unknown): boolean;
  observeDurableWrites(observer: DurableWriteObserver | null): void;
  close(): Promise<void>;
  watchAvailability?(observer: StoreAvailabilityObserver | null): void;
  schemaState(): Promise<SchemaState>;
}

/**
 * Told, by a store that can be unreachable, how each unit of work ended: `failed(cause)` when the
 * database could not be reached or did not answer within its bound (a lost connection, SQLSTATE
 * 57P01–57P03 / class 08 / 53300, a statement or query timeout, no connection within the acquire
 * timeout), `succeeded()` when one committed or read. Called on every unit of work: must be cheap and
 * must not throw.
 */
export interface StoreAvailabilityObserver {
  failed(cause: unknown): void;
  succeeded(): void;
}

/**
 * A {@link Store.transaction} (or {@link Store.read}) was called from inside a transaction of the same
 * store: the inner call would wait for the unit of work its own caller holds. Code
 * `store.nested_transaction`; a programming error (pass the `tx` down instead), never retried.
 */
export class StoreNestedTransactionError extends Error {
  override readonly name = "StoreNestedTransactionError";
  readonly code = "store.nested_transaction";
  constructor() {
    super("store.nested_transaction: a store transaction or read was started inside a transaction of the same store; pass its tx instead");
  }
}
