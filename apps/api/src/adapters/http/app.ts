import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Logger } from "pino";
import type { Runtime } from "../../modules/runtime/application/runtime.js";
import { driverRoutes } from "./driver.routes.js";
import { toErrorResponse } from "./http-errors.js";
import { runRoutes } from "./run.routes.js";
import { operatorRoutes } from "./operator.routes.js";
import { consoleRoutes, type ConsoleOptions } from "./console/console.routes.js";

/** Largest request body accepted, in bytes (4 MiB); larger ones get 413 `request.too_large`. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The API's HTTP application (hono): `GET /health`, `GET /metrics` (Prometheus text), the run API,
 * the Driver protocol, the operator routes (only with `opts.operatorToken`) and the operator
 * console at `/console` (see `consoleRoutes`; `opts.console` tunes its live-update polling). Every
 * error answers `{error: {code, message}}` with a 4xx (or 500 `internal`), never a stack.
 */
export function createHttpApp(runtime: Runtime, logger: Logger, opts: { operatorToken?: string | undefined; console?: Omit<ConsoleOptions, "operatorToken"> } = {}): Hono {
  const app = new Hono();
  app.onError((err, c) => toErrorResponse(err, c, logger));
  // Largest body any route needs is a Driver's result (1 MiB of output plus a 16 KiB receipt).
  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) => c.json({ error: { code: "request.too_large", message: `the body exceeds ${MAX_BODY_BYTES} bytes` } }, 413),
    }),
  );
  app.notFound((c) => c.json({ error: { code: "route.not_found", message: `no route ${c.req.method} ${c.req.path}` } }, 404));
  app.get("/health", (c) => c.json({ status: "ok" }));
  app.get("/metrics", async (c) => c.text(await runtime.metricsRegistry.metrics(), 200, { "content-type": runtime.metricsRegistry.contentType }));
  app.route("/", operatorRoutes(runtime, opts.operatorToken));
  app.route("/", consoleRoutes(runtime, logger, { ...opts.console, operatorToken: opts.operatorToken }).app);
  app.route("/", runRoutes(runtime));
  app.route("/", driverRoutes(runtime));
  return app;
}
