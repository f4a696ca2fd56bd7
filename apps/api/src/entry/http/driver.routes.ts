// The Driver protocol's HTTP routes: registration by enrollment token, then each instance's own commands, claims and reports.
import { Hono } from "hono";
import { DRIVER_API } from "@mosoo/contracts";
import type { Runtime } from "../../composition-root.js";
import type { RegistrationAuthority } from "../../modules/drivers/application/driver-instance.service.js";
import type { AuthEnv, CredentialGuard, Principal } from "./credential-guard.js";
import type { RegistrationRateLimit } from "./registration-rate-limit.js";
import { mountRoute } from "./route-mount.js";
import { retryingWhenBusy } from "./store-retry.js";

function authorityOf(p: Principal): RegistrationAuthority {
  if (p.kind === "driver") return { kind: "instance", driverInstanceId: p.instance.id };
  return p.kind === "operator" ? { kind: "operator" } : { kind: "enrollment" };
}

/**
 * The Driver protocol routes (`DRIVER_API` of `@mosoo/contracts`: paths, schemas, credentials):
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
  const on = <R extends (typeof DRIVER_API)[keyof typeof DRIVER_API]>(route: R, handler: Parameters<typeof mountRoute<AuthEnv, R>>[3]) =>
    mountRoute(app, route, guard.forRoute(route.auth), retryingWhenBusy(handler));
  const { ledger } = runtime;

  mountRoute(
    app,
    DRIVER_API.register,
    [limit.around(guard.registration())],
    retryingWhenBusy(async (c, req) => req.json(await runtime.drivers.register(await req.body(), authorityOf(c.get("principal"))))),
  );
  on(DRIVER_API.connect, async (c, req) => req.json(await runtime.drivers.connect(c.get("driver"))));
  on(DRIVER_API.heartbeat, async (c, req) => req.json(await runtime.drivers.heartbeat(c.get("driver"), (await req.body()).connectionId)));
  // the body (the Driver's connectionId) is not read: the calling instance is finalized
  on(DRIVER_API.finalize, async (c, req) => req.json(await runtime.repair.finalize(c.get("driver").id, "driver_request")));
  on(DRIVER_API.self, async (c, req) => req.json(await runtime.drivers.describe(c.get("driver"))));
  on(DRIVER_API.nextCommand, async (c, req) => {
    const q = req.query();
    return req.json({ command: await runtime.commands.nextCommand(c.get("driver"), q.connectionId, q.waitMs, c.req.raw.signal) });
  });
  on(DRIVER_API.commandUpdate, async (c, req) => {
    const commandId = req.param("commandId");
    return req.json(await runtime.commands.updateCommand(c.get("driver"), commandId, await req.body()));
  });
  on(DRIVER_API.effectClaim, async (c, req) => {
    const body = await req.body();
    return req.json(await ledger.claim(c.get("driver"), body.connectionId, body.commandId));
  });
  on(DRIVER_API.effectComplete, async (c, req) =>
    req.json(await ledger.complete(c.get("driver"), req.param("effectId"), await req.body())),
  );
  on(DRIVER_API.effectMarkUnknown, async (c, req) =>
    req.json(await ledger.markUnknown(c.get("driver"), req.param("effectId"), await req.body())),
  );
  on(DRIVER_API.effectDeadlineMissed, async (c, req) =>
    req.json(await ledger.deadlineMissed(c.get("driver"), req.param("effectId"), await req.body())),
  );
  on(DRIVER_API.effectLateResult, async (c, req) =>
    req.json(await ledger.lateResult(c.get("driver"), req.param("effectId"), await req.body())),
  );
  on(DRIVER_API.effectTaskCreated, async (c, req) =>
    req.json(await ledger.taskCreated(c.get("driver"), req.param("effectId"), await req.body())),
  );
  return app;
}
