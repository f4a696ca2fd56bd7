// Starts the API: opens the store, wires the runtime with sandboxed adapters, serves HTTP, runs the sweep, drains on close.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import type { Logger } from "pino";
import type { ApiConfig } from "./config/api-config.js";
import { openApiStore } from "./config/configured-store.js";
import { createHttpApp } from "./entry/http/app.js";
import { answerClientError } from "./entry/http/client-error.js";
import type { Store } from "./platform/db/store.port.js";
import { PgCommandWakeups } from "./platform/db/postgres/pg-command-wakeups.js";
import type { Clock } from "./platform/clock.js";
import { createRuntime, type Runtime } from "./composition-root.js";
import { resolveReconciliationSettings } from "./config/reconciliation-bindings.js";
import type { AdapterSource } from "@mosoo/effect-reconciliation/host";
import { Registry } from "prom-client";
import { adapterProcessBudget, createIsolatedAdapterHost } from "./modules/reconciliation/infrastructure/adapter-sandbox.host.js";
import { AdapterWorkerMetrics } from "./modules/reconciliation/infrastructure/reconciliation.metrics.js";
import { reportBindings } from "./modules/reconciliation/application/binding-report.service.js";

/**
 * The answer to every request that arrives once `close()` began (the drain): 503 `api.shutting_down`
 * with `Retry-After: 1` and `Connection: close`, so a client retries on another instance (or this one
 * restarted) and a load balancer's `/ready` probe sees 503 at once. Nothing is written.
 */
function shuttingDown(): Response {
  const body = {
    error: {
      code: "api.shutting_down",
      message: "this API instance is shutting down; retry (another instance, or this one once restarted)",
    },
  };
  return new Response(JSON.stringify(body), {
    status: 503,
    headers: { "content-type": "application/json", "retry-after": "1", connection: "close" },
  });
}

/** A running API: its base URL (`http://host:port`), the runtime, the store (SQLite or PostgreSQL, `store.dialect`), and `close()`. */
export interface RunningApi {
  url: string;
  runtime: Runtime;
  store: Store;
  /**
   * The drain (SIGTERM): refuses new requests at once ({@link shuttingDown}; `/ready` included), stops
   * accepting connections, ends long-polls, stops the sweep, lets in-flight requests finish for at most
   * `shutdownGraceMs` (ms, config) and then closes every connection (a request cut there never
   * committed half: each unit of work is one transaction), drains the adapter host, closes the store.
   */
  close(): Promise<void>;
}

/**
 * Opens and migrates the store (`openApiStore`: PostgreSQL at `MOSOO_DATABASE_URL` when set, else the
 * SQLite file `MOSOO_DB_FILE`), wires the runtime, serves HTTP on `config.host:config.port`
 * (0 = a free port) and starts the maintenance sweep. Every bound adapter runs in the isolated
 * adapter host (worker threads with a `MOSOO_ADAPTER_HEAP_MB` heap limit, terminated at the lookup
 * timeout; see {@link createIsolatedAdapterHost}): there is no in-process option here.
 * This host is the bindings' isolation swap point (`BindingInstantiator`): the worker loads each
 * binding's source (package names from the API's dependencies), builds and narrows it, and reports
 * its coverage and provenance (logged at startup, `reportBindings`). `builtIns` maps adapter ids to
 * adapter sources (default: the built-in adapters).
 * @throws ConfigError on an invalid bindings file, an unusable store path (`checkDbFilePath`; a file
 *   that is not a SQLite database), or a PostgreSQL store that cannot be opened or migrated (one line,
 *   the URL never echoed; see `openApiStore`); Error when the SQLite store cannot be migrated
 *   or the port cannot be bound.
 */
