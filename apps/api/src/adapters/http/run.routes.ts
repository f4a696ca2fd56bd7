import { Hono } from "hono";
import { CreateRunRequestSchema, EnqueueToolCallRequestSchema, RunEventsQuerySchema, UlidSchema } from "@mosoo/contracts";
import type { Runtime } from "../../modules/runtime/application/runtime.js";
import { parseOrThrow, readJson } from "./http-errors.js";
import { retryingWhenBusy } from "./store-retry.js";

/** The run API: create a run, enqueue a tool call, read a run and its events, delete runs, sessions and finalized Drivers. */
export function runRoutes(runtime: Runtime): Hono {
  const app = new Hono();
  const id = (value: string | undefined) => parseOrThrow(UlidSchema, value);

  app.post("/v1/runs", retryingWhenBusy(async (c) => c.json(runtime.runs.createRun(await readJson(c, CreateRunRequestSchema)), 201)));
  app.post("/v1/runs/:runId/tool-calls", retryingWhenBusy(async (c) => {
    const res = runtime.runs.enqueueToolCall(id(c.req.param("runId")), await readJson(c, EnqueueToolCallRequestSchema));
    return c.json(res, res.replayed ? 200 : 201);
  }));
  app.get("/v1/runs/:runId", retryingWhenBusy((c) => c.json(runtime.runs.getRunView(id(c.req.param("runId"))))));
  app.get("/v1/runs/:runId/events", retryingWhenBusy((c) => {
    const q = parseOrThrow(RunEventsQuerySchema, c.req.query());
    return c.json({ events: runtime.runs.listEvents(id(c.req.param("runId")), q.afterSeq) });
  }));
  app.delete("/v1/runs/:runId", retryingWhenBusy((c) => {
    runtime.runs.deleteRun(id(c.req.param("runId")));
    return c.body(null, 204);
  }));
  app.delete("/v1/sessions/:sessionId", retryingWhenBusy((c) => {
    runtime.runs.deleteSession(id(c.req.param("sessionId")));
    return c.body(null, 204);
  }));
  app.delete("/v1/drivers/:driverInstanceId", retryingWhenBusy((c) => {
    runtime.runs.purgeDriver(id(c.req.param("driverInstanceId")));
    return c.body(null, 204);
  }));
  return app;
}
