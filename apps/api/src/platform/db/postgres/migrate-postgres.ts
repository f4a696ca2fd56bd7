// Migrates and opens a PostgreSQL database: one migrator at a time under an advisory lock, bigint parsing, schema-too-new refusal.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import * as schema from "./postgres-schema.js";
import { assertSchemaNotNewer } from "../schema-version.js";

/** The folder of drizzle-kit migrations for the PostgreSQL dialect (`apps/api/drizzle-pg`, config `drizzle.pg.config.ts`). */
export const PG_MIGRATIONS_FOLDER = join(dirname(fileURLToPath(import.meta.url)), "../../../../drizzle-pg");

/**
 * The session-level advisory lock (a 64-bit key, `pg_advisory_lock`) held while migrating, so N API
 * instances starting at once on one database migrate one after another: the first applies the
 * migrations, the others then find nothing to do.
 */
const MIGRATION_ADVISORY_LOCK_KEY = "7236837504215040012";

/** Parses PostgreSQL `int8` text to a JS number, refusing (RangeError, which fails the query) a value a number cannot hold exactly. */
function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${value} is outside the exact range of a JS number`);
  return n;
}

/**
 * Makes `pg` parse `int8` (`bigint` columns, and what `count(*)` and `max(<bigint>)` return) to a JS
 * `number` instead of its default string, so raw `sql` reads give the same shapes as on SQLite. It
 * has to be `pg`'s process-wide parser table: drizzle's node-postgres session passes its own per-query
 * `types` that fall back to that table, so a pool-level `types` option would never be consulted.
 * A value outside ±(2^53 − 1) fails the query with a `RangeError` instead of silently losing digits
 * (no column of this schema holds one: times are ms, good until the year 285616). `numeric` (what
 * `sum(<bigint>)` returns) stays a string: cast it (`::bigint`) or use drizzle's `.mapWith(Number)`.
 * Idempotent; called by {@link migratePostgres} and {@link openPostgres}.
 */
export function installPgTypeParsers(): void {
  pg.types.setTypeParser(pg.types.builtins.INT8, parseInt8);
}

/** A drizzle handle on PostgreSQL typed with the PostgreSQL schema (`postgres-schema.ts`). */
export type PgDb = NodePgDatabase<typeof schema>;

/** How long (ms) {@link migratePostgres} waits for its connection (TCP, TLS, startup and authentication) by default. */
const MIGRATION_CONNECT_TIMEOUT_MS = 10_000;

/**
 * {@link migratePostgres} got no connection within its connect timeout (a server that accepts TCP but
 * never answers, a firewall dropping packets, a host that is down). Code `store.connect_timeout`;
 * `target` is `host:port/database` (never the credentials), `timeoutMs` the timeout that expired.
 */
export class PgConnectTimeoutError extends Error {
  override readonly name = "PgConnectTimeoutError";
  readonly code = "store.connect_timeout";
  constructor(
    readonly target: string,
    readonly timeoutMs: number,
    options?: ErrorOptions,
  ) {
    super(`store.connect_timeout: no PostgreSQL connection to ${target} within ${timeoutMs} ms`, options);
  }
}

/** `host:port/database` of a connection string, without user or password (for error messages). */
function describeTarget(connectionString: string): string {
  try {
    const u = new URL(connectionString);
    return `${u.hostname}:${u.port || "5432"}${u.pathname}`;
  } catch {
    return "(unparsable connection string)";
  }
}

/** Options of {@link migratePostgres}. */
export interface MigratePostgresOptions {
  /** How long (ms) to wait for the connection; default {@link MIGRATION_CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number;
}

/**
 * Applies every migration of {@link PG_MIGRATIONS_FOLDER} to the database at `connectionString`
 * (drizzle's node-postgres migrator: each pending migration in one transaction, recorded in
 * `drizzle.__drizzle_migrations`), on one dedicated connection that holds
 * {@link MIGRATION_ADVISORY_LOCK_KEY} throughout (released when the connection closes, even on a crash).
 * The connection must be made within `connectTimeoutMs` (pg's `connectionTimeoutMillis`).
 * Idempotent: a database already at the newest migration is left as it is.
 * @throws PgConnectTimeoutError (`store.connect_timeout`) when no connection was made in time; Error (the
 *   `pg` error) when the server refuses the connection or the credentials, or a migration fails (nothing of that migration is kept);
 *   `StoreSchemaNewerError` (`store.schema_newer`) when a newer build migrated the database.
 */
export async function migratePostgres(connectionString: string, options: MigratePostgresOptions = {}): Promise<void> {
  installPgTypeParsers();
  const timeoutMs = options.connectTimeoutMs ?? MIGRATION_CONNECT_TIMEOUT_MS;
  const client = new pg.Client({ connectionString, application_name: "mosoo-migrate", connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
  } catch (err) {
    // pg (8.x) fails a connect whose `connectionTimeoutMillis` expired with exactly this message.
    if (err instanceof Error && err.message === "timeout expired")
      throw new PgConnectTimeoutError(describeTarget(connectionString), timeoutMs, { cause: err });
    throw err;
  }
  try {
    await client.query("SELECT pg_advisory_lock($1::bigint)", [MIGRATION_ADVISORY_LOCK_KEY]);
    await migrate(drizzle({ client, schema }), { migrationsFolder: PG_MIGRATIONS_FOLDER });
    await assertPgSchemaNotNewer(client);
  } finally {
    await client.end();
  }
}

/** Options of {@link openPostgres}. */
export interface OpenPostgresOptions {
  /** Most connections the pool opens (default 10). Each API instance holds at most this many. */
  maxConnections?: number;
  /** `application_name` of the connections (shows in `pg_stat_activity`; default `mosoo-api`). */
  applicationName?: string;
  /**
   * Called when an idle pooled connection fails (the server restarted, the network dropped): the pool
   * discards it and opens a new one on demand. Without a listener `pg` would crash the process.
   * Default: a process warning.
   */
  onIdleConnectionError?: (err: Error) => void;
}

/** An open PostgreSQL store: the drizzle handle, its pool, and `close()` (ends every connection). */
export interface PostgresHandle {
  db: PgDb;
  pool: pg.Pool;
  close(): Promise<void>;
}

/**
 * Migrates ({@link migratePostgres}) and opens a connection pool on `connectionString`
 * (`postgres://user:password@host:port/database`), with {@link installPgTypeParsers}. The caller owns the
 * handle and must `close()` it. Isolation is the server's default (READ COMMITTED) unless a transaction asks for more.
 * @throws Error (the `pg` error) when migrating fails; nothing is left open then.
 */
