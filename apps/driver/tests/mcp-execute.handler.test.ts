import { IDEMPOTENCY_KEY_META, newUlid } from "@mosoo/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { ApiRequestError, ApiUnavailableError } from "../src/api-errors.js";
import type { McpConfig } from "../src/driver-config.contract.js";
import { handleMcpExecuteCommand, type McpExecuteHandlerDeps } from "../src/mcp-execute.handler.js";
import { McpConnections } from "../src/mcp-connections.js";
import { captureLogger } from "./helpers/log-capture.js";
import { mcpExecuteEnvelope, RecordingApi } from "./helpers/recording-api.js";
import { inMemoryTransportFactory, ToolRecorder } from "./helpers/recording-mcp-server.js";

const CONFIG: McpConfig = { servers: { issues: { type: "http", url: "http://127.0.0.1:9/mcp" } } };

interface Harness {
  api: RecordingApi;
  recorder: ToolRecorder;
  events: string[];
  mcp: McpConnections;
  lines: Record<string, unknown>[];
  deps: McpExecuteHandlerDeps;
}

const open: McpConnections[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.closeAll()));
});

function harness(toolTimeoutMs = 2_000): Harness {
  const events: string[] = [];
  const api = new RecordingApi(events);
  const recorder = new ToolRecorder(events);
  // The real McpConnections, linked in memory to a real SDK McpServer (no network).
  const mcp = new McpConnections(CONFIG, { createTransport: inMemoryTransportFactory(recorder) });
  open.push(mcp);
  const { logger, lines } = captureLogger();
  const driverInstanceId = newUlid();
  return {
    api,
    recorder,
    events,
    mcp,
    lines,
    deps: { api, mcp, connectionId: newUlid(), logger: logger.child({ driverInstanceId }), toolTimeoutMs },
  };
}

