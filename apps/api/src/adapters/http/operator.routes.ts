import { createHash, timingSafeEqual } from "node:crypto";
import { Hono } from "hono";
import { UlidSchema } from "@mosoo/contracts";
import { RuntimeError } from "../../modules/runtime/domain/runtime-errors.js";
import type { Runtime } from "../../modules/runtime/application/runtime.js";
import {
  OperatorCompensateRequestSchema,
  OperatorListQuerySchema,
  OperatorReconcileRequestSchema,
  OperatorResolveRequestSchema,
} from "../../modules/reconciliation/application/operator.contract.js";
import { parseOrThrow, readJson } from "./http-errors.js";

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

/**
 * The operator routes (DESIGN.md §7) over `runtime.operator`, only while `MOSOO_EFFECT_RECONCILIATION`
 * is on (else every route answers 404 `feature.disabled`), and behind
 * `Authorization: Bearer <MOSOO_OPERATOR_TOKEN>` (compared in constant time; without a configured
 * token every route answers 403 `auth.operator_disabled`):
 * - `GET /api/operator/effects?status&attention&serverId&toolName&runId&minAgeMs&limit&cursor` → `{effects, nextCursor}` (each with `toolError`);
 * - `GET /api/operator/effects/:id` → the effect with its whole history;
 * - `POST /api/operator/effects/:id/reconcile {actor, reason}`;
 * - `POST /api/operator/effects/:id/resolve {outcome: "succeeded", result, receipt?, actor, reason} | {outcome: "not_executed", actor, reason}`;
 * - `POST /api/operator/effects/:id/compensate {actor, reason, driverInstanceId?}`.
 * Every refusal is a 4xx `{error: {code, message}}` and changes nothing.
 */
export function operatorRoutes(runtime: Runtime, operatorToken: string | undefined): Hono {
  const app = new Hono();
  app.use("/api/operator/*", async (c, next) => {
    runtime.operator.assertEnabled();
    if (!operatorToken) throw new RuntimeError("auth.operator_disabled", "the operator routes are off: set MOSOO_OPERATOR_TOKEN");
    const header = c.req.header("authorization") ?? "";
    const given = /^bearer /i.test(header) ? header.slice(7).trim() : "";
    if (!given) throw new RuntimeError("auth.missing_token", "send Authorization: Bearer <operator token>");
    if (!timingSafeEqual(digest(given), digest(operatorToken))) throw new RuntimeError("auth.invalid_token", "the operator token is not valid");
    return next();
  });
  const id = (value: string | undefined) => parseOrThrow(UlidSchema, value);
  const base = "/api/operator/effects";
  app.get(base, (c) => c.json(runtime.operator.list(parseOrThrow(OperatorListQuerySchema, c.req.query()))));
  app.get(`${base}/:effectId`, (c) => c.json(runtime.operator.show(id(c.req.param("effectId")))));
  app.post(`${base}/:effectId/reconcile`, async (c) =>
    c.json(await runtime.operator.reconcile(id(c.req.param("effectId")), await readJson(c, OperatorReconcileRequestSchema))),
  );
  app.post(`${base}/:effectId/resolve`, async (c) => c.json(runtime.operator.resolve(id(c.req.param("effectId")), await readJson(c, OperatorResolveRequestSchema))));
  app.post(`${base}/:effectId/compensate`, async (c) =>
    c.json(await runtime.operator.compensate(id(c.req.param("effectId")), await readJson(c, OperatorCompensateRequestSchema)), 202),
  );
  return app;
}
