// The operator actions as the CLI calls them: over HTTP to a running API, or in-process on the configured store.
import { existsSync } from "node:fs";
import pino from "pino";
import {
  callRoute,
  OPERATOR_ACTION_ROUTES,
  OPERATOR_ACTION_TABLE,
  OPERATOR_API,
  OperatorListQuerySchema,
  RouteCallError,
  UlidSchema,
  type OperatorActionAnswer,
  type OperatorActionName,
  type OperatorActionSent,
  type RouteInput,
  type RouteOutput,
} from "@mosoo/contracts";
import { retryWhenBusy, StoreBusyError } from "../../platform/db/store-busy.js";
import { checkDbFilePath } from "../../config/startup-checks.js";
import { openApiStore } from "../../config/configured-store.js";
import type { Store } from "../../platform/db/store.port.js";
import type { ApiConfig } from "../../config/api-config.js";
import { resolveReconciliationSettings } from "../../config/reconciliation-bindings.js";
import { adapterProcessBudget, createIsolatedAdapterHost } from "../../modules/reconciliation/infrastructure/adapter-sandbox.host.js";
import { isMosooSqliteStoreFile } from "../../platform/db/sqlite/sqlite-store-file.js";
import { createRuntime } from "../../composition-root.js";
import { UserFacingError } from "../../kernel/user-facing-error.js";
import { parseOrThrow } from "../http/http-errors.js";
import type { OperatorIdentity } from "../../modules/operator/domain/operator-credential.js";
import type { OperatorActionHandlers } from "../../modules/operator/application/operator.service.js";

/** A refusal from the operator service, wherever it ran: its stable `code` and a one-line `message`. */
export class OperatorClientError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Routes = typeof OPERATOR_API;
/** What the CLI sends for route `N` of `OPERATOR_API` (the request schemas' input types; checked by the API or, in-process, here). */
type Sent<N extends keyof Routes, K extends "query" | "body"> = NonNullable<RouteInput<Routes[N]>[K]>;
/** The answer of route `N` of `OPERATOR_API` (its response schema's type). */
type Answer<N extends keyof Routes> = Promise<RouteOutput<Routes[N]>>;

/**
 * The operator surface as the CLI calls it, over HTTP or in-process, typed by
 * the route table (`OPERATOR_API` of `@mosoo/contracts`): the two reads, and every action of
 * `OPERATOR_ACTION_TABLE` through one generic `act(name, effectId, body)` whose body and answer
 * types are the action's. Bodies and queries are validated by the same zod schemas either way.
 * Every method rejects with {@link OperatorClientError} (`code`, `message`).
 */
export interface OperatorClient {
  list(query: Sent<"operatorList", "query">): Answer<"operatorList">;
  show(effectId: string): Answer<"operatorShow">;
  act<N extends OperatorActionName>(name: N, effectId: string, body: OperatorActionSent<N>): Promise<OperatorActionAnswer<N>>;
  close(): Promise<void>;
}

/**
 * The operator routes of a running API, called with the route table's typed client (`callRoute`:
 * path from the entry, answer checked against its response schema) with `Authorization: Bearer
 * <token>`; each request times out after 30 000 ms.
 * @throws (from each method) OperatorClientError with the API's error code, `api.unreachable`, or `api.invalid_answer`.
 */
export function httpOperatorClient(apiUrl: string, token: string): OperatorClient {
  const options = { baseUrl: apiUrl, headers: { authorization: `Bearer ${token}` }, timeoutMs: 30_000 };
  const typed = async <T>(sent: Promise<T>): Promise<T> => {
    try {
      return await sent;
    } catch (err) {
      if (err instanceof RouteCallError) throw new OperatorClientError(err.code, err.message);
      throw err;
    }
  };
  const call = <N extends keyof Routes>(name: N, input: RouteInput<Routes[N]>): Answer<N> =>
    typed(callRoute(OPERATOR_API[name], input, options));
  return {
    list: (query) => call("operatorList", { query }),
    show: (effectId) => call("operatorShow", { params: { effectId } }),
    act: (name, effectId, body) =>
      typed(callRoute(OPERATOR_ACTION_ROUTES[name], { params: { effectId }, body } as never, options)) as Promise<
        OperatorActionAnswer<typeof name>
      >,
    close: async () => {},
  };
}

/**
 * Refuses a file that is not a Mosoo store (no applied migrations and no effect table), so that
 * `--db` pointed at the wrong SQLite file (e.g. the provider's) never turns it into one.
 * @throws OperatorClientError `store.not_mosoo`.
 */
function assertMosooStore(file: string): void {
  if (!isMosooSqliteStoreFile(file))
    throw new OperatorClientError(
      "store.not_mosoo",
      `${file} is not a Mosoo store (no external_tool_effects table); pass the API's MOSOO_DB_FILE`,
    );
}

/**
 * Refuses a PostgreSQL database without the Mosoo schema (the operator CLI never migrates: a wrong
 * `--database-url` must not grow Mosoo tables). Closes `store` before it throws.
 * @throws OperatorClientError `store.not_mosoo`.
 */
