// Opens the store the API's configuration names (PostgreSQL or SQLite), and words its failures without leaking the database password.
import type { ApiConfig } from "./api-config.js";
import { ApiEnvSchema } from "@mosoo/contracts";
import { ConfigError } from "./api-config.js";
import { checkDbFilePath } from "./startup-checks.js";
import { openStore, storeConfigFrom } from "../platform/db/store-factory.js";
import type { Store } from "../platform/db/store.port.js";
import { StoreSchemaBehindError, StoreSchemaNewerError } from "../platform/db/schema-version.js";

/** SQLite open failures that are the operator's store path, not a defect (better-sqlite3 error codes). */
const SQLITE_PATH_CODES = new Set(["SQLITE_NOTADB", "SQLITE_CANTOPEN", "SQLITE_READONLY"]);

/**
 * `text` with the URL `url`, the user-info of any URL in it (`scheme://user:password@` → `scheme://***@`)
 * and the URL's password as a whole token replaced by `***`: a driver message must never echo a
 * credential. The password is replaced only where it stands alone (not inside a
 * longer word), so a short password does not garble the server's message ("authentication" stays
 * whole for the password `e`) nor give itself away by where the stars land. Pure.
 */
export function redactDatabaseUrl(text: string, url: string): string {
  let out = (url === "" ? text : text.split(url).join("***")).replace(/:\/\/[^\s/@]*@/g, "://***@");
  try {
    const password = decodeURIComponent(new URL(url).password);
    if (password.length > 0) {
      const escaped = password.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      out = out.replace(new RegExp(`(?<![\\p{L}\\p{N}_])${escaped}(?![\\p{L}\\p{N}_])`, "gu"), "***");
    }
  } catch {
    // not parseable: the config contract already refused it; nothing more to hide
  }
  return out;
}

/**
 * Opens (and migrates) the store the API's configuration names (`storeConfigFrom`):
 * the PostgreSQL database at `MOSOO_DATABASE_URL` (pool `MOSOO_DATABASE_POOL_SIZE`) when it is set,
 * else the embedded SQLite file `MOSOO_DB_FILE` (checked first with `checkDbFilePath`). The API startup
 * and the operator CLI (`--db` / `--database-url`) both open their store here. `migrate: false` skips the
 * migrations (the operator CLI: it must not create a schema in a wrong database, nor change the schema under an API
 * of the previous build; a SQLite file not at this build's schema is then refused, `store.schema_behind`);
 * `onIdleConnectionError` receives a pooled PostgreSQL connection's failure while idle (the API logs it). The caller must `close()` it.
 * @throws ConfigError `config.invalid: MOSOO_DB_FILE: ...` for an unusable SQLite path (a FIFO, a
 *   directory, not a SQLite database, read-only, or migrated by a newer build: `store.schema_newer`);
 *   `config.invalid: MOSOO_DATABASE_URL: cannot open the
 *   PostgreSQL store: <first line of the driver's error>` when the server is unreachable, refuses the
 *   credentials or the database, or a migration fails; the URL and its password are never echoed.
 *   Other errors (a failed SQLite migration) are rethrown unchanged.
 */
export async function openApiStore(
  config: Pick<ApiConfig, "dbFile" | "databaseUrl" | "databasePoolSize" | "databaseQueryTimeoutMs">,
  opts: { migrate?: boolean; onIdleConnectionError?: (err: Error) => void } = {},
): Promise<Store> {
  const resolved = storeConfigFrom(config);
  const storeConfig =
    resolved.kind === "postgres"
      ? {
          ...resolved,
          ...(opts.migrate === false ? { migrate: false } : {}),
          ...(opts.onIdleConnectionError ? { onIdleConnectionError: opts.onIdleConnectionError } : {}),
        }
      : { ...resolved, ...(opts.migrate === false ? { migrate: false } : {}) };
  if (storeConfig.kind === "sqlite") {
    checkDbFilePath(storeConfig.file);
    try {
      return await openStore(storeConfig);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (err instanceof StoreSchemaNewerError || err instanceof StoreSchemaBehindError)
        throw new ConfigError(`config.invalid: MOSOO_DB_FILE: ${err.message} (${storeConfig.file})`);
      if (typeof code === "string" && SQLITE_PATH_CODES.has(code)) {
        throw new ConfigError(
          `config.invalid: MOSOO_DB_FILE: cannot open the store: ${(err as Error).message.split("\n")[0]} (${storeConfig.file})`,
        );
      }
      throw err;
    }
  }
  try {
    return await openStore(storeConfig);
  } catch (err) {
    throw new ConfigError(
      `config.invalid: MOSOO_DATABASE_URL: cannot open the PostgreSQL store: ${storeOpenFailureLine(err, storeConfig.url)}`,
      {
        cause: err,
      },
    );
  }
}

/**
 * Why `url` is not a usable PostgreSQL URL under the `MOSOO_DATABASE_URL` rules of the env contract
 * (`postgres://` or `postgresql://`, parseable, port 1–65535, a known `sslmode`; an empty string is
 * refused too), or undefined when it is one. The message never contains the URL. Pure. Used by the
 * programs that take a `--database-url` flag (`verify:model`, the bench) to refuse it in one line.
 */
export function databaseUrlProblem(url: string): string | undefined {
  if (url.trim() === "") return "is empty";
  const parsed = ApiEnvSchema.shape.MOSOO_DATABASE_URL.safeParse(url);
  return parsed.success ? undefined : (parsed.error.issues[0]?.message ?? "is not a PostgreSQL URL");
}

/**
 * One line saying why the PostgreSQL server at `url` could not be opened or used: the error's first
 * line, with its `code` (a SQLSTATE, `ECONNREFUSED`, `store.connect_timeout`) when the line lacks it,
 * the URL and its password redacted ({@link redactDatabaseUrl}). Pure.
 */
export function storeOpenFailureLine(err: unknown, url: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown }).code;
  const detail = redactDatabaseUrl(message.split("\n")[0] || String(code ?? "unknown error"), url);
  return typeof code === "string" && !detail.includes(code) ? `${detail} (${code})` : detail;
}
