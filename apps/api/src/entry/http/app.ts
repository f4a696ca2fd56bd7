// The API's HTTP application: mounts the health, metrics, run, Driver, operator and console routes behind their credentials.
import { Hono } from "hono";
import type { Logger } from "pino";
import { MAX_BODY_BYTES, SYSTEM_API } from "@mosoo/contracts";
import type { Runtime } from "../../composition-root.js";
import { CredentialGuard, operatorCredentialsOf, type AuthEnv, type HttpAuthOptions } from "./credential-guard.js";
import { OperatorAuthBudget } from "./operator-auth-budget.js";
import { driverRoutes } from "./driver.routes.js";
import { RegistrationRateLimit } from "./registration-rate-limit.js";
import { isJsonContentType, toErrorResponse } from "./http-errors.js";
import { UserFacingError } from "../../kernel/user-facing-error.js";
import { runRoutes } from "./run.routes.js";
import { requestBodyLimit } from "./request-body-limit.js";
import { mountRoute } from "./route-mount.js";
import { checkReadiness } from "./readiness.js";
import { openApiDocument } from "./openapi.js";
import { traceRequests } from "./request-tracing.js";
import { operatorRoutes } from "./operator.routes.js";
import { consoleRoutes, type ConsoleOptions } from "./console/console.routes.js";

/** Largest request body accepted on any route, in bytes (4 MiB; `MAX_BODY_BYTES` of `@mosoo/contracts`, each table route's `bodyLimitBytes` at most this); larger ones get 413 `request.too_large`. */
export { MAX_BODY_BYTES };

/** Options of {@link createHttpApp}: the credentials (see {@link HttpAuthOptions}) and the registration rate. */
export interface HttpAppOptions extends HttpAuthOptions {
  /** Driver registrations per client address per minute (default 30). */
  driverRegisterPerMinute?: number | undefined;
  /** Refused operator credentials per client address per minute (console sign-in and operator bearer; default 10). */
  operatorAuthFailuresPerMinute?: number | undefined;
  /**
   * Whether the reconciliation adapter host is up, for `GET /ready` (the server passes "created and
   * not closed"). Default: always true (an app built without a host, in tests).
   */
  adapterHostUp?: (() => boolean) | undefined;
  /** The operator console's options but its credentials (it signs in with the operator credentials) and budget. */
  console?: Omit<ConsoleOptions, "operators" | "authBudget">;
}

/**
 * True when a request declares a body (HTTP/1.1 framing): a `Content-Length` other than 0, or a
 * `Transfer-Encoding`. Routes that read a body also require the JSON content type themselves (`readJson`).
 */
function hasBody(req: Request): boolean {
  const length = req.headers.get("content-length");
  if (length !== null && length.trim() !== "0") return true;
  return req.headers.has("transfer-encoding");
}

/**
 * The API's HTTP application (hono), every JSON route mounted from `API_ROUTES` of `@mosoo/contracts`: `GET /health` (liveness, open), `GET /ready` (readiness, open; see `checkReadiness`), `GET /openapi.json` (this table as OpenAPI 3.1, open), `GET /metrics` (Prometheus text; open only
 * with `metricsPublic`, else an operator credential with `read` or a `metrics:read` key), the run API (API keys with
 * scopes), the Driver protocol (enrollment token, then each instance's own token), and the operator
 * routes (named operator credentials with scopes), and the operator console at `/console` (its own sign-in with an operator
 * token, session cookie and CSRF token; refused operator tokens spend {@link OperatorAuthBudget}; see `consoleRoutes`; `opts.console` tunes its live-update
 * polling). Credentials are checked by {@link CredentialGuard}. Every
 * error answers `{error: {code, message}}` with a 4xx (503 `store.busy` with `Retry-After` when the
 * store is locked, noted in `runtime.ctx.storeBusy` for the sweep's heartbeat grace; 500 `internal` otherwise), never a stack. Bodies must be `application/json`
 * (415 `request.unsupported_media_type`; the console's own form posts excepted) and at most {@link MAX_BODY_BYTES} (413 `request.too_large`
 * after the rest of the body was discarded, up to a bound, then the connection closed: `requestBodyLimit`); their content is checked by the shared rules of `@mosoo/contracts`.
 */
export function createHttpApp(runtime: Runtime, logger: Logger, opts: HttpAppOptions = {}): Hono {
  const guard = new CredentialGuard(runtime, opts);
  const limit = new RegistrationRateLimit(opts.driverRegisterPerMinute ?? 30);
  const operatorBudget = new OperatorAuthBudget(opts.operatorAuthFailuresPerMinute ?? 10, logger);
  const app = new Hono();
  app.onError((err, c) => toErrorResponse(err, c, logger, runtime.ctx.storeBusy));
  app.use("*", traceRequests()); // one span per request (docs/OPERATIONS.md "Traces"); first, so it sees every answer
  // A body is JSON or it is refused (415) before any route sees it, including routes
  // that ignore their body (a `text/plain` POST is what a web page can send cross-origin blind).
  // The console's sign-in and sign-out are HTML form posts, guarded by its session's CSRF token and
  // hono's origin check in the console module itself.
  app.use("*", async (c, next) => {
    if (hasBody(c.req.raw) && !isJsonContentType(c.req.header("content-type")) && !c.req.path.startsWith("/console/")) {
      throw new UserFacingError("request.unsupported_media_type", "send the body as JSON with Content-Type: application/json");
    }
    return next();
  });
  // Largest body any route needs is a Driver's result (1 MiB of output plus a 16 KiB receipt). An
  // oversized body is read and discarded (bounded) before its 413, which closes the connection
  // (`Connection: close`): the client sees the answer instead of a reset, and sends its next request
  // on a new connection.
  app.use("*", requestBodyLimit(MAX_BODY_BYTES));
  app.notFound((c) => c.json({ error: { code: "route.not_found", message: `no route ${c.req.method} ${c.req.path}` } }, 404));
  const system = new Hono<AuthEnv>();
  mountRoute(system, SYSTEM_API.health, guard.forRoute(SYSTEM_API.health.auth), (_c, req) => req.json({ status: "ok" }));
  mountRoute(system, SYSTEM_API.ready, guard.forRoute(SYSTEM_API.ready.auth), async (c) => {
    const readiness = await checkReadiness(runtime.ctx.store, opts.adapterHostUp ?? (() => true));
    return c.json(readiness, readiness.status === "ready" ? 200 : 503);
  });
  mountRoute(system, SYSTEM_API.metrics, guard.forRoute(SYSTEM_API.metrics.auth), async (c) =>
    c.text(await runtime.metricsRegistry.metrics(), 200, { "content-type": runtime.metricsRegistry.contentType }),
  );
  mountRoute(system, SYSTEM_API.openapi, guard.forRoute(SYSTEM_API.openapi.auth), (_c, req) => req.json(openApiDocument()));
  app.route("/", system);
  app.route("/", operatorRoutes(runtime, guard, operatorBudget));
  app.route(
    "/",
    consoleRoutes(runtime, logger, { ...opts.console, operators: operatorCredentialsOf(opts), authBudget: operatorBudget }).app,
  );
  app.route("/", runRoutes(runtime, guard));
  app.route("/", driverRoutes(runtime, guard, limit));
  return app;
}
