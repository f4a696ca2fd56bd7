import { Hono } from "hono";
import { UlidSchema } from "@mosoo/contracts";
import { RuntimeError } from "../../modules/ledger/domain/runtime-errors.js";
import type { Runtime } from "../../composition-root.js";
import {
  OperatorCompensateRequestSchema,
  OperatorListQuerySchema,
  OperatorReconcileRequestSchema,
  OperatorResolveRequestSchema,
} from "../../modules/operator/application/operator.contract.js";
import type { AuthEnv, CredentialGuard } from "./credential-guard.js";
import { parseOrThrow, readJson } from "./http-errors.js";
import { retryingWhenBusy } from "./store-retry.js";

/**
 * The operator routes (docs/DESIGN.md §7) over `runtime.operator`, behind
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
    if (!guard.operatorConfigured) throw new RuntimeError("auth.operator_disabled", "the operator routes are off: set MOSOO_OPERATOR_TOKEN");
    return next();
  });
  app.use("/api/operator/*", guard.operatorOnly());
  app.use("/api/operator/*", async (_c, next) => {
    runtime.operator.assertEnabled();
    return next();
  });
  const id = (value: string | undefined) => parseOrThrow(UlidSchema, value);
  const base = "/api/operator/effects";
  app.get(base, retryingWhenBusy((c) => c.json(runtime.operator.list(parseOrThrow(OperatorListQuerySchema, c.req.query())))));
  app.get(`${base}/:effectId`, retryingWhenBusy((c) => c.json(runtime.operator.show(id(c.req.param("effectId"))))));
  app.post(`${base}/:effectId/reconcile`, retryingWhenBusy(async (c) =>
    c.json(await runtime.operator.reconcile(id(c.req.param("effectId")), await readJson(c, OperatorReconcileRequestSchema))),
  ));
  app.post(`${base}/:effectId/resolve`, retryingWhenBusy(async (c) => c.json(runtime.operator.resolve(id(c.req.param("effectId")), await readJson(c, OperatorResolveRequestSchema)))));
  app.post(`${base}/:effectId/compensate`, retryingWhenBusy(async (c) =>
    c.json(await runtime.operator.compensate(id(c.req.param("effectId")), await readJson(c, OperatorCompensateRequestSchema)), 202),
  ));
  return app;
}
