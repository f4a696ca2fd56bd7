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

/**
 * Creates an empty database on the server at `adminUrl` (a role allowed to `CREATE DATABASE`), so
 * each test file works in its own database and files stay independent. `prefix` is reduced to
 * `[a-z0-9_]` (at most 20 characters; default `t`).
 * @throws Error (the `pg` error) when the server is unreachable or refuses.
 */
export async function createTestDatabase(adminUrl: string, prefix = "t"): Promise<TestDatabase> {
  const clean =
    prefix
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, "_")
      .slice(0, 20) || "t";
  const name = `${clean}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await withAdmin(adminUrl, (client) => client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`));
  let dropped: Promise<void> | undefined;
  return {
    name,
    url: withDatabase(adminUrl, name),
    drop: () => {
      dropped ??= withAdmin(adminUrl, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`),
      ).then(() => undefined);
      return dropped;
    },
  };
}

/** Runs `fn` on a fresh connection to `adminUrl`, closed afterwards. */
async function withAdmin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: "mosoo-test-postgres" });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
