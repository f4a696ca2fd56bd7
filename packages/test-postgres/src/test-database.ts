// Creates a fresh, independent database per test file or scenario on a shared PostgreSQL server.
import pg from "pg";

/** A database created for one test file (or one scenario) on a shared server. */
export interface TestDatabase {
  /** Its name: `<prefix>_<time>_<random>`, lowercase, at most 63 bytes. */
  name: string;
  /** The server URL with this database in its path. */
  url: string;
  /** Drops it (`WITH (FORCE)`: open connections are terminated). Idempotent. */
  drop(): Promise<void>;
}

/** `url` with its database (the path) replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

/** How long (ms) an admin connection ({@link createTestDatabase}, its `drop()`) waits to be made by default. */
const ADMIN_CONNECT_TIMEOUT_MS = 10_000;

/** Options of {@link createTestDatabase}. */
export interface CreateTestDatabaseOptions {
  /** How long (ms) each admin connection may take to be made (pg's `connectionTimeoutMillis`); default 10 000. */
  connectTimeoutMs?: number;
}

/**
 * Creates an empty database on the server at `adminUrl` (a role allowed to `CREATE DATABASE`), so
 * each test file works in its own database and files stay independent. `prefix` is reduced to
 * `[a-z0-9_]` (at most 20 characters; default `t`).
 * @throws Error with `code` `test_postgres.connect_timeout` when the admin connection is not made
 *   within `connectTimeoutMs` (a server that accepts TCP but never answers); Error (the `pg` error)
 *   when the server is unreachable or refuses.
 */
export async function createTestDatabase(adminUrl: string, prefix = "t", options: CreateTestDatabaseOptions = {}): Promise<TestDatabase> {
  const timeoutMs = options.connectTimeoutMs ?? ADMIN_CONNECT_TIMEOUT_MS;
  const clean =
    prefix
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, "_")
      .slice(0, 20) || "t";
  const name = `${clean}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await withAdmin(adminUrl, timeoutMs, (client) => client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`));
  let dropped: Promise<void> | undefined;
  return {
    name,
    url: withDatabase(adminUrl, name),
    drop: () => {
      dropped ??= withAdmin(adminUrl, timeoutMs, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`),
      ).then(() => undefined);
      return dropped;
    },
  };
}

/**
 * Runs `fn` on a fresh connection to `adminUrl` (made within `timeoutMs`), closed afterwards.
 * @throws Error `test_postgres.connect_timeout` when the connection is not made in time.
 */
async function withAdmin<T>(adminUrl: string, timeoutMs: number, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: "mosoo-test-postgres", connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
  } catch (err) {
    // pg (8.x) fails a connect whose `connectionTimeoutMillis` expired with exactly this message.
    if (!(err instanceof Error) || err.message !== "timeout expired") throw err;
    const u = new URL(adminUrl);
    throw Object.assign(
      new Error(`test_postgres.connect_timeout: no connection to ${u.hostname}:${u.port}${u.pathname} within ${timeoutMs} ms`, {
        cause: err,
      }),
      { code: "test_postgres.connect_timeout" },
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
