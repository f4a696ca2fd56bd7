import { Hono, type MiddlewareHandler } from "hono";
import { CreateRunRequestSchema, EnqueueToolCallRequestSchema, RunEventsQuerySchema, UlidSchema } from "@mosoo/contracts";
import type { Runtime } from "../../composition-root.js";
import { assertDriversAllowed, type AuthEnv, type CredentialGuard } from "./credential-guard.js";
import { parseOrThrow, readJson } from "./http-errors.js";
import { retryingWhenBusy } from "./store-retry.js";

/**
 * The run API (docs/DESIGN.md §10), every route behind an API key (`Authorization: Bearer <secret>`):
 * create a run and enqueue a tool call (`runs:write`), read a run and its events (`runs:read`),
 * delete runs, sessions and finalized Drivers (`runs:delete`, or the operator token). A key restricted
 * to some Driver instances reaches only their runs (else 403 `auth.forbidden`, nothing written).
 */
export function runRoutes(runtime: Runtime, guard: CredentialGuard): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const write = guard.apiKey("runs:write");
  const read = guard.apiKey("runs:read");
  const del = guard.apiKey("runs:delete", true);
  const ofRun: MiddlewareHandler<AuthEnv> = async (c, next) => {
    assertDriversAllowed(c.get("principal"), runtime.runs.driversOfRun(c.req.param("runId") ?? ""));
    await next();
  };
  const id = (value: string | undefined) => parseOrThrow(UlidSchema, value);

  app.post("/v1/runs", write, retryingWhenBusy(async (c) => {
    const req = await readJson(c, CreateRunRequestSchema);
    assertDriversAllowed(c.get("principal"), [req.driverInstanceId]);
    return c.json(runtime.runs.createRun(req), 201);
  }));
  app.post("/v1/runs/:runId/tool-calls", write, ofRun, retryingWhenBusy(async (c) => {
    const res = runtime.runs.enqueueToolCall(id(c.req.param("runId")), await readJson(c, EnqueueToolCallRequestSchema));
    return c.json(res, res.replayed ? 200 : 201);
  }));
  app.get("/v1/runs/:runId", read, ofRun, retryingWhenBusy((c) => c.json(runtime.runs.getRunView(id(c.req.param("runId"))))));
  app.get("/v1/runs/:runId/events", read, ofRun, retryingWhenBusy((c) => {
    const q = parseOrThrow(RunEventsQuerySchema, c.req.query());
    return c.json({ events: runtime.runs.listEvents(id(c.req.param("runId")), q.afterSeq) });
  }));
  app.delete("/v1/runs/:runId", del, ofRun, retryingWhenBusy((c) => {
    runtime.runs.deleteRun(id(c.req.param("runId")));
    return c.body(null, 204);
  }));
  app.delete("/v1/sessions/:sessionId", del, retryingWhenBusy((c) => {
    const sessionId = id(c.req.param("sessionId"));
    assertDriversAllowed(c.get("principal"), runtime.runs.driversOfSession(sessionId));
    runtime.runs.deleteSession(sessionId);
    return c.body(null, 204);
  }));
  app.delete("/v1/drivers/:driverInstanceId", del, retryingWhenBusy((c) => {
    const driverInstanceId = id(c.req.param("driverInstanceId"));
    assertDriversAllowed(c.get("principal"), [driverInstanceId]);
    runtime.runs.purgeDriver(driverInstanceId);
    return c.body(null, 204);
  }));
  return app;
}
