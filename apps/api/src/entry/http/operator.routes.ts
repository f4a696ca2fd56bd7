// The operator HTTP routes under `/api/operator`, each behind a named operator credential holding the route's scope.
import { Hono, type Context } from "hono";
import { OPERATOR_ACTION_ROUTES, OPERATOR_API } from "@mosoo/contracts";
import { UserFacingError } from "../../kernel/user-facing-error.js";
import type { Runtime } from "../../composition-root.js";
import type { OperatorIdentity } from "../../modules/operator/domain/operator-credential.js";
import type { AuthEnv, CredentialGuard } from "./credential-guard.js";
import type { OperatorAuthBudget } from "./operator-auth-budget.js";
import { mountOperatorActions } from "./operator-action.routes.js";
import { mountRoute, type RouteHandler } from "./route-mount.js";
import { retryingWhenBusy } from "./store-retry.js";

/** The operator credential that authenticated the request (set by the guard of `/api/operator/*`). */
function operatorOf(c: Context<AuthEnv>): OperatorIdentity {
  const p = c.get("principal");
  if (p.kind !== "operator") throw new UserFacingError("auth.forbidden", "this credential may not use this route");
  return p.operator;
}

/**
 * The operator routes (`OPERATOR_API` of `@mosoo/contracts`) over `runtime.operator`, behind
 * `Authorization: Bearer <operator token>` of a named operator credential (compared in constant time;
 * without any configured credential every route answers 403 `auth.operator_disabled`; any other kind
 * of credential 403 `auth.forbidden`; a token matching none 401 `auth.invalid_token`, or 429
 * `request.rate_limited` past the failure budget, see {@link OperatorAuthBudget}), and, once
 * authenticated, only while `MOSOO_EFFECT_RECONCILIATION` is on (else 404 `feature.disabled`).
 * The audit `actor` of every action is the credential's name; a body carries only the `reason`
 * (a body `actor` is refused: 400 `request.invalid`). Each route needs its scope (403 `auth.scope`
 * otherwise; a refused action is audited under the credential's name):
 * - `read`: `GET /api/operator/effects?status&attention&serverId&toolName&runId&minAgeMs&limit&cursor` → `{effects, nextCursor}` (each with `toolError`);
 * - `read`: `GET /api/operator/effects/:id` → the effect with its whole history;
 * - each action of `OPERATOR_ACTION_TABLE`, with its scope: `POST /api/operator/effects/:id/<action>`
 *   (`reconcile {reason}`, `resolve {outcome: "succeeded", result, receipt?, reason} | {outcome: "not_executed", reason}`,
 *   `compensate {reason, driverInstanceId?}`), dispatched by name to the service ({@link mountOperatorActions}).
 * Every refusal is a 4xx `{error: {code, message}}` and changes nothing but the refusal's audit row.
 */
export function operatorRoutes(runtime: Runtime, guard: CredentialGuard, budget: OperatorAuthBudget): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.use("/api/operator/*", async (c, next) => {
    if (!guard.operatorConfigured)
      throw new UserFacingError(
        "auth.operator_disabled",
        "the operator routes are off: set MOSOO_OPERATOR_TOKEN or MOSOO_OPERATOR_CREDENTIALS_FILE",
      );
    return next();
  });
  app.use("/api/operator/*", budget.bearer(guard.operatorOnly()));
  app.use("/api/operator/*", async (_c, next) => {
    runtime.operator.assertEnabled();
    return next();
  });
  const on = <R extends (typeof OPERATOR_API)[keyof typeof OPERATOR_API]>(route: R, handler: RouteHandler<AuthEnv, R>): void =>
    mountRoute(app, route, guard.forRoute(route.auth), retryingWhenBusy(handler));
  const { operator } = runtime;
  const reader = (c: Context<AuthEnv>) => operator.assertMayRead(operatorOf(c));
  on(OPERATOR_API.operatorList, async (c, req) => {
    reader(c);
    return req.json(await operator.list(req.query()));
  });
  on(OPERATOR_API.operatorShow, async (c, req) => {
    reader(c);
    return req.json(await operator.show(req.param("effectId")));
  });
  mountOperatorActions(OPERATOR_ACTION_ROUTES, operator, operatorOf, on);
  return app;
}
