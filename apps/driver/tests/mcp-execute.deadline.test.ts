import { fingerprintArguments, IDEMPOTENCY_KEY_META, newUlid, sendDeadlinePassed } from "@mosoo/contracts";
import { afterEach, describe, expect, it } from "vitest";
import type { McpConfig } from "../src/driver-config.contract.js";
import { handleMcpExecuteCommand, type McpExecuteHandlerDeps } from "../src/mcp-execute.handler.js";
import { McpConnections, SendRefusedError, type McpToolCaller } from "../src/mcp-connections.js";
import { captureLogger } from "./helpers/log-capture.js";
import { mcpExecuteEnvelope, RecordingApi } from "./helpers/recording-api.js";
import { inMemoryTransportFactory, ToolRecorder } from "./helpers/recording-mcp-server.js";

// docs/DESIGN.md §3 rule 12 (send-by deadline) and rule 13 (late evidence), on the Driver's side.
// The Driver's monotonic clock is a manual one: the claim answer "arrives late" when the test moves
// the clock while the claim request is in flight. No real timer decides anything here.

const CONFIG: McpConfig = { servers: { issues: { type: "http", url: "http://127.0.0.1:9/mcp" } } };
const open: McpConnections[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.closeAll()));
});

function harness(sendWithinMs: number) {
  const events: string[] = [];
  const api = new RecordingApi(events);
  if (api.claim.kind === "execute") api.claim = { ...api.claim, sendWithinMs };
  const recorder = new ToolRecorder(events);
  const mcp = new McpConnections(CONFIG, { createTransport: inMemoryTransportFactory(recorder) });
  open.push(mcp);
  const { logger, lines } = captureLogger();
  const clock = { nowMs: 1_000 };
  const deps: McpExecuteHandlerDeps = {
    api,
    mcp,
    connectionId: newUlid(),
    logger,
    toolTimeoutMs: 2_000,
    monotonicNowMs: () => clock.nowMs,
  };
  return { api, recorder, events, lines, clock, deps };
}

describe("sendDeadlinePassed (the one deadline test the Driver uses)", () => {
  it("is false strictly inside the deadline and true at and after it, or when the clock went backwards", () => {
    expect(sendDeadlinePassed(100, 100, 50)).toBe(false);
    expect(sendDeadlinePassed(100, 149, 50)).toBe(false);
    expect(sendDeadlinePassed(100, 150, 50)).toBe(true);
    expect(sendDeadlinePassed(100, 10_000, 50)).toBe(true);
    expect(sendDeadlinePassed(100, 99, 50)).toBe(true);
  });
});

