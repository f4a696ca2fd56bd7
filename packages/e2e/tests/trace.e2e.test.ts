import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DRIVER_API, RUN_API } from "@mosoo/contracts";
import { afterAll, describe, expect, it } from "vitest";
import { pollUntil, RunApiClient } from "../src/http-clients.js";
import type { ManagedProcess } from "../src/managed-process.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../src/otlp-receiver.js";
import { startApiProcess, startDriverProcess, startProviderProcess, writeMcpConfig } from "../src/stack.js";

// One trace across processes (docs/OPERATIONS.md "Traces"): an agent enqueues a tool call with its own
// W3C `traceparent`; the API (a real process) continues it, stores it on the command; the Driver (a
// real process) continues it in its command span, its MCP call and the API requests it makes; the
// fixture provider (a real process) receives it as `_meta.traceparent`. Both runtime processes export
// OTLP/JSON to a receiver inside this test; every wait is for a condition (a span, a log line, a view).

const dirs: string[] = [];
const procs: ManagedProcess[] = [];
let receiver: OtlpReceiver | undefined;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill("SIGKILL")));
  await receiver?.close();
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** Generous bound (ms) of each wait: each step takes a second or two; nothing depends on how fast. */
const WAIT_MS = 60_000;
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const AGENT_SPAN_ID = "00f067aa0ba902b7";

/** The chain of span ids above `span` among `spans` (its parent, the parent's parent, …), across processes. */
function ancestorsOf(span: ReceivedSpan, spans: readonly ReceivedSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const out: string[] = [];
  for (let id = span.parentSpanId; id !== undefined && !out.includes(id); id = byId.get(id)?.parentSpanId) out.push(id);
  return out;
}

describe("real processes: one trace from the agent's enqueue to the provider", () => {
  it("agent traceparent → API spans → command → Driver spans → MCP _meta.traceparent at the provider, and the Driver's API requests in the same trace", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-trace-"));
    dirs.push(workDir);
    receiver = await startOtlpReceiver();
    // Export promptly (the batch processor's delay, ms): how soon spans arrive, never asserted.
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "200" };
    const provider = await startProviderProcess(join(workDir, "provider.db"));
    procs.push(provider.proc);
    const api = await startApiProcess(join(workDir, "api.db"), { ...otel, MOSOO_EFFECT_RECONCILIATION: "off" });
    procs.push(api.proc);
    const driver = await startDriverProcess({
      apiUrl: api.url,
      stateFile: join(workDir, "driver-state.json"),
      mcpConfigFile: writeMcpConfig(workDir, { tracker: provider.url }),
      name: "driver-trace",
      enrollmentToken: api.credentials.enrollmentToken,
      env: otel,
    });
    procs.push(driver.proc);

    // The agent's request carries its own trace context.
    const runs = new RunApiClient(api.url, api.credentials.apiKey);
    const { runId } = await runs.createRun(driver.driverInstanceId);
    const enqueued = await fetch(api.url + RUN_API.enqueueToolCall.path.replace(":runId", encodeURIComponent(runId)), {
      method: "POST",
      headers: {
        authorization: `Bearer ${api.credentials.apiKey}`,
        "content-type": "application/json",
        traceparent: `00-${TRACE_ID}-${AGENT_SPAN_ID}-01`,
      },
      body: JSON.stringify({
        serverId: "tracker",
        toolName: "createIssue",
        arguments: { title: "Disk full on db-1", body: "seen at 03:12" },
        toolCallId: "tc-trace-1",
      }),
    });
    expect(enqueued.status).toBe(201);
    await pollUntil(
      async () => ((await runs.getToolCall(runId, "tc-trace-1")).status === "succeeded" ? true : undefined),
      WAIT_MS,
      "the tool call succeeds",
    );

    // The provider saw the trace in `_meta.traceparent` of the MCP call.
    const committed = await provider.proc.waitForLine(
      (j) => typeof j["traceparent"] === "string" && j["tool"] === "createIssue",
      WAIT_MS,
      "the provider's log line with the call's traceparent",
    );
    const [, providerTraceId, providerParentId] = String(committed["traceparent"]).split("-");
    expect(providerTraceId).toBe(TRACE_ID);

    // Every span of the trace reached the receiver: the enqueue, the Driver's command and MCP call,
    // and the API's handling of the Driver's claim and completion.
    const inTrace = () => receiver!.spans.filter((s) => s.traceId === TRACE_ID);
    const driverRequest = (path: string) =>
      inTrace().find((s) => s.service === "mosoo-api" && s.attributes["http.route"] === path && s.parentSpanId !== undefined);
    await pollUntil(
      async () =>
        inTrace().some((s) => s.name === "mcp.tools_call") &&
        inTrace().some((s) => s.name === "driver.command") &&
        driverRequest(DRIVER_API.effectClaim.path) &&
        driverRequest(DRIVER_API.effectComplete.path)
          ? true
          : undefined,
      WAIT_MS,
      "the trace's spans at the receiver",
    );
    const spans = inTrace();
    const enqueue = spans.find((s) => s.service === "mosoo-api" && s.attributes["http.route"] === RUN_API.enqueueToolCall.path);
    expect(enqueue).toMatchObject({ parentSpanId: AGENT_SPAN_ID, name: `POST ${RUN_API.enqueueToolCall.path}` });
    const command = spans.find((s) => s.service === "mosoo-driver" && s.name === "driver.command")!;
    const mcpCall = spans.find((s) => s.service === "mosoo-driver" && s.name === "mcp.tools_call")!;
    // The command span continues the API's context of the enqueue (stored on the command), below the enqueue's server span.
    expect(spans.find((s) => s.spanId === command.parentSpanId)?.service).toBe("mosoo-api");
    expect(ancestorsOf(command, spans)).toContain(enqueue!.spanId);
    expect(ancestorsOf(command, spans).at(-1)).toBe(AGENT_SPAN_ID);
    expect(mcpCall.parentSpanId).toBe(command.spanId);
    // The provider's parent is the MCP call's span.
    expect(providerParentId).toBe(mcpCall.spanId);
    // The Driver's API requests: served by the API as spans whose parents are the Driver's spans of this command.
    for (const path of [DRIVER_API.effectClaim.path, DRIVER_API.effectComplete.path]) {
      const served = driverRequest(path)!;
      const parent = spans.find((s) => s.spanId === served.parentSpanId);
      expect(parent?.service).toBe("mosoo-driver");
      expect([parent!.spanId, ...ancestorsOf(parent!, spans)]).toContain(command.spanId);
    }
    // Nothing of this call was exported under another trace: the span tree is the agent's one trace.
    const commandSpans = receiver.spans.filter((s) => s.name === "driver.command" || s.name === "mcp.tools_call");
    expect(new Set(commandSpans.map((s) => s.traceId))).toEqual(new Set([TRACE_ID]));
  }, 240_000);
});
