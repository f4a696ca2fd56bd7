import { Hono } from "hono";
import { OPERATOR_API } from "@mosoo/contracts";
import { RuntimeError } from "../../modules/ledger/domain/runtime-errors.js";
import type { Runtime } from "../../composition-root.js";
import {
  OperatorCompensateRequestSchema,
  OperatorListQuerySchema,
  OperatorReconcileRequestSchema,
  OperatorResolveRequestSchema,
} from "../../modules/operator/application/operator.contract.js";
import type { AuthEnv, CredentialGuard } from "./credential-guard.js";
import { mountRoute, type RouteHandler } from "./route-mount.js";
import { retryingWhenBusy } from "./store-retry.js";

/**
 * The operator routes (`OPERATOR_API` of `@mosoo/contracts`; docs/DESIGN.md §7) over `runtime.operator`, behind
 * `Authorization: Bearer <MOSOO_OPERATOR_TOKEN>` (compared in constant time; without a configured
 * token every route answers 403 `auth.operator_disabled`; any other credential 403 `auth.forbidden`),
 * and, once authenticated, only while `MOSOO_EFFECT_RECONCILIATION` is on (else 404 `feature.disabled`):
 * - `GET /api/operator/effects?status&attention&serverId&toolName&runId&minAgeMs&limit&cursor` → `{effects, nextCursor}` (each with `toolError`);
 * - `GET /api/operator/effects/:id` → the effect with its whole history;
 * - `POST /api/operator/effects/:id/reconcile {actor, reason}`;
 * - `POST /api/operator/effects/:id/resolve {outcome: "succeeded", result, receipt?, actor, reason} | {outcome: "not_executed", actor, reason}`;
 * - `POST /api/operator/effects/:id/compensate {actor, reason, driverInstanceId?}`.
 * Every refusal is a 4xx `{error: {code, message}}` and changes nothing.
 */
export function operatorRoutes(runtime: Runtime, guard: CredentialGuard): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.use("/api/operator/*", async (c, next) => {
    if (!guard.operatorConfigured)
      throw new RuntimeError("auth.operator_disabled", "the operator routes are off: set MOSOO_OPERATOR_TOKEN");
    return next();
  });
  app.use("/api/operator/*", guard.operatorOnly());
  app.use("/api/operator/*", async (_c, next) => {
    runtime.operator.assertEnabled();
    return next();
  });
  const on = <R extends (typeof OPERATOR_API)[keyof typeof OPERATOR_API]>(route: R, handler: RouteHandler<AuthEnv, R>) =>
    mountRoute(app, route, guard.forRoute(route.auth), retryingWhenBusy(handler));
  const { operator } = runtime;
  on(OPERATOR_API.operatorList, async (_c, req) => req.json(await operator.list(req.query(OperatorListQuerySchema))));
  on(OPERATOR_API.operatorShow, async (_c, req) => req.json(await operator.show(req.param("effectId"))));
  on(OPERATOR_API.operatorReconcile, async (_c, req) => {
    const effectId = req.param("effectId");
    return req.json(await operator.reconcile(effectId, await req.body(OperatorReconcileRequestSchema)));
  });
  on(OPERATOR_API.operatorResolve, async (_c, req) => {
    const effectId = req.param("effectId");
    return req.json(await operator.resolve(effectId, await req.body(OperatorResolveRequestSchema)));
  });
  on(OPERATOR_API.operatorCompensate, async (_c, req) => {
    const effectId = req.param("effectId");
    return req.json(await operator.compensate(effectId, await req.body(OperatorCompensateRequestSchema)));
  });
  return app;
}