describe("Driver: send-by deadline of an execute claim (docs/DESIGN.md §3 rule 12)", () => {
  it("a claim answer read after the deadline never produces a tools/call: the Driver reports the missed deadline and fails not_executed", async () => {
    const h = harness(5_000);
    h.api.onClaim = () => {
      h.clock.nowMs += 12_000; // the answer was held 12 s (repro 3's proxy)
    };
    const outcome = await handleMcpExecuteCommand(mcpExecuteEnvelope(), h.deps);

    expect(h.recorder.calls).toHaveLength(0);
    expect(h.events).toEqual(["api:commandUpdate:accepted", "api:effectClaim", "api:effectDeadlineMissed", "api:commandUpdate:failed"]);
    const [report] = h.api.callsOf("effectDeadlineMissed");
    expect(report?.effectId).toBe(h.api.effectId);
    expect(report?.body).toEqual({ connectionId: h.deps.connectionId, attempt: 1, elapsedMs: 12_000 });
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({
      status: "failed",
      error: {
        code: "external_effect.not_executed",
        retryable: true,
        details: { effectId: h.api.effectId, reason: "send_deadline_missed" },
      },
    });
    expect(outcome.status).toBe("failed");
    expect(h.lines.some((l) => l["msg"] === "effect.send_deadline_missed")).toBe(true);
  });

  it("the deadline passes while the MCP client reconnects after the check: nothing is sent, the missed deadline is reported", async () => {
    const h = harness(5_000);
    const real = h.deps.mcp as McpConnections;
    // the connection dropped after the claim: callTool first reconnects, which takes 6 s here
    const reconnecting: McpToolCaller = {
      hasServer: (id) => real.hasServer(id),
      ensureConnected: (id) => real.ensureConnected(id),
      keyPlacement: (id) => real.keyPlacement(id),
      callTool: async (id, request, options) => {
        h.clock.nowMs += 6_000;
        return real.callTool(id, request, options);
      },
    };
    const outcome = await handleMcpExecuteCommand(mcpExecuteEnvelope(), { ...h.deps, mcp: reconnecting });

    expect(h.recorder.calls).toHaveLength(0);
    expect(h.api.callsOf("effectDeadlineMissed")).toHaveLength(1);
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({
      status: "failed",
      error: { code: "external_effect.not_executed", retryable: true },
    });
    expect(outcome.status).toBe("failed");
  });

  it("McpConnections.callTool refuses to send when maySend answers false once the client is ready", async () => {
    const h = harness(5_000);
    const real = h.deps.mcp as McpConnections;
    await expect(
      real.callTool("issues", { name: "create_issue", arguments: { title: "t" }, _meta: {} }, { timeoutMs: 2_000, maySend: () => false }),
    ).rejects.toBeInstanceOf(SendRefusedError);
    expect(h.recorder.calls).toHaveLength(0);
    await real.callTool(
      "issues",
      { name: "create_issue", arguments: { title: "t" }, _meta: {} },
      { timeoutMs: 2_000, maySend: () => true },
    );
    expect(h.recorder.calls).toHaveLength(1);
  });

  it("exactly at the deadline is too late; one ms before it the tool is called once with the key", async () => {
    const late = harness(5_000);
    late.api.onClaim = () => {
      late.clock.nowMs += 5_000;
    };
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), late.deps);
    expect(late.recorder.calls).toHaveLength(0);
    expect(late.api.callsOf("effectDeadlineMissed")).toHaveLength(1);

    const inTime = harness(5_000);
    inTime.api.onClaim = () => {
      inTime.clock.nowMs += 4_999;
    };
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), inTime.deps);
    expect(inTime.recorder.calls).toHaveLength(1);
    const claim = inTime.api.claim;
    expect(claim.kind === "execute" && inTime.recorder.calls[0]?.meta?.[IDEMPOTENCY_KEY_META]).toBe(
      claim.kind === "execute" ? claim.idempotencyKey : "",
    );
    expect(inTime.api.callsOf("effectDeadlineMissed")).toHaveLength(0);
    expect(inTime.api.callsOf("commandUpdate").at(-1)?.body.status).toBe("completed");
  });

  it("when the API could not settle the missed deadline (the effect is no longer the claimed attempt's), the agent is told unknown, not resend", async () => {
    const h = harness(1_000);
    h.api.onClaim = () => {
      h.clock.nowMs += 2_000;
    };
    h.api.deadlineMissedAnswer = async () => ({ outcome: "rejected", status: "succeeded", reason: "effect is succeeded" });
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), h.deps);
    expect(h.recorder.calls).toHaveLength(0);
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({
      status: "failed",
      error: { code: "external_effect.unknown", retryable: false },
    });
  });
});

describe("Driver: late evidence (docs/DESIGN.md §3 rule 13)", () => {
  it("a result the ledger refused because the effect was fenced meanwhile is reported as late evidence, and the command completes when the ledger takes it", async () => {
    const h = harness(10_000);
    h.api.completeAnswer = async () => ({ outcome: "rejected", status: "unknown", reason: "effect is unknown" });
    const args = { title: "Broken login" };
    const outcome = await handleMcpExecuteCommand(mcpExecuteEnvelope({ args }), h.deps);

    expect(h.recorder.calls).toHaveLength(1);
    expect(h.events).toEqual([
      "api:commandUpdate:accepted",
      "api:effectClaim",
      "tool:create_issue",
      "api:effectComplete",
      "api:effectLateResult",
      "api:commandUpdate:completed",
    ]);
    const [late] = h.api.callsOf("effectLateResult");
    const claim = h.api.claim;
    if (claim.kind !== "execute") throw new Error("fixture claim must be execute");
    expect(late?.body).toMatchObject({
      attempt: 1,
      idempotencyKey: claim.idempotencyKey,
      toolName: "create_issue",
      requestFingerprint: fingerprintArguments(args),
      result: { serverId: "issues", toolName: "create_issue", requestId: "req-1" },
    });
    expect(outcome.status).toBe("completed");
  });

  it("a contradiction (the ledger keeps another confirmed outcome) fails the command unknown, never not_executed: the write happened", async () => {
    const h = harness(10_000);
    h.api.completeAnswer = async () => ({ outcome: "rejected", status: "not_executed", reason: "effect is not_executed" });
    h.api.lateResultAnswer = async () => ({
      outcome: "rejected",
      status: "not_executed",
      reason: "late_evidence_contradiction: the effect was settled not_executed",
    });
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), h.deps);
    expect(h.recorder.calls).toHaveLength(1);
    expect(h.api.callsOf("commandUpdate").at(-1)?.body).toMatchObject({
      status: "failed",
      error: { code: "external_effect.unknown", retryable: false, details: { effectStatus: "not_executed" } },
    });
  });
});
