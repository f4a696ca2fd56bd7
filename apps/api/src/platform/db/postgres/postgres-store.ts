// The PostgreSQL store for any number of API instances on one database: a `pg` pool, its timeouts, and how to open it.
import pg from "pg";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { StoreBusyError } from "../store-busy.js";
import type { QueryDb, Store, StoreTables, StoreTx } from "../store.port.js";
import { compareSchema, type SchemaState } from "../schema-version.js";
import {
  assertPgSchemaNotNewer,
  installPgTypeParsers,
  migratePostgres,
  newestPgMigrationMs,
  PG_MIGRATIONS_FOLDER,
} from "./migrate-postgres.js";
import { PgUnitOfWork, type PgConnection, type PgConnectionSource } from "./pg-unit-of-work.js";
import * as pgSchema from "./postgres-schema.js";

/**
 * Default size of the connection pool of ONE API instance (`MOSOO_DATABASE_POOL_SIZE`). A unit of
 * work holds one connection from BEGIN to COMMIT, including the event-loop turns between its
 * statements; one Node process runs JavaScript on one core, so past a handful of connections more of
 * them only queue inside PostgreSQL. 10 covers the request handlers, the sweep, reconciliation and
 * group commit of one instance. Sizing rule: (instances × pool size) + the LISTEN connection of each
 * instance + migrations and operators ≤ the server's `max_connections` (100 by default) minus its
 * reserved slots; e.g. 3 instances × 10 = 30 leaves room on a default server.
 */
const DEFAULT_POOL_SIZE = 10;
/** How long (ms) a unit of work waits for a free pooled connection (or a new one to open) before `StoreBusyError` (503). */
const DEFAULT_ACQUIRE_TIMEOUT_MS = 2_000;
/**
 * `lock_timeout` (ms) of every pooled connection: a statement that waits longer for a row or table
 * lock fails with 55P03 and the unit of work answers `StoreBusyError` (503, nothing written; not
 * retried inside the store, it already waited). A CAS waits for its row only as long as the other
 * writer's transaction lasts, normally milliseconds.
 */
const DEFAULT_LOCK_TIMEOUT_MS = 2_000;
/**
 * The query bound (ms, `MOSOO_DATABASE_QUERY_TIMEOUT_MS`): the server cancels a statement that runs
 * longer (`statement_timeout`, SQLSTATE 57014), and the client gives up on one the server does not
 * answer at all within this bound plus {@link QUERY_TIMEOUT_GRACE_MS} (`pg`'s `query_timeout`: a
 * frozen or silently gone server; the connection is then discarded). Either way the unit of work
 * answers `StoreBusyError` (`store.busy`, 503 with `Retry-After`) at once, not retried. So a request
 * waits for the store at most about: the acquire timeout (no free connection) or this bound + the
 * grace (a statement on a silent server), i.e. ≤ 6 s with the defaults.
 */
const DEFAULT_QUERY_TIMEOUT_MS = 5_000;
/** Added to the query bound for the client-side `query_timeout`, ms: a live server's own cancel (57014) comes first. */
const QUERY_TIMEOUT_GRACE_MS = 1_000;
/**
 * TCP keepalive of every pooled connection: the first probe after this many ms of silence (ms), so a
 * peer that vanished without a FIN (a failed-over host, a dropped network) is noticed by the kernel
 * instead of a socket that waits forever.
 */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;
/**
 * `idle_in_transaction_session_timeout` (ms): the server ends a session that sits inside a
 * transaction this long without a statement (a stuck unit of work), releasing its row locks; the
 * unit of work then fails with a connection loss (before COMMIT: retried; nothing was committed).
 */
const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

