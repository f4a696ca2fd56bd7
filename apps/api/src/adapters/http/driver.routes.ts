import { Hono } from "hono";
import {
  CommandUpdateRequestSchema,
  ConnectionRequestSchema,
  DRIVER_ROUTES,
  EffectClaimRequestSchema,
  EffectCompleteRequestSchema,
  EffectDeadlineMissedRequestSchema,
  EffectLateResultRequestSchema,
  EffectMarkUnknownRequestSchema,
  NextCommandQuerySchema,
  RegisterDriverRequestSchema,
  UlidSchema,
} from "@mosoo/contracts";
import { RuntimeError } from "../../modules/runtime/domain/runtime-errors.js";
import type { Runtime } from "../../modules/runtime/application/runtime.js";
import type { DriverInstanceRow } from "../../modules/runtime/infrastructure/driver-instance.repository.js";
import { parseOrThrow, readJson } from "./http-errors.js";
import { retryingWhenBusy } from "./store-retry.js";

type DriverEnv = { Variables: { driver: DriverInstanceRow } };

/**
 * The Driver protocol routes (paths in `DRIVER_ROUTES` of `@mosoo/contracts`). All but register
 * authenticate the bearer token of one Driver instance; a Driver reaches only its own commands and effects.
 */
export function driverRoutes(runtime: Runtime): Hono<DriverEnv> {
  const app = new Hono<DriverEnv>();

  app.post(DRIVER_ROUTES.register, retryingWhenBusy(async (c) => c.json(runtime.drivers.register(await readJson(c, RegisterDriverRequestSchema)), 201)));

  app.use("/v1/drivers/*", async (c, next) => {
    if (c.req.path === DRIVER_ROUTES.register) return next();
    const header = c.req.header("authorization");
    if (!header?.startsWith("Bearer ")) throw new RuntimeError("auth.missing_token", "send Authorization: Bearer <driver token>");
    c.set("driver", runtime.drivers.authenticate(header.slice("Bearer ".length).trim()));
    return next();
  });

  app.post(DRIVER_ROUTES.connect, retryingWhenBusy((c) => c.json(runtime.drivers.connect(c.get("driver")))));

  app.post(DRIVER_ROUTES.heartbeat, retryingWhenBusy(async (c) => {
    const req = await readJson(c, ConnectionRequestSchema);
    return c.json(runtime.drivers.heartbeat(c.get("driver"), req.connectionId));
  }));

  app.post(DRIVER_ROUTES.finalize, retryingWhenBusy(async (c) => c.json(await runtime.repair.finalize(c.get("driver").id, "driver_request"))));

  app.get(DRIVER_ROUTES.nextCommand, retryingWhenBusy(async (c) => {
    const q = parseOrThrow(NextCommandQuerySchema, c.req.query());
    const command = await runtime.commands.nextCommand(c.get("driver"), q.connectionId, q.waitMs, c.req.raw.signal);
    return c.json({ command });
  }));

  app.post("/v1/drivers/commands/:commandId/update", retryingWhenBusy(async (c) => {
    const commandId = parseOrThrow(UlidSchema, c.req.param("commandId"));
    return c.json(runtime.commands.updateCommand(c.get("driver"), commandId, await readJson(c, CommandUpdateRequestSchema)));
  }));

  app.post(DRIVER_ROUTES.effectClaim, retryingWhenBusy(async (c) => {
    const req = await readJson(c, EffectClaimRequestSchema);
    return c.json(await runtime.ledger.claim(c.get("driver"), req.connectionId, req.commandId));
  }));

  app.post("/v1/drivers/effects/:effectId/complete", retryingWhenBusy(async (c) => {
    const effectId = parseOrThrow(UlidSchema, c.req.param("effectId"));
    return c.json(runtime.ledger.complete(c.get("driver"), effectId, await readJson(c, EffectCompleteRequestSchema)));
  }));

  app.post("/v1/drivers/effects/:effectId/mark-unknown", retryingWhenBusy(async (c) => {
    const effectId = parseOrThrow(UlidSchema, c.req.param("effectId"));
    return c.json(runtime.ledger.markUnknown(c.get("driver"), effectId, await readJson(c, EffectMarkUnknownRequestSchema)));
  }));

  app.post("/v1/drivers/effects/:effectId/deadline-missed", retryingWhenBusy(async (c) => {
    const effectId = parseOrThrow(UlidSchema, c.req.param("effectId"));
    return c.json(runtime.ledger.deadlineMissed(c.get("driver"), effectId, await readJson(c, EffectDeadlineMissedRequestSchema)));
  }));

  app.post("/v1/drivers/effects/:effectId/late-result", retryingWhenBusy(async (c) => {
    const effectId = parseOrThrow(UlidSchema, c.req.param("effectId"));
    return c.json(runtime.ledger.lateResult(c.get("driver"), effectId, await readJson(c, EffectLateResultRequestSchema)));
  }));

  return app;
}