describe("handleMcpExecuteCommand: execute claim", () => {
  it("calls the tool once with the idempotency key in _meta, and stores the result before completing the command", async () => {
    const h = harness();
    const envelope = mcpExecuteEnvelope();
    const outcome = await handleMcpExecuteCommand(envelope, h.deps);

    expect(h.recorder.calls).toHaveLength(1);
    const claim = h.api.claim;
    if (claim.kind !== "execute") throw new Error("fixture claim must be execute");
    expect(h.recorder.calls[0]?.meta?.[IDEMPOTENCY_KEY_META]).toBe(claim.idempotencyKey);
    expect(h.recorder.calls[0]?.args).toEqual({ title: "Broken login" });

    expect(h.events).toEqual([
      "api:commandUpdate:accepted",
      "api:effectClaim",
      "tool:create_issue",
      "api:effectComplete",
      "api:commandUpdate:completed",
    ]);
    const [complete] = h.api.callsOf("effectComplete");
    expect(complete?.effectId).toBe(claim.effectId);
    expect(complete?.body).toMatchObject({
      connectionId: h.deps.connectionId,
      attempt: 1,
      result: { outputText: "created Broken login", requestId: "req-1", serverId: "issues", toolName: "create_issue" },
      receipt: { "io.fixture/operation-id": "op-1" },
    });
    const completed = h.api.callsOf("commandUpdate").at(-1);
    expect(completed?.commandId).toBe(envelope.commandId);
    expect(completed?.body).toEqual({ connectionId: h.deps.connectionId, status: "completed", result: complete?.body.result });
    expect(outcome).toMatchObject({ status: "completed", effectId: claim.effectId });
  });

  it("treats an isError tool result as the provider's answer: stored and completed, not fenced", async () => {
    const h = harness();
    await handleMcpExecuteCommand(mcpExecuteEnvelope({ toolName: "reject_issue" }), h.deps);
    expect(h.recorder.callsOf("reject_issue")).toHaveLength(1);
    expect(h.api.callsOf("effectMarkUnknown")).toHaveLength(0);
    expect(h.api.callsOf("effectComplete")[0]?.body.result).toMatchObject({ isError: true, outputText: "title Broken login is taken" });
    expect(h.api.callsOf("effectComplete")[0]?.body.receipt).toBeNull();
    expect(h.api.callsOf("commandUpdate").at(-1)?.body.status).toBe("completed");
  });

  it("records a hostile provider's answer the API would refuse as it is: lone surrogates become U+FFFD, a refused receipt is left out", async () => {
    const h = harness();
    await handleMcpExecuteCommand(mcpExecuteEnvelope({ toolName: "odd_issue" }), h.deps);
    const [complete] = h.api.callsOf("effectComplete");
    expect(complete?.body.result.outputText).toBe("created Broken login \ufffd");
    expect(complete?.body.receipt).toBeNull();
    expect(h.lines.some((l) => l["msg"] === "effect.receipt_dropped")).toBe(true);
    expect(h.api.callsOf("commandUpdate").at(-1)?.body.status).toBe("completed");
  });

  it("fences the effect when the call times out: markUnknown, then failed external_effect.unknown; the tool ran once", async () => {
    const h = harness(300);
    const outcome = await handleMcpExecuteCommand(mcpExecuteEnvelope({ toolName: "slow_issue" }), h.deps);
    expect(h.recorder.callsOf("slow_issue")).toHaveLength(1);
    expect(h.events.slice(-3)).toEqual(["tool:slow_issue", "api:effectMarkUnknown", "api:commandUpdate:failed"]);
    expect(h.api.callsOf("effectComplete")).toHaveLength(0);
    const [mark] = h.api.callsOf("effectMarkUnknown");
    expect(mark?.effectId).toBe(h.api.effectId);
    expect(mark?.body.attempt).toBe(1);
    expect(mark?.body.reason).toMatch(/^mcp_call_failed: .*timed out/i);
    const failed = h.api.callsOf("commandUpdate").at(-1)?.body;
    expect(failed).toMatchObject({
      status: "failed",
      error: { code: "external_effect.unknown", retryable: false, details: { effectId: h.api.effectId } },
    });
    expect(outcome.status).toBe("failed");
  });

  it("fences the effect when the server dies after committing; it is not called again", async () => {
    const h = harness();
    await handleMcpExecuteCommand(mcpExecuteEnvelope({ toolName: "die_after_commit" }), h.deps);
    expect(h.recorder.callsOf("die_after_commit")).toHaveLength(1);
    expect(h.api.callsOf("effectMarkUnknown")).toHaveLength(1);
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({ status: "failed", error: { code: "external_effect.unknown" } });
  });

  it("fails unknown (not completed) when the ledger takes neither the result nor the late evidence", async () => {
    const h = harness();
    h.api.completeAnswer = async () => ({ outcome: "rejected", status: "unknown", reason: "effect is unknown" });
    h.api.lateResultAnswer = async () => ({ outcome: "rejected", status: "unknown", reason: "attempt 1 is not the current attempt 2" });
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), h.deps);
    expect(h.api.callsOf("effectLateResult")).toHaveLength(1);
    expect(h.recorder.calls).toHaveLength(1);
    expect(h.api.callsOf("commandUpdate").map((c) => c.body.status)).toEqual(["accepted", "failed"]);
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({
      error: { code: "external_effect.unknown", details: { effectId: h.api.effectId } },
    });
  });

  it("marks the effect unknown when the API refuses the result with a 4xx", async () => {
    const h = harness();
    h.api.completeAnswer = async () => {
      throw new ApiRequestError(400, "request.invalid", "receipt too large");
    };
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), h.deps);
    expect(h.api.callsOf("effectMarkUnknown")[0]?.body.reason).toBe("effect_complete_refused: request.invalid");
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({ status: "failed", error: { code: "external_effect.unknown" } });
  });

  it("sends no terminal update when the API is unreachable after the call (left for redelivery)", async () => {
    const h = harness();
    h.api.completeAnswer = async () => {
      throw new ApiUnavailableError("POST effectComplete failed: ECONNREFUSED");
    };
    await expect(handleMcpExecuteCommand(mcpExecuteEnvelope(), h.deps)).rejects.toBeInstanceOf(ApiUnavailableError);
    expect(h.recorder.calls).toHaveLength(1);
    expect(h.api.callsOf("commandUpdate").map((c) => c.body.status)).toEqual(["accepted"]);
  });
});

describe("handleMcpExecuteCommand: claims that must not call the provider", () => {
  it("completed claim: zero tool calls, completed with the stored result", async () => {
    const h = harness();
    const stored = { outputText: "created earlier", requestId: "req-1", serverId: "issues", toolName: "create_issue" };
    h.api.claim = { kind: "completed", effectId: h.api.effectId, result: stored };
    const outcome = await handleMcpExecuteCommand(mcpExecuteEnvelope({ status: "accepted", redelivery: true }), h.deps);
    expect(h.recorder.calls).toHaveLength(0);
    expect(h.api.callsOf("effectComplete")).toHaveLength(0);
    expect(h.api.callsOf("commandUpdate").map((c) => c.body)).toEqual([
      { connectionId: h.deps.connectionId, status: "completed", result: stored },
    ]);
    expect(outcome).toMatchObject({ status: "completed", result: stored });
  });

  it("unknown claim: zero tool calls, failed external_effect.unknown with details.effectId", async () => {
    const h = harness();
    h.api.claim = { kind: "unknown", effectId: h.api.effectId };
    await handleMcpExecuteCommand(mcpExecuteEnvelope({ status: "accepted", redelivery: true }), h.deps);
    expect(h.recorder.calls).toHaveLength(0);
    const body = h.api.callsOf("commandUpdate").at(-1)?.body;
    if (body?.status !== "failed") throw new Error(`expected a failed update, got ${body?.status}`);
    expect(body.error.code).toBe("external_effect.unknown");
    expect(body.error.retryable).toBe(false);
    expect(body.error.details["effectId"]).toBe(h.api.effectId);
    expect(h.api.callsOf("effectMarkUnknown")).toHaveLength(0);
  });

  it("not_executed claim: zero tool calls, failed external_effect.not_executed, retryable", async () => {
    const h = harness();
    h.api.claim = { kind: "not_executed", effectId: h.api.effectId };
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), h.deps);
    expect(h.recorder.calls).toHaveLength(0);
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({
      status: "failed",
      error: { code: "external_effect.not_executed", retryable: true, details: { effectId: h.api.effectId } },
    });
  });
});

