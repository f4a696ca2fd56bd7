// Chooses and opens the store the settings name: PostgreSQL when a database URL is set, else the embedded SQLite file.
import type { Store } from "./store.port.js";
import { openSqliteStore } from "./sqlite/sqlite-store.js";
import { openPostgresStore } from "./postgres/postgres-store.js";

/**
 * Which store a program opens (docs/DESIGN.md §11):
 * - `sqlite` (the default, no set-up): the embedded store in `file` (`":memory:"` for tests); one API process.
 * - `postgres`: the database at `url`; any number of API instances. `poolSize` connections per
 *   process (default 10, see `DEFAULT_POOL_SIZE`); `migrate: false` skips the migrations at open
 *   (the schema is managed by a deploy step).
 */
export type StoreConfig =
  | {
      kind: "sqlite";
      file: string;
      /** false: open without migrating, refusing a file not at this build's schema (see `SqliteStoreOptions.migrate`). */
      migrate?: boolean | undefined;
    }
  | {
      kind: "postgres";
      url: string;
      poolSize?: number | undefined;
      /** The query bound, ms (`MOSOO_DATABASE_QUERY_TIMEOUT_MS`; default `DEFAULT_QUERY_TIMEOUT_MS`, 5 000). */
      queryTimeoutMs?: number | undefined;
      migrate?: boolean | undefined;
      /** Called when an idle pooled connection fails (the server restarted, the network dropped); default: a process warning. */
      onIdleConnectionError?: ((err: Error) => void) | undefined;
    };

/** The settings {@link storeConfigFrom} reads: the parsed `MOSOO_DB_FILE`, `MOSOO_DATABASE_URL`, `MOSOO_DATABASE_POOL_SIZE` and `MOSOO_DATABASE_QUERY_TIMEOUT_MS`. */
export interface StoreSettings {
  dbFile: string;
  databaseUrl?: string | undefined;
  databasePoolSize?: number | undefined;
  databaseQueryTimeoutMs?: number | undefined;
}

/**
 * The store the settings ask for: PostgreSQL when `databaseUrl` (`MOSOO_DATABASE_URL`) is set,
 * otherwise the SQLite file `dbFile` (`MOSOO_DB_FILE`). The API startup and the operator CLI
 * (`--db <file>` / `--database-url <url>`) both resolve their store here.
 */
export function storeConfigFrom(settings: StoreSettings): StoreConfig {
  if (settings.databaseUrl !== undefined)
    return {
      kind: "postgres",
      url: settings.databaseUrl,
      poolSize: settings.databasePoolSize,
      queryTimeoutMs: settings.databaseQueryTimeoutMs,
    };
  return { kind: "sqlite", file: settings.dbFile };
}

/**
 * Opens (and migrates) the store `config` names, as the port's `Store`; the caller must `close()` it.
 * @throws Error on SQLite as `openSqliteStore` (`SQLITE_NOTADB`, `SQLITE_CANTOPEN`, `SQLITE_READONLY`
 *   codes, a failed migration); on PostgreSQL as `openPostgresStore` (the `pg` error: server
 *   unreachable, credentials refused, a failed migration). Nothing is left open when it throws.
 */
export async function openStore(config: StoreConfig): Promise<Store> {
  if (config.kind === "sqlite") return openSqliteStore(config.file, config.migrate === false ? { migrate: false } : {});
  return openPostgresStore(config.url, {
    ...(config.poolSize !== undefined ? { poolSize: config.poolSize } : {}),
    ...(config.queryTimeoutMs !== undefined ? { queryTimeoutMs: config.queryTimeoutMs } : {}),
    ...(config.migrate !== undefined ? { migrate: config.migrate } : {}),
    ...(config.onIdleConnectionError !== undefined ? { onIdleConnectionError: config.onIdleConnectionError } : {}),
  });
}