/** Options of {@link openPostgresStore}; every field optional. */
export interface PostgresStoreOptions {
  /** Most connections of the pool (default {@link DEFAULT_POOL_SIZE}; env `MOSOO_DATABASE_POOL_SIZE`). */
  poolSize?: number;
  /** See {@link DEFAULT_ACQUIRE_TIMEOUT_MS}. */
  acquireTimeoutMs?: number;
  /** See {@link DEFAULT_LOCK_TIMEOUT_MS}. */
  lockTimeoutMs?: number;
  /** See {@link DEFAULT_QUERY_TIMEOUT_MS} (env `MOSOO_DATABASE_QUERY_TIMEOUT_MS`). */
  queryTimeoutMs?: number;
  /** See {@link DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS}. */
  idleInTransactionTimeoutMs?: number;
  /**
   * Apply the drizzle-kit PostgreSQL migrations at open (default true; under an advisory lock, so N
   * instances starting at once migrate one after another). False: the schema is managed elsewhere
   * (a deploy step ran `migratePostgres`), the store opens without DDL rights.
   */
  migrate?: boolean;
  /** `application_name` of the connections, shown in `pg_stat_activity` (default `mosoo-api`). */
  applicationName?: string;
  /** Called when an idle pooled connection fails (the pool discards it). Default: a process warning. */
  onIdleConnectionError?: (err: Error) => void;
}

/** A pooled client with its unit-of-work handle (one per physical connection, kept as long as the connection lives). */
interface PooledConnection extends PgConnection {
  readonly client: pg.PoolClient;
  brokenBy: Error | undefined;
  readonly onError: (err: Error) => void;
}

/**
 * The PostgreSQL store (`MOSOO_DATABASE_URL`): any number of API instances on
 * one database. A `pg` pool; each unit of work takes ONE pooled connection for its whole life
 * (`PgUnitOfWork`: READ COMMITTED writes, REPEATABLE READ READ ONLY reads, whole-unit retry on
 * 40001/40P01 and on a connection lost before COMMIT, 55P03 (`lock_timeout`) and an exhausted pool as `store.busy`, `store.commit_unknown` when lost during
 * it). Concurrent units of work run on different connections, so one never sees another's
 * uncommitted rows. Queries go through `drizzle-orm/node-postgres` with the PostgreSQL schema
 * (`postgres-schema.ts`), which has the table and column names of `sqlite-schema.ts`.
 *
 * `pool` is the raw pool, for PostgreSQL-only code (tests, the bench floor); services never see it.
 */
export class PostgresStore extends PgUnitOfWork implements Store {
  readonly dialect = "postgres" as const;
  protected readonly source: PgConnectionSource;
  private readonly connections = new WeakMap<pg.PoolClient, PooledConnection>();
  private closed: Promise<void> | undefined;

  constructor(
    /** The connection pool (PostgreSQL-only code). */
    readonly pool: pg.Pool,
  ) {
    super();
    this.source = {
      probeBeforeCommit: false,
      acquire: () => this.acquire(),
      release: (conn, broken) => this.release(conn as PooledConnection, broken),
    };
  }

  /** Waits for the units of work in progress (new ones are refused with `store.closed`), then ends the pool. Idempotent. */
  async close(): Promise<void> {
    this.closed ??= this.beginClose().then(() => this.pool.end());
    return this.closed;
  }

  /** See `Store.schemaState`: one query on a pooled connection, bounded by the pool's timeouts. */
  async schemaState(): Promise<SchemaState> {
    return compareSchema(await newestPgMigrationMs(this.pool), PG_MIGRATIONS_FOLDER);
  }