describe("handleMcpExecuteCommand: delivery and servers", () => {
  it("fails with mcp.server_unavailable WITHOUT a claim when the server id is not configured", async () => {
    const h = harness();
    const outcome = await handleMcpExecuteCommand(mcpExecuteEnvelope({ serverId: "billing" }), h.deps);
    expect(h.api.callsOf("effectClaim")).toHaveLength(0);
    expect(h.recorder.calls).toHaveLength(0);
    expect(h.api.callsOf("commandUpdate").map((c) => c.body.status)).toEqual(["accepted", "failed"]);
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({
      error: { code: "mcp.server_unavailable", retryable: false, details: { serverId: "billing", reason: "not_configured" } },
    });
    expect(outcome).toMatchObject({ status: "failed", effectId: null });
  });

  it("fails with mcp.server_unavailable (retryable) WITHOUT a claim when a configured server cannot be reached", async () => {
    const events: string[] = [];
    const api = new RecordingApi(events);
    // Port 9 (discard) on loopback: nothing listens, the connect is refused.
    const mcp = new McpConnections({ servers: { issues: { type: "http", url: "http://127.0.0.1:9/mcp" } } }, { connectTimeoutMs: 2_000 });
    open.push(mcp);
    const { logger } = captureLogger();
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), { api, mcp, connectionId: newUlid(), logger, toolTimeoutMs: 1_000 });
    expect(api.callsOf("effectClaim")).toHaveLength(0);
    expect(api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({
      status: "failed",
      error: { code: "mcp.server_unavailable", retryable: true, details: { serverId: "issues", reason: "connect_failed" } },
    });
  });

  it("an accepted redelivery skips the accept update and goes straight to the claim", async () => {
    const h = harness();
    await handleMcpExecuteCommand(mcpExecuteEnvelope({ status: "accepted", redelivery: true }), h.deps);
    expect(h.events[0]).toBe("api:effectClaim");
    expect(h.api.callsOf("commandUpdate").map((c) => c.body.status)).toEqual(["completed"]);
    expect(h.recorder.calls).toHaveLength(1);
  });

  it("a queued command is accepted first", async () => {
    const h = harness();
    await handleMcpExecuteCommand(mcpExecuteEnvelope({ status: "queued" }), h.deps);
    expect(h.events[0]).toBe("api:commandUpdate:accepted");
  });

  it("stops without claiming when the API rejects the accept (the command is no longer ours)", async () => {
    const h = harness();
    h.api.acceptOutcome = { outcome: "rejected", status: "cancelled", reason: "command is cancelled" };
    const outcome = await handleMcpExecuteCommand(mcpExecuteEnvelope(), h.deps);
    expect(outcome.status).toBe("skipped");
    expect(h.api.callsOf("effectClaim")).toHaveLength(0);
    expect(h.recorder.calls).toHaveLength(0);
  });

  it("logs command and effect lines with commandId, effectId and driverInstanceId", async () => {
    const h = harness();
    const envelope = mcpExecuteEnvelope();
    await handleMcpExecuteCommand(envelope, h.deps);
    const names = h.lines.map((l) => l["msg"]);
    for (const name of ["command.received", "effect.claimed", "tool.called", "tool.returned", "effect.completed", "command.terminal"]) {
      expect(names).toContain(name);
    }
    const commandLines = h.lines.filter((l) => typeof l["msg"] === "string" && /^(command|effect|tool)\./.test(l["msg"]));
    expect(commandLines.length).toBeGreaterThanOrEqual(6);
    for (const line of commandLines) {
      expect(line["commandId"]).toBe(envelope.commandId);
      expect(line).toHaveProperty("effectId");
      expect(typeof line["driverInstanceId"]).toBe("string");
    }
    expect(h.lines.find((l) => l["msg"] === "effect.claimed")).toMatchObject({ kind: "execute", effectId: h.api.effectId });
    expect(h.lines.find((l) => l["msg"] === "command.terminal")).toMatchObject({ status: "completed", effectId: h.api.effectId });
  });
});
