import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Logger } from "pino";
import type { Runtime } from "../../modules/runtime/application/runtime.js";
import { CredentialGuard, type HttpAuthOptions } from "./credential-guard.js";
import { driverRoutes } from "./driver.routes.js";
import { RegistrationRateLimit } from "./registration-rate-limit.js";
import { toErrorResponse } from "./http-errors.js";
import { runRoutes } from "./run.routes.js";
import { operatorRoutes } from "./operator.routes.js";

/** Largest request body accepted, in bytes (4 MiB); larger ones get 413 `request.too_large`. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Options of {@link createHttpApp}: the credentials (see {@link HttpAuthOptions}) and the registration rate. */
export interface HttpAppOptions extends HttpAuthOptions {
  /** Driver registrations per client address per minute (default 30). */
  driverRegisterPerMinute?: number | undefined;
}

/**
 * The API's HTTP application (hono): `GET /health` (open), `GET /metrics` (Prometheus text; open only
 * with `metricsPublic`, else the operator token or a `metrics:read` key), the run API (API keys with
 * scopes), the Driver protocol (enrollment token, then each instance's own token), and the operator
 * routes (operator token). Credentials are checked by {@link CredentialGuard} (DESIGN.md §10). Every
 * error answers `{error: {code, message}}` with a 4xx (or 500 `internal`), never a stack.
 */
export function createHttpApp(runtime: Runtime, logger: Logger, opts: HttpAppOptions = {}): Hono {
  const guard = new CredentialGuard(runtime, opts);
  const limit = new RegistrationRateLimit(opts.driverRegisterPerMinute ?? 30);
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
  app.get("/metrics", guard.metrics(), async (c) => c.text(await runtime.metricsRegistry.metrics(), 200, { "content-type": runtime.metricsRegistry.contentType }));
  app.route("/", operatorRoutes(runtime, guard));
  app.route("/", runRoutes(runtime, guard));
  app.route("/", driverRoutes(runtime, guard, limit));
  return app;
}