  private async acquire(): Promise<PooledConnection> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      // The pool stayed full for acquireTimeoutMs ("timeout exceeded when trying to connect"), or a
      // new connection could not be opened in time / at all: the store is busy or away, nothing ran.
      // A timeout already spent the bound: answered at once, not retried.
      throw new StoreBusyError(false, { cause: err, waitedOut: /timeout/i.test((err as Error).message ?? "") });
    }
    let conn = this.connections.get(client);
    if (!conn) {
      conn = newConnection(client);
      this.connections.set(client, conn);
    }
    conn.brokenBy = undefined;
    // While a client is checked out the pool does not listen to its errors; without a listener a
    // server-side disconnect between two statements would be an uncaught 'error' event.
    client.on("error", conn.onError);
    return conn;
  }

  private release(conn: PooledConnection, broken: boolean): void {
    conn.client.removeListener("error", conn.onError);
    const bad = broken || conn.brokenBy !== undefined;
    if (bad) this.connections.delete(conn.client);
    conn.client.release(bad ? (conn.brokenBy ?? true) : undefined);
  }
}

/** The unit-of-work handle of one pooled client: its drizzle builder and its cache of prepared queries. */
function newConnection(client: pg.PoolClient): PooledConnection {
  // The one cast of this store: repositories are typed against the SQLite schema (store.port.ts);
  // the PostgreSQL builder has the same query API and `postgres-schema.ts` the same table and column names.
  const db = drizzle({ client, schema: pgSchema }) as unknown as QueryDb;
  const tables = pgSchema as unknown as StoreTables;
  const prepared = new Map<string, unknown>();
  const handle: StoreTx = {
    db,
    tables,
    pgRows: async (query) => (await (db as unknown as NodePgDatabase).execute(query)).rows,
    pgPrepared: async (name, text, values) => (await client.query({ name, text, values: values as unknown[] })).rows,
    prepared: <Q>(name: string, build: (db: QueryDb) => Q): Q => {
      let q = prepared.get(name) as Q | undefined;
      if (q === undefined) {
        q = build(db);
        prepared.set(name, q);
      }
      return q;
    },
  };
  const conn: PooledConnection = {
    client,
    handle,
    brokenBy: undefined,
    onError: (err: Error) => {
      conn.brokenBy = err;
    },
    query: async (text: string) => {
      const res = await client.query(text);
      return { command: res.command };
    },
  };
  return conn;
}

/**
 * Opens the PostgreSQL store at `url` (`postgres://user:password@host:port/database`): makes `pg`
 * parse int8 to JS numbers (`installPgTypeParsers`: bigint ms columns and `count(*)` come back as
 * numbers, as on SQLite), migrates unless `migrate: false` (`migratePostgres`, under an advisory
 * lock), opens a pool of `poolSize` connections with `lock_timeout`, `statement_timeout` and
 * `idle_in_transaction_session_timeout` set, a client-side `query_timeout`, TCP keepalive and a
 * connection timeout (the acquire timeout), and checks one connection. The caller must `close()` it.
 * @throws StoreSchemaNewerError (`store.schema_newer`) when a newer build migrated the database (with or without `migrate`);
 *   PgConnectTimeoutError (`store.connect_timeout`) when the migration's connection is not made in
 *   time; Error (the `pg` error) when the server is unreachable, the credentials are refused or a
 *   migration fails; nothing is left open then.
 */
export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
  installPgTypeParsers();
  if (opts.migrate ?? true) await migratePostgres(url);
  const queryTimeoutMs = opts.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
  const pool = new pg.Pool({
    connectionString: url,
    statement_timeout: queryTimeoutMs,
    query_timeout: queryTimeoutMs + QUERY_TIMEOUT_GRACE_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
    max: opts.poolSize ?? DEFAULT_POOL_SIZE,
    connectionTimeoutMillis: opts.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS,
    lock_timeout: opts.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    idle_in_transaction_session_timeout: opts.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    application_name: opts.applicationName ?? "mosoo-api",
  });
  pool.on(
    "error",
    opts.onIdleConnectionError ?? ((err: Error) => process.emitWarning(`PostgreSQL idle connection failed: ${err.message}`)),
  );
  try {
    await pool.query("SELECT 1");
    // Not migrated here (a deploy step or the API does it): still refuse a schema a newer build wrote.
    if (opts.migrate === false) await assertPgSchemaNotNewer(pool);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  return new PostgresStore(pool);
}
