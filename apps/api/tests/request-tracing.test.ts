// Traces in the API: an enqueue over HTTP continues the agent's trace (HTTP span, store transaction)
// and the command carries that trace to the Driver, also when it is delivered again.
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { startTracing, type Tracing } from "@mosoo/telemetry";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultCredential, TEST_AUTH } from "./helpers/http-call.js";
import { buildHttpApp, createTestWorld, type HttpApp, type TestWorld } from "./kit/index.js";

const AGENT_TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const AGENT_SPAN_ID = "00f067aa0ba902b7";
const AGENT_TRACEPARENT = `00-${AGENT_TRACE_ID}-${AGENT_SPAN_ID}-01`;

let world: TestWorld;
let app: HttpApp;
let exporter: InMemorySpanExporter;
let tracing: Tracing;
beforeEach(async () => {
  exporter = new InMemorySpanExporter();
  tracing = await startTracing({ serviceName: "mosoo-api-test", env: {}, exporter });
  world = createTestWorld();
  app = buildHttpApp(world.runtime, TEST_AUTH);
});
afterEach(async () => {
  world.close();
  await tracing.shutdown();
});

async function call(
  method: string,
  path: string,
  opts: { body?: unknown; token?: string | undefined; headers?: Record<string, string> } = {},
) {
  const token = opts.token ?? defaultCredential(method, path);
  const res = await app.request(path, {
    method,
    headers: {
      ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...opts.headers,
    },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function queuedCall(headers: Record<string, string>) {
  const reg = await call("POST", "/v1/drivers/register", { body: { name: "d1" } });
  const token = reg.body["driverToken"] as string;
  const conn = await call("POST", "/v1/drivers/connect", { token });
  const run = await call("POST", "/v1/runs", { body: { driverInstanceId: reg.body["driverInstanceId"] } });
  const enqueue = await call("POST", `/v1/runs/${run.body["runId"]}/tool-calls`, {
    body: { serverId: "tracker", toolName: "createIssue", arguments: { title: "a" }, requestId: "r" },
    headers,
  });
  expect(enqueue.status).toBe(201);
  return { token, connectionId: conn.body["connectionId"] as string };
}

const spansNamed = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);

describe("traces in the API", () => {
  it("continues the agent's traceparent through the enqueue and hands it to the Driver with the command", async () => {
    const driver = await queuedCall({ traceparent: AGENT_TRACEPARENT });
    const [http] = spansNamed("POST /v1/runs/:runId/tool-calls");
    expect(http?.spanContext().traceId).toBe(AGENT_TRACE_ID);
    expect(http?.parentSpanContext?.spanId).toBe(AGENT_SPAN_ID);
    expect(http?.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/runs/:runId/tool-calls",
      "http.response.status_code": 201,
    });
    const enqueueTx = spansNamed("store.transaction").filter((s) => s.parentSpanContext?.spanId === http?.spanContext().spanId);
    expect(enqueueTx.length).toBeGreaterThan(0);
    expect(enqueueTx[0]?.attributes["db.system.name"]).toBe("sqlite");
    expect(enqueueTx.every((s) => s.spanContext().traceId === AGENT_TRACE_ID)).toBe(true);

    const path = `/v1/drivers/commands/next?connectionId=${driver.connectionId}&waitMs=0`;
    const first = await call("GET", path, { token: driver.token });
    const traceparent = first.body["command"]?.traceContext?.traceparent as string;
    expect(traceparent.split("-")[1]).toBe(AGENT_TRACE_ID);
    // the command's parent is one of the enqueue's store transactions (the one that wrote it)
    expect(enqueueTx.map((s) => s.spanContext().spanId)).toContain(traceparent.split("-")[2]);

    // delivered again on a new connection: the same trace context, read back from the store
    const again = await call("POST", "/v1/drivers/connect", { token: driver.token });
    const second = await call("GET", `/v1/drivers/commands/next?connectionId=${again.body["connectionId"]}&waitMs=0`, {
      token: driver.token,
    });
    expect(second.body["command"]).toMatchObject({ redelivery: true, traceContext: { traceparent } });
  });

  it("starts a new trace for a malformed traceparent, and the command still carries a valid one", async () => {
    const driver = await queuedCall({ traceparent: "00-zzzz-not-a-trace" });
    const [http] = spansNamed("POST /v1/runs/:runId/tool-calls");
    expect(http?.parentSpanContext).toBeUndefined();
    const next = await call("GET", `/v1/drivers/commands/next?connectionId=${driver.connectionId}&waitMs=0`, { token: driver.token });
    expect(next.body["command"]?.traceContext?.traceparent).toMatch(new RegExp(`^00-${http?.spanContext().traceId}-[0-9a-f]{16}-01$`));
  });
});
