import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import type { Logger } from "pino";
import type { ApiConfig } from "./config/api-config.js";
import { createHttpApp } from "./adapters/http/app.js";
import { openStore, type Store } from "./platform/db/database.js";
import type { Clock } from "./platform/clock.js";
import { createRuntime, type Runtime } from "./modules/runtime/application/runtime.js";
import { createBuiltInAdapterRegistry } from "./adapters/reconciliation/builtin-adapters.js";
import { resolveReconciliationSettings } from "./config/reconciliation-bindings.js";
import type { AdapterRegistry } from "@mosoo/effect-reconciliation";

/** A running API: its base URL (`http://host:port`), the runtime, the store, and `close()`. */
export interface RunningApi {
  url: string;
  runtime: Runtime;
  store: Store;
  close(): Promise<void>;
}

/**
 * Opens and migrates the store, wires the runtime, serves HTTP on `config.host:config.port`
 * (0 = a free port) and starts the maintenance sweep. Reconciliation bindings are resolved from
 * `registry` (default: the built-in adapters), which is closed for registration from then on.
 * @throws ConfigError on an invalid bindings file; Error when the store cannot be opened/migrated
 *   or the port cannot be bound.
 */
export async function startApi(
  config: ApiConfig,
  logger: Logger,
  opts: { clock?: Clock; sweep?: boolean; registry?: AdapterRegistry } = {},
): Promise<RunningApi> {
  const reconciliation = resolveReconciliationSettings(config, opts.registry ?? createBuiltInAdapterRegistry());
  const store = openStore(config.dbFile);
  const runtime = createRuntime({
    db: store.db,
    logger,
    heartbeatTtlMs: config.heartbeatTtlMs,
    reconciliation,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  const app = createHttpApp(runtime, logger);
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
      await runtime.sweep.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      store.close();
    },
  };
}
