// Traces in the Driver: a command's trace context (from the API) is continued by the command's span,
// the MCP call's span, the API requests it makes, and reaches the MCP server as `_meta.traceparent`.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IDEMPOTENCY_KEY_META } from "@mosoo/contracts";
import { startTracing, type Tracing } from "@mosoo/telemetry";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDriver } from "../src/driver-runner.js";
import { FakeDriverApi } from "./helpers/fake-driver-api.js";
import { captureLogger } from "./helpers/log-capture.js";
import { mcpExecuteEnvelope } from "./helpers/recording-api.js";
import { startHttpMcpServer, ToolRecorder } from "./helpers/recording-mcp-server.js";

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const API_SPAN_ID = "b7ad6b7169203331";

let api: FakeDriverApi;
let mcpServer: { url: string; close: () => Promise<void> };
let recorder: ToolRecorder;
let exporter: InMemorySpanExporter;
let tracing: Tracing;
beforeEach(async () => {
  exporter = new InMemorySpanExporter();
  tracing = await startTracing({ serviceName: "mosoo-driver-test", env: {}, exporter });
  api = new FakeDriverApi();
  await api.start();
  recorder = new ToolRecorder();
  mcpServer = await startHttpMcpServer(recorder);
});
afterEach(async () => {
  await api.stop();
  await mcpServer.close();
  await tracing.shutdown();
});

async function runOneCommand(envelope: ReturnType<typeof mcpExecuteEnvelope>): Promise<void> {
  const { logger } = captureLogger();
  const stateFile = join(await mkdtemp(join(tmpdir(), "driver-tracing-")), "driver-state.json");
  const loop = await createDriver(
    {
      apiUrls: [api.url],
      name: "driver-test",
      stateFile,
      mcpConfigFile: "(inline)",
      toolTimeoutMs: 5_000,
      pollWaitMs: 50,
      logLevel: "debug",
      finalizeOnExit: false,
    },
    logger,
    {
      mcpConfig: { servers: { issues: { type: "http", url: mcpServer.url } } },
      apiRetry: { retries: 1, minTimeoutMs: 1, maxTimeoutMs: 5 },
      backoffMs: { min: 5, max: 20 },
    },
  );
  api.queue.push(envelope);
  const running = loop.run();
  const deadline = Date.now() + 10_000;
  while (api.requestsOf("commandUpdate").length < 2) {
    if (Date.now() > deadline) throw new Error("the command did not finish in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  loop.stop("SIGTERM");
  await running;
}

describe("traces in the Driver", () => {
  it("continues the command's trace: driver.command → mcp.tools_call → _meta.traceparent at the MCP server", async () => {
    const envelope = {
      ...mcpExecuteEnvelope(),
      traceContext: { traceparent: `00-${TRACE_ID}-${API_SPAN_ID}-01`, tracestate: "vendor=abc" },
    };
    await runOneCommand(envelope);

    const spans = exporter.getFinishedSpans();
    const command = spans.find((s) => s.name === "driver.command");
    const mcpCall = spans.find((s) => s.name === "mcp.tools_call");
    expect(command?.spanContext().traceId).toBe(TRACE_ID);
    expect(command?.parentSpanContext?.spanId).toBe(API_SPAN_ID);
    expect(command?.attributes).toMatchObject({ "mosoo.command.id": envelope.commandId, "mosoo.command.outcome": "completed" });
    expect(mcpCall?.spanContext().traceId).toBe(TRACE_ID);
    expect(mcpCall?.parentSpanContext?.spanId).toBe(command?.spanContext().spanId);
    // the MCP call's span names the effect the API claimed (its completion goes to /effects/<id>/complete)
    const completedEffectId = api.requestsOf("effectComplete")[0]?.path.split("/").at(-2);
    expect(completedEffectId).toMatch(/^[0-9A-Z]{26}$/);
    expect(mcpCall?.attributes["mosoo.effect.id"]).toBe(completedEffectId);

    // the MCP server got the trace in `_meta`, the MCP call's span as the parent, next to the idempotency key
    const meta = recorder.calls[0]?.meta;
    expect(meta?.["traceparent"]).toBe(`00-${TRACE_ID}-${mcpCall?.spanContext().spanId}-01`);
    expect(meta?.["tracestate"]).toBe("vendor=abc");
    expect(typeof meta?.[IDEMPOTENCY_KEY_META]).toBe("string");

    // the claim and the report to the API belong to the same trace
    for (const route of ["effectClaim", "effectComplete", "commandUpdate"]) {
      for (const request of api.requestsOf(route)) expect(request.traceparent?.split("-")[1]).toBe(TRACE_ID);
    }
  });

  it("sends no trace context when the command carries none and tracing is off", async () => {
    await tracing.shutdown();
    await runOneCommand(mcpExecuteEnvelope());
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    expect(recorder.calls[0]?.meta?.["traceparent"]).toBeUndefined();
    expect(api.requestsOf("effectClaim")[0]?.traceparent).toBeUndefined();
  });
});
