// The run API's HTTP routes: create runs, enqueue tool calls, read runs and events, delete, each behind a scoped API key.
import { Hono, type MiddlewareHandler } from "hono";
import { RUN_API } from "@mosoo/contracts";
import type { Runtime } from "../../composition-root.js";
import { reachesRun, runNotFound } from "../../modules/runs/domain/run-access.js";
import { assertDriversAllowed, callerOf, type AuthEnv, type CredentialGuard } from "./credential-guard.js";
import { parseOrThrow } from "./http-errors.js";
import { mountRoute, type RouteHandler } from "./route-mount.js";
import { retryingWhenBusy } from "./store-retry.js";

/**
 * The run API (`RUN_API` of `@mosoo/contracts`), every route behind an API key
 * (`Authorization: Bearer <secret>`): create a run and enqueue a tool call (`runs:write`), read a run
 * and its events (`runs:read`), delete runs, sessions and finalized Drivers (`runs:delete`, or the
 * operator token). A key restricted to some Driver instances creates runs only on them (else 403
 * `auth.forbidden`) and reaches only their runs and the sessions it created: any other run or session
 * answers exactly as a missing one (404 `run.not_found` / `session.not_found`), nothing written.
 */
export function runRoutes(runtime: Runtime, guard: CredentialGuard): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  /**
   * After the guard: the path's run id is checked against its schema (400 `request.invalid`: no store
   * read with an id that is not one, e.g. a NUL byte PostgreSQL refuses), then a run that does not exist
   * and a run on a Driver the key is not restricted to are both refused with the same 404
   * `run.not_found`, before the body is parsed (so no other answer tells them apart).
   */
  const ofRun: MiddlewareHandler<AuthEnv> = async (c, next) => {
    const { runId } = parseOrThrow(RUN_API.getRun.params, { runId: c.req.param("runId") });
    const [driverInstanceId] = await runtime.runs.driversOfRun(runId);
    if (driverInstanceId === undefined || !reachesRun(callerOf(c.get("principal")), driverInstanceId)) throw runNotFound(runId);
    await next();
  };
  const on = <R extends (typeof RUN_API)[keyof typeof RUN_API]>(
    route: R,
    handler: RouteHandler<AuthEnv, R>,
    after: MiddlewareHandler<AuthEnv>[] = [],
  ) => mountRoute(app, route, [...guard.forRoute(route.auth), ...after], retryingWhenBusy(handler));
  const { runs } = runtime;

  on(RUN_API.createRun, async (c, req) => {
    const body = await req.body();
    assertDriversAllowed(c.get("principal"), [body.driverInstanceId]);
    return req.json(await runs.createRun(body, callerOf(c.get("principal"))));
  });
  on(
    RUN_API.enqueueToolCall,
    async (_c, req) => {
      const res = await runs.enqueueToolCall(req.param("runId"), await req.body());
      return req.json(res, res.replayed ? 200 : 201);
    },
    [ofRun],
  );
  on(RUN_API.getRun, async (_c, req) => req.json(await runs.getRunView(req.param("runId"))), [ofRun]);
  on(RUN_API.getToolCall, async (_c, req) => req.json(await runs.getToolCall(req.param("runId"), req.param("toolCallId"))), [ofRun]);
  on(
    RUN_API.listRunEvents,
    async (_c, req) => {
      const q = req.query();
      return req.json({ events: await runs.listEvents(req.param("runId"), q.afterSeq) });
    },
    [ofRun],
  );
  on(
    RUN_API.deleteRun,
    async (c, req) => {
      await runs.deleteRun(req.param("runId"));
      return c.body(null, 204);
    },
    [ofRun],
  );
  on(RUN_API.deleteSession, async (c, req) => {
    await runs.deleteSession(req.param("sessionId"), callerOf(c.get("principal")));
    return c.body(null, 204);
  });
  on(RUN_API.purgeDriver, async (c, req) => {
    const driverInstanceId = req.param("driverInstanceId");
    assertDriversAllowed(c.get("principal"), [driverInstanceId]);
    await runs.purgeDriver(driverInstanceId);
    return c.body(null, 204);
  });
  return app;
}