export async function openPostgres(connectionString: string, options: OpenPostgresOptions = {}): Promise<PostgresHandle> {
  await migratePostgres(connectionString);
  const pool = new pg.Pool({
    connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName ?? "mosoo-api",
  });
  const onIdleError =
    options.onIdleConnectionError ?? ((err: Error) => process.emitWarning(`PostgreSQL idle connection failed: ${err.message}`));
  pool.on("error", onIdleError);
  const db = drizzle({ client: pool, schema });
  return { db, pool, close: () => pool.end() };
}

/**
 * Refuses a database a newer build migrated: reads the newest migration time drizzle recorded
 * (`drizzle.__drizzle_migrations.created_at`, ms; none when that table does not exist yet) through
 * `db` (a client or a pool) and compares it with this build's {@link PG_MIGRATIONS_FOLDER}.
 * @throws StoreSchemaNewerError (`store.schema_newer`); the `pg` error when the query fails.
 */
export async function assertPgSchemaNotNewer(db: Pick<pg.ClientBase, "query">): Promise<void> {
  assertSchemaNotNewer(await newestPgMigrationMs(db), PG_MIGRATIONS_FOLDER);
}

/** The SQL that reads the newest applied drizzle migration (ms as text; NULL when none or no migration table). */
export const NEWEST_PG_MIGRATION_SQL =
  "SELECT CASE WHEN to_regclass('drizzle.__drizzle_migrations') IS NULL THEN NULL ELSE (SELECT max(created_at)::text FROM drizzle.__drizzle_migrations) END AS ms";

/** The newest applied migration of `db` (ms since the Unix epoch), null when none. @throws the `pg` error when the query fails. */
export async function newestPgMigrationMs(db: Pick<pg.ClientBase, "query">): Promise<number | null> {
  const applied = await db.query<{ ms: string | null }>(NEWEST_PG_MIGRATION_SQL);
  const ms = applied.rows[0]?.ms;
  return ms == null ? null : Number(ms);
}
