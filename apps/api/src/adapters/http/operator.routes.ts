import { createHash, timingSafeEqual } from "node:crypto";
import { Hono } from "hono";
import { z } from "zod";
import { UlidSchema } from "@mosoo/contracts";
import { RuntimeError } from "../../modules/runtime/domain/runtime-errors.js";
import type { Runtime } from "../../modules/runtime/application/runtime.js";
import { OperatorLookupRequestSchema, OperatorResolveRequestSchema } from "../../modules/reconciliation/application/operator.contract.js";
import { parseOrThrow, readJson } from "./http-errors.js";

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

/**
 * The operator routes (DESIGN.md §7), behind `Authorization: Bearer <MOSOO_OPERATOR_TOKEN>`:
 * `GET /v1/operator/effects?status=unknown&limit=N`, `GET /v1/operator/effects/:id`,
 * `POST /v1/operator/effects/:id/lookup {actor, reason}`, `POST /v1/operator/effects/:id/resolve
 * {outcome: "succeeded", outputText, isError?, actor, reason} | {outcome: "not_executed", actor, reason}`.
 * Without a configured token every route answers 403 `auth.operator_disabled`.
 */
export function operatorRoutes(runtime: Runtime, operatorToken: string | undefined): Hono {
  const app = new Hono();
  app.use("/v1/operator/*", async (c, next) => {
    if (!operatorToken) throw new RuntimeError("auth.operator_disabled", "the operator surface is off: set MOSOO_OPERATOR_TOKEN");
    const header = c.req.header("authorization") ?? "";
    const given = /^bearer /i.test(header) ? header.slice(7).trim() : "";
    if (!given) throw new RuntimeError("auth.missing_token", "send Authorization: Bearer <operator token>");
    if (!timingSafeEqual(digest(given), digest(operatorToken))) throw new RuntimeError("auth.invalid_token", "the operator token is not valid");
    return next();
  });
  const id = (value: string | undefined) => parseOrThrow(UlidSchema, value);
  app.get("/v1/operator/effects", (c) => {
    const q = parseOrThrow(z.object({ status: z.literal("unknown").default("unknown"), limit: z.coerce.number().int().min(1).max(500).default(100) }), c.req.query());
    return c.json({ effects: runtime.operator.listUnknown(q.limit) });
  });
  app.get("/v1/operator/effects/:effectId", (c) => c.json(runtime.operator.show(id(c.req.param("effectId")))));
  app.post("/v1/operator/effects/:effectId/lookup", async (c) =>
    c.json(await runtime.operator.triggerLookup(id(c.req.param("effectId")), await readJson(c, OperatorLookupRequestSchema))),
  );
  app.post("/v1/operator/effects/:effectId/resolve", async (c) =>
    c.json(runtime.operator.resolve(id(c.req.param("effectId")), await readJson(c, OperatorResolveRequestSchema))),
  );
  return app;
}
