import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import type { Logger } from "pino";
import { ConfigError, type ApiConfig } from "./config/api-config.js";
import { checkDbFilePath } from "./config/startup-checks.js";
import { createHttpApp } from "./adapters/http/app.js";
import { openSqliteStore, type SqliteStore } from "./platform/db/sqlite/sqlite-store.js";
import type { Clock } from "./platform/clock.js";
import { createRuntime, type Runtime } from "./composition-root.js";
import { resolveReconciliationSettings } from "./config/reconciliation-bindings.js";
import type { AdapterSource } from "@mosoo/effect-reconciliation";
import { Registry } from "prom-client";
import { createIsolatedAdapterHost } from "./modules/reconciliation/infrastructure/isolated-adapter-host.js";
import { AdapterWorkerMetrics } from "./modules/reconciliation/infrastructure/reconciliation-metrics.js";
import { reportBindings } from "./modules/reconciliation/application/binding-report.js";

/** How long (ms) `close()` lets in-flight requests finish before it closes every connection. */
const SHUTDOWN_GRACE_MS = 3_000;

/** A running API: its base URL (`http://host:port`), the runtime, the store, and `close()`. */
export interface RunningApi {
  url: string;
  runtime: Runtime;
  store: SqliteStore;
  /** Stops the sweep, ends long-polls, lets in-flight requests finish (at most {@link SHUTDOWN_GRACE_MS}), closes the store. */
  close(): Promise<void>;
}

/**
 * Opens and migrates the store, wires the runtime, serves HTTP on `config.host:config.port`
 * (0 = a free port) and starts the maintenance sweep. Every bound adapter runs in the isolated
 * adapter host (worker threads with a `MOSOO_ADAPTER_HEAP_MB` heap limit, terminated at the lookup
 * timeout; docs/DESIGN.md §4 "Adapters are untrusted code"): there is no in-process option here.
 * This host is the bindings' isolation swap point (`BindingInstantiator`): the worker loads each
 * binding's source (package names from the API's dependencies), builds and narrows it, and reports
 * its coverage and provenance (logged at startup, `reportBindings`). `builtIns` maps adapter ids to
 * adapter sources (default: the built-in adapters).
 * @throws ConfigError on an invalid bindings file, `MOSOO_DATABASE_URL` set (not served by this build yet), or an unusable store path (`checkDbFilePath`; a file
 *   that is not a SQLite database); Error when the store cannot be migrated
 *   or the port cannot be bound.
 */
export async function startApi(
  config: ApiConfig,
  logger: Logger,
  opts: { clock?: Clock; sweep?: boolean; builtIns?: Readonly<Record<string, AdapterSource>> } = {},
): Promise<RunningApi> {
  // Fail closed: the PostgreSQL store (platform/db/postgres, store-factory.ts) needs the services on the async
  // store port; until this startup opens its store through `openStore`, a URL is refused rather than ignored.
  if (config.databaseUrl !== undefined) {
    throw new ConfigError("config.invalid: MOSOO_DATABASE_URL: this build serves only the SQLite store (MOSOO_DB_FILE); unset it");
  }
  checkDbFilePath(config.dbFile);
  const metricsRegistry = new Registry();
  const workerMetrics = new AdapterWorkerMetrics(metricsRegistry);
  const adapterHost = createIsolatedAdapterHost({
    heapMb: config.reconciliation.adapterHeapMb,
    maxThreads: config.reconciliation.concurrency,
    bindTimeoutMs: config.reconciliation.adapterLoadTimeoutMs,
    bindTimeoutSetting: "MOSOO_ADAPTER_LOAD_TIMEOUT_MS",
    logger: logger.child({ component: "adapter-host" }),
    onTermination: (adapterId, reason) => {
      workerMetrics.record(adapterId, reason);
      logger.warn({ adapterId, reason }, "adapter.worker_terminated");
    },
  });
  let reconciliation;
  let store: SqliteStore;
  try {
    reconciliation = await resolveReconciliationSettings(config, adapterHost, opts.builtIns ? { builtIns: opts.builtIns } : {});
    store = openSqliteStore(config.dbFile);
  } catch (err) {
    await adapterHost.close();
    const code = (err as { code?: unknown }).code;
    if (code === "SQLITE_NOTADB" || code === "SQLITE_CANTOPEN" || code === "SQLITE_READONLY") {
      throw new ConfigError(
        `config.invalid: MOSOO_DB_FILE: cannot open the store: ${(err as Error).message.split("\n")[0]} (${config.dbFile})`,
      );
    }
    throw err;
  }
  const runtime = createRuntime({
    store,
    logger,
    heartbeatTtlMs: config.heartbeatTtlMs,
    sendDeadlineMs: config.sendDeadlineMs,
    driverUnconnectedTtlMs: config.auth.driverUnconnectedTtlMs,
    reconciliation,
    metricsRegistry,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  // Leases expire (docs/DESIGN.md §11): only leases that EXPIRED are ended here (their lookups recorded
  // `lookup_interrupted`); a live one may belong to another API instance on the same store, and the
  // sweep ends it once it expired. Nothing is served yet, so this may wait for a lock as the migrations did.
  await runtime.reconciler.endExpiredLeases({ startup: true });
  await reportBindings(reconciliation, store, logger);
  if (reconciliation.enabled && reconciliation.bindings.size === 0) {
    logger.warn(
      "MOSOO_EFFECT_RECONCILIATION=on but no server is bound (MOSOO_RECONCILIATION_BINDINGS_FILE): every unknown effect keeps the baseline fence",
    );
  }
  const app = createHttpApp(runtime, logger, { operatorToken: config.operatorToken, ...config.auth });
  if (config.auth.apiKeys.length === 0) logger.warn("no API keys (MOSOO_API_KEYS, MOSOO_API_KEYS_FILE): the run API refuses every request");
  if (!config.auth.driverEnrollmentToken && !config.operatorToken)
    logger.warn("no MOSOO_DRIVER_ENROLLMENT_TOKEN (or MOSOO_OPERATOR_TOKEN): no Driver can register");
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, () => resolve(s));
    s.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host}:${port}`;
  if (opts.sweep !== false) runtime.sweep.start(config.sweepIntervalMs);
  logger.info(
    {
      url,
      dbFile: config.dbFile,
      reconciliation: reconciliation.enabled ? "on" : "off",
      boundServers: [...reconciliation.bindings.keys()],
    },
    "api.listening",
  );
  return {
    url,
    runtime,
    store,
    async close() {
      runtime.ctx.shutdown.abort(); // long-polls answer {command: null} now
      await runtime.sweep.stop();
      const http = server as Server;
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeIdleConnections();
      // Keep-alive Drivers reuse their sockets: after a grace period, cut whatever is still open.
      const force = setTimeout(() => http.closeAllConnections(), SHUTDOWN_GRACE_MS);
      force.unref();
      await closed;
      clearTimeout(force);
      await adapterHost.close(); // rejects the lookups still running in its workers
      // their outcomes are submitted after that: wait for every lookup under way, then commit what
      // waits for a group commit's window (else lost, and misrecorded lookup_interrupted at restart)
      await runtime.reconciler.drain();
      await store.close();
    },
  };
}
