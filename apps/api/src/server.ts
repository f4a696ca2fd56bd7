import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import type { Logger } from "pino";
import type { ApiConfig } from "./config/api-config.js";
import { createHttpApp } from "./adapters/http/app.js";
import { openStore, type Store } from "./platform/db/database.js";
import type { Clock } from "./platform/clock.js";
import { createRuntime, type Runtime } from "./modules/runtime/application/runtime.js";
import { createBuiltInAdapterRegistry } from "./adapters/reconciliation/builtin-adapters.js";
import { resolveReconciliationSettings, type BindingInstantiator } from "./config/reconciliation-bindings.js";
import type { AdapterRegistry } from "@mosoo/effect-reconciliation";
import { reportBindings } from "./modules/reconciliation/application/binding-report.js";

/** How long (ms) `close()` lets in-flight requests finish before it closes every connection. */
export const SHUTDOWN_GRACE_MS = 3_000;

/** A running API: its base URL (`http://host:port`), the runtime, the store, and `close()`. */
export interface RunningApi {
  url: string;
  runtime: Runtime;
  store: Store;
  /** Stops the sweep, ends long-polls, lets in-flight requests finish (at most {@link SHUTDOWN_GRACE_MS}), closes the store. */
  close(): Promise<void>;
}

/**
 * Opens and migrates the store, wires the runtime, serves HTTP on `config.host:config.port`
 * (0 = a free port) and starts the maintenance sweep. Reconciliation bindings are resolved from
 * `registry` (adapters registered in code, closed for registration from then on), the built-in
 * sources and installed packages; `instantiate` builds each bound adapter from its source (default
 * in this process; the isolation swap point, see `BindingInstantiator`).
 * @throws ConfigError on an invalid bindings file; Error when the store cannot be opened/migrated
 *   or the port cannot be bound.
 */
export async function startApi(
  config: ApiConfig,
  logger: Logger,
  opts: { clock?: Clock; sweep?: boolean; registry?: AdapterRegistry; instantiate?: BindingInstantiator } = {},
): Promise<RunningApi> {
  const reconciliation = await resolveReconciliationSettings(config, {
    registry: opts.registry ?? createBuiltInAdapterRegistry(),
    ...(opts.instantiate ? { instantiate: opts.instantiate } : {}),
  });
  const store = openStore(config.dbFile);
  const runtime = createRuntime({
    db: store.db,
    logger,
    heartbeatTtlMs: config.heartbeatTtlMs,
    reconciliation,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  // One API process per store: leases found now were left by a process that died mid-lookup.
  runtime.reconciler.releaseStaleLeases();
  reportBindings(reconciliation, store.db, logger);
  if (reconciliation.enabled && reconciliation.bindings.size === 0) {
    logger.warn("MOSOO_EFFECT_RECONCILIATION=on but no server is bound (MOSOO_RECONCILIATION_BINDINGS_FILE): every unknown effect keeps the baseline fence");
  }
  const app = createHttpApp(runtime, logger, { operatorToken: config.operatorToken });
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, () => resolve(s));
    s.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host}:${port}`;
  if (opts.sweep !== false) runtime.sweep.start(config.sweepIntervalMs);
  logger.info(
    { url, dbFile: config.dbFile, reconciliation: reconciliation.enabled ? "on" : "off", boundServers: [...reconciliation.bindings.keys()] },
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
      store.close();
    },
  };
}