export async function startApi(
  config: ApiConfig,
  logger: Logger,
  opts: { clock?: Clock; sweep?: boolean; builtIns?: Readonly<Record<string, AdapterSource>> } = {},
): Promise<RunningApi> {
  const metricsRegistry = new Registry();
  const workerMetrics = new AdapterWorkerMetrics(metricsRegistry);
  const adapterHost = createIsolatedAdapterHost({
    heapMb: config.reconciliation.adapterHeapMb,
    cpuLimitMs: config.reconciliation.adapterCpuMs,
    ...adapterProcessBudget(config.reconciliation.concurrency),
    bindTimeoutMs: config.reconciliation.adapterLoadTimeoutMs,
    bindTimeoutSetting: "MOSOO_ADAPTER_LOAD_TIMEOUT_MS",
    logger: logger.child({ component: "adapter-host" }),
    onTermination: (adapterId, reason) => {
      workerMetrics.record(adapterId, reason);
      logger.warn({ adapterId, reason }, "adapter.worker_terminated");
    },
  });
  let reconciliation;
  let store: Store;
  try {
    reconciliation = await resolveReconciliationSettings(config, adapterHost, opts.builtIns ? { builtIns: opts.builtIns } : {});
    store = await openApiStore(config, {
      onIdleConnectionError: (err) =>
        logger.warn({ cause: { code: (err as { code?: unknown }).code, message: err.message } }, "store.connection_lost"),
    });
  } catch (err) {
    await adapterHost.close();
    throw err;
  }
  // Several instances on one PostgreSQL database: a command queued through one wakes the long-polls of
  // every other (LISTEN/NOTIFY, one listener connection per instance; see {@link PgCommandWakeups}). Listening
  // before serving, so no long-poll starts without it. SQLite: one process, in-process wake-ups.
  let wakeups: PgCommandWakeups | undefined;
  if (store.dialect === "postgres" && config.databaseUrl !== undefined) {
    wakeups = new PgCommandWakeups({ connectionString: config.databaseUrl, applicationName: "mosoo-command-wakeups" });
    try {
      await wakeups.start();
    } catch (err) {
      await adapterHost.close();
      await store.close();
      throw err;
    }
  }
  const runtime = createRuntime({
    store,
    ...(wakeups ? { wakeups } : {}),
    logger,
    heartbeatTtlMs: config.heartbeatTtlMs,
    sendDeadlineMs: config.sendDeadlineMs,
    repeatGuard: config.repeatGuard,
    driverUnconnectedTtlMs: config.auth.driverUnconnectedTtlMs,
    reconciliation,
    metricsRegistry,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  // Leases expire (see `recordInterruptedLookups` in interrupted-lookups.service.ts): only leases that EXPIRED are ended here (their lookups recorded
  // `lookup_interrupted`); a live one may belong to another API instance on the same store, and the
  // sweep ends it once it expired. Nothing is served yet, so this may wait for a lock as the migrations did.
  await runtime.reconciler.endExpiredLeases({ startup: true });
  await reportBindings(reconciliation, store, logger);
  if (reconciliation.enabled && reconciliation.bindings.size === 0) {
    logger.warn(
      "MOSOO_EFFECT_RECONCILIATION=on but no server is bound (MOSOO_RECONCILIATION_BINDINGS_FILE): every unknown effect keeps the baseline fence",
    );
  }
  // Readiness sees the adapter host from here (created above, closed only by `close()` below): its own internals are not probed.
  let adapterHostClosed = false;
  const app = createHttpApp(runtime, logger, { ...config.auth, adapterHostUp: () => !adapterHostClosed });
  if (config.auth.apiKeys.length === 0) logger.warn("no API keys (MOSOO_API_KEYS, MOSOO_API_KEYS_FILE): the run API refuses every request");
  if (!config.auth.driverEnrollmentToken && !config.auth.operators.configured)
    logger.warn("no MOSOO_DRIVER_ENROLLMENT_TOKEN (or operator credential): no Driver can register");
  if (config.auth.operators.configured) logger.info({ operators: config.auth.operators.names }, "operator credentials loaded");
  let draining = false; // set by close(): every new request is refused from then on
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve(
      { fetch: (req, env) => (draining ? shuttingDown() : app.fetch(req, env)), hostname: config.host, port: config.port },
      () => resolve(s),
    );
    s.once("error", reject);
    s.on("clientError", answerClientError);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host}:${port}`;
  if (opts.sweep !== false) runtime.sweep.start(config.sweepIntervalMs);
  logger.info(
    {
      url,
      store: store.dialect,
      ...(store.dialect === "sqlite" ? { dbFile: config.dbFile } : {}),
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
      draining = true;
      runtime.ctx.shutdown.abort(); // long-polls answer {command: null} now
      await runtime.sweep.stop();
      const http = server as Server;
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeIdleConnections();
      // Keep-alive Drivers reuse their sockets: after a grace period, cut whatever is still open.
      const force = setTimeout(() => http.closeAllConnections(), config.shutdownGraceMs);
      force.unref();
      await closed;
      clearTimeout(force);
      adapterHostClosed = true;
      await adapterHost.close(); // rejects the lookups still running in its workers
      // their outcomes are submitted after that: wait for every lookup under way, then commit what
      // waits for a group commit's window (else lost, and misrecorded lookup_interrupted at restart)
      await runtime.reconciler.drain();
      await wakeups?.close();
      await store.close();
    },
  };
}