async function assertMosooDatabase(store: Store): Promise<void> {
  try {
    await store.read(async (tx) => tx.db.select({ id: tx.tables.externalToolEffects.id }).from(tx.tables.externalToolEffects).limit(1));
  } catch {
    await store.close();
    throw new OperatorClientError(
      "store.not_mosoo",
      "the database at --database-url is not a Mosoo store (no external_tool_effects table); pass the API's MOSOO_DATABASE_URL",
    );
  }
}

/**
 * The operator service in this process, on the store the configuration names (`openApiStore`): the
 * SQLite file `config.dbFile` (which must exist), or the PostgreSQL database `config.databaseUrl`
 * (already migrated by the API; this client does not migrate), through the async store port (the service sees only `Store`),
 * with the reconciliation settings of `config` (the same environment variables as the API, so the
 * same flag and adapter bindings). Safe next to a running API on the same file (every write is a
 * `BEGIN IMMEDIATE` compare-and-set); a queued compensation is picked up at the Driver's next poll.
 * Reads (`list`, `show`) need no credential (whoever opens the store can read it); an action
 * (`act`: each of `OPERATOR_ACTION_TABLE`) is taken as the operator credential of `token`, checked
 * against the credentials `config` names (`MOSOO_OPERATOR_TOKEN`, `MOSOO_OPERATOR_CREDENTIALS_FILE`,
 * the API's variables), whose name is the audit actor and whose scopes apply as over HTTP.
 * Adapters run in the isolated adapter host (worker threads), as in the API; `close()` ends it.
 * @throws ConfigError `config.invalid: MOSOO_DB_FILE: ...` when the path is not a usable store file
 *   (`checkDbFilePath`: a FIFO, a directory, under /proc, not SQLite); `config.invalid: MOSOO_DATABASE_URL: ...`
 *   when the PostgreSQL server cannot be reached or refuses (the URL never echoed);
 *   OperatorClientError `store.not_found` when the file does not exist, `store.not_mosoo` when it
 *   is not a Mosoo store, `auth.invalid_token` when `token` matches no configured operator credential;
 *   from each action without `token` `auth.missing_token`; the service's codes (and `request.invalid`
 *   for a malformed id) from each method.
 */
export async function localOperatorClient(config: ApiConfig, token?: string): Promise<OperatorClient> {
  let by: OperatorIdentity | undefined;
  if (token !== undefined) {
    by = config.auth.operators.identify(token);
    if (!by)
      throw new OperatorClientError(
        "auth.invalid_token",
        "the token matches no operator credential of this environment (MOSOO_OPERATOR_TOKEN, MOSOO_OPERATOR_CREDENTIALS_FILE)",
      );
  }
  const operatorOf = (): OperatorIdentity => {
    if (by) return by;
    throw new OperatorClientError(
      "auth.missing_token",
      "an action is taken as an operator credential: pass --token (or set MOSOO_OPERATOR_TOKEN) with one configured in this environment",
    );
  };
  if (config.databaseUrl === undefined) {
    if (!existsSync(config.dbFile)) throw new OperatorClientError("store.not_found", `no database at ${config.dbFile}`);
    checkDbFilePath(config.dbFile); // a FIFO, a directory, /proc...: one line, never a hang
    assertMosooStore(config.dbFile);
  }
  const host = createIsolatedAdapterHost({
    heapMb: config.reconciliation.adapterHeapMb,
    cpuLimitMs: config.reconciliation.adapterCpuMs,
    ...adapterProcessBudget(config.reconciliation.concurrency),
    bindTimeoutMs: config.reconciliation.adapterLoadTimeoutMs,
    bindTimeoutSetting: "MOSOO_ADAPTER_LOAD_TIMEOUT_MS",
    logger: pino({ level: "silent" }),
  });
  let settings;
  try {
    settings = await resolveReconciliationSettings(config, host);
  } catch (err) {
    await host.close();
    throw err;
  }
  let store: Store;
  try {
    store = await openApiStore(config, { migrate: false });
    if (store.dialect === "postgres") await assertMosooDatabase(store);
  } catch (err) {
    await host.close();
    throw err;
  }
  const runtime = createRuntime({
    store,
    logger: pino({ level: "silent" }),
    heartbeatTtlMs: config.heartbeatTtlMs,
    reconciliation: settings,
  });
  const op = runtime.operator;
  const handlers: OperatorActionHandlers = op;
  const wrap = async <T>(fn: () => T | Promise<T>): Promise<T> => {
    try {
      // A store locked by the API (or a backup) is waited for briefly and asynchronously, then refused `store.busy`.
      return await retryWhenBusy(fn);
    } catch (err) {
      if (err instanceof UserFacingError || err instanceof StoreBusyError) throw new OperatorClientError(err.code, err.message);
      throw err;
    }
  };
  return {
    list: (query) => wrap(() => op.list(parseOrThrow(OperatorListQuerySchema, query))),
    show: (id) => wrap(() => op.show(parseOrThrow(UlidSchema, id))),
    act: (name, id, body) => {
      // called by name: the body is parsed with the action's own schema, so it is the request its handler takes
      const handle = handlers[name] as (effectId: string, req: unknown, by: OperatorIdentity) => Promise<OperatorActionAnswer<typeof name>>;
      return wrap(() =>
        handle.call(handlers, parseOrThrow(UlidSchema, id), parseOrThrow(OPERATOR_ACTION_TABLE[name].body, body), operatorOf()),
      );
    },
    close: async () => {
      await host.close();
      await store.close();
    },
  };
}
