import { Hono } from "hono";
import type { z } from "zod";
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
import type { Runtime } from "../../composition-root.js";
import type { RegistrationAuthority } from "../../modules/drivers/application/driver-instance.service.js";
import type { AuthEnv, CredentialGuard, Principal } from "./credential-guard.js";
import { parseOrThrow, readJson } from "./http-errors.js";
import type { RegistrationRateLimit } from "./registration-rate-limit.js";
import { retryingWhenBusy } from "./store-retry.js";

function authorityOf(p: Principal): RegistrationAuthority {
  if (p.kind === "driver") return { kind: "instance", driverInstanceId: p.instance.id };
  return p.kind === "operator" ? { kind: "operator" } : { kind: "enrollment" };
}

/**
 * The Driver protocol routes (paths in `DRIVER_ROUTES` of `@mosoo/contracts`, docs/DESIGN.md §10):
 * - `register`: `Authorization: Bearer <MOSOO_DRIVER_ENROLLMENT_TOKEN>` (or the operator token) for a
 *   new instance, rate-limited per client address in two budgets, refused credentials and accepted
 *   registrations (429 `request.rate_limited` with `Retry-After`; see `RegistrationRateLimit`);
 *   re-registering an existing `driverInstanceId` needs that instance's own token or the operator
 *   token (else 403 `auth.forbidden`);
 * - every other route: the bearer token of one Driver instance; a Driver reaches only its own
 *   commands and effects (another's answer 404 `command.not_found` / `effect.not_found`); a finalized
 *   instance gets 409 `driver.finalized`, except on its evidence reports (`complete`,
 *   `deadline-missed`, `late-result`), taken from the connection that made the attempt.
 */
export function driverRoutes(runtime: Runtime, guard: CredentialGuard, limit: RegistrationRateLimit): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const driver = guard.driver();

  app.post(
    DRIVER_ROUTES.register,
    limit.around(guard.registration()),
    retryingWhenBusy(async (c) => c.json(runtime.drivers.register(await readJson(c, RegisterDriverRequestSchema), authorityOf(c.get("principal"))), 201)),
  );

  app.post(DRIVER_ROUTES.connect, driver, retryingWhenBusy((c) => c.json(runtime.drivers.connect(c.get("driver")))));

  app.post(DRIVER_ROUTES.heartbeat, driver, retryingWhenBusy(async (c) => {
    const req = await readJson(c, ConnectionRequestSchema);
    return c.json(runtime.drivers.heartbeat(c.get("driver"), req.connectionId));
  }));

  app.post(DRIVER_ROUTES.finalize, driver, retryingWhenBusy(async (c) => c.json(await runtime.repair.finalize(c.get("driver").id, "driver_request"))));

  app.get(DRIVER_ROUTES.nextCommand, driver, retryingWhenBusy(async (c) => {
    const q = parseOrThrow(NextCommandQuerySchema, c.req.query());
    const command = await runtime.commands.nextCommand(c.get("driver"), q.connectionId, q.waitMs, c.req.raw.signal);
    return c.json({ command });
  }));

  app.post("/v1/drivers/commands/:commandId/update", driver, retryingWhenBusy(async (c) => {
    const commandId = parseOrThrow(UlidSchema, c.req.param("commandId"));
    return c.json(runtime.commands.updateCommand(c.get("driver"), commandId, await readJson(c, CommandUpdateRequestSchema)));
  }));

  app.post(DRIVER_ROUTES.effectClaim, driver, retryingWhenBusy(async (c) => {
    const req = await readJson(c, EffectClaimRequestSchema);
    return c.json(await runtime.ledger.claim(c.get("driver"), req.connectionId, req.commandId));
  }));

  /** `POST /v1/drivers/effects/:effectId/<report>`: the Driver's report about one of its effects, handed to the ledger. */
  // complete, deadline-missed and late-result are also taken from a finalized instance (`guard.driverReport()`):
  // evidence about an attempt it made before it was finalized (docs/DESIGN.md §3 rules 12-13).
  const reportGuard = guard.driverReport();
  const effectReport = <S extends z.ZodType, R>(name: string, schema: S, report: (driver: AuthEnv["Variables"]["driver"], effectId: string, body: z.infer<S>) => R, evidence = false) =>
    app.post(`/v1/drivers/effects/:effectId/${name}`, evidence ? reportGuard : driver, retryingWhenBusy(async (c) => {
      const effectId = parseOrThrow(UlidSchema, c.req.param("effectId"));
      return c.json(report(c.get("driver"), effectId, await readJson(c, schema)));
    }));
  effectReport("complete", EffectCompleteRequestSchema, (d, id, body) => runtime.ledger.complete(d, id, body), true);
  effectReport("mark-unknown", EffectMarkUnknownRequestSchema, (d, id, body) => runtime.ledger.markUnknown(d, id, body));
  effectReport("deadline-missed", EffectDeadlineMissedRequestSchema, (d, id, body) => runtime.ledger.deadlineMissed(d, id, body), true);
  effectReport("late-result", EffectLateResultRequestSchema, (d, id, body) => runtime.ledger.lateResult(d, id, body), true);

  return app;
}
