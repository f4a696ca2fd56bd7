/**
 * The turn's account (docs/DESIGN.md §3 rules 14 and 16): the one pure builder of an interrupted turn's
 * run error. Every tool call is accounted for; `retryable` only when nothing of the turn was written;
 * the details stay within 4 KiB however many tool calls the turn had; the message names what completed.
 */
import { describe, expect, it } from "vitest";
import { MAX_ERROR_DETAILS_BYTES, RunErrorSchema, TurnAccountSchema, newUlid, type EffectStatus } from "@mosoo/contracts";
import { turnInterruptedRunError, turnToolCallStatus, type TurnToolCallFacts } from "../src/modules/ledger/domain/turn-account.js";
import { defaultCredential, requestJson, TEST_AUTH } from "./helpers/http-call.js";
import { buildHttpApp, connectDriver, createDoubleWorld, issueArgs } from "./kit/index.js";

const RUN = newUlid();
let seq = 0;
function call(effectStatus: EffectStatus, more: Partial<TurnToolCallFacts> = {}): TurnToolCallFacts {
  seq += 1;
  return {
    seq,
    toolCallId: `tc-${seq}`,
    serverId: "tracker",
    toolName: "createIssue",
    effectId: newUlid(),
    effectStatus,
    commandStatus: effectStatus === "succeeded" ? "completed" : "failed",
    commandErrorCode: effectStatus === "intent" ? "driver.command_driver_terminal" : null,
    compensated: false,
    compensatesEffectId: null,
    ...more,
  };
}

function account(err: { details: Record<string, unknown> }) {
  return TurnAccountSchema.parse(err.details["account"]);
}

describe("turnToolCallStatus", () => {
  it("maps every effect status to what the agent is told", () => {
    expect(turnToolCallStatus(call("executing"))).toBe("unknown");
    expect(turnToolCallStatus(call("unknown"))).toBe("unknown");
    expect(turnToolCallStatus(call("succeeded"))).toBe("succeeded");
    expect(turnToolCallStatus(call("succeeded", { compensated: true }))).toBe("compensated");
    expect(turnToolCallStatus(call("not_executed"))).toBe("not_executed");
    expect(turnToolCallStatus(call("intent"))).toBe("never_sent");
    expect(turnToolCallStatus(call("intent", { commandStatus: "queued", commandErrorCode: null }))).toBe("never_sent");
    expect(turnToolCallStatus(call("intent", { commandErrorCode: "mcp.server_unavailable" }))).toBe("failed");
  });
});

describe("RunErrorSchema", () => {
  it("refuses a retryable runtime.turn_interrupted_after_writes", () => {
    const err = turnInterruptedRunError(RUN, [call("succeeded")]);
    expect(RunErrorSchema.safeParse(err).success).toBe(true);
    expect(RunErrorSchema.safeParse({ ...err, retryable: true }).success).toBe(false);
  });
});

describe("turnInterruptedRunError", () => {
  it("nothing written: runtime.turn_interrupted, retryable, the resend wording, the account listing each call", () => {
    const calls = [call("intent"), call("not_executed"), call("intent", { commandErrorCode: "mcp.server_unavailable" })];
    const err = turnInterruptedRunError(RUN, calls, { driverInstanceId: "d1" });
    expect(RunErrorSchema.parse(err)).toMatchObject({
      code: "runtime.turn_interrupted",
      retryable: true,
      details: { driverInstanceId: "d1" },
    });
    expect(err.message).toBe("This turn was interrupted before it completed. Please resend your last request.");
    const a = account(err);
    expect(a.toolCalls.map((c) => [c.effectId, c.status])).toEqual([
      [calls[0]!.effectId, "never_sent"],
      [calls[1]!.effectId, "not_executed"],
      [calls[2]!.effectId, "failed"],
    ]);
    expect(a.toolCalls[2]!.errorCode).toBe("mcp.server_unavailable");
    expect(a).toMatchObject({ total: 3, omitted: 0, counts: { never_sent: 1, not_executed: 1, failed: 1 } });
  });

  it("an empty turn is retryable and lists nothing", () => {
    const err = turnInterruptedRunError(RUN, []);
    expect(err).toMatchObject({ code: "runtime.turn_interrupted", retryable: true, details: { account: { total: 0, toolCalls: [] } } });
  });

  it.each([["succeeded"], ["compensated"]] as const)(
    "a %s write: turn_interrupted_after_writes, not retryable, no resend invitation",
    (kind) => {
      const done = call("succeeded", { compensated: kind === "compensated", toolCallId: "tc-write" });
      const never = call("intent", { toolCallId: "tc-never", toolName: "addComment" });
      const err = turnInterruptedRunError(RUN, [never, done]);
      expect(RunErrorSchema.parse(err)).toMatchObject({ code: "runtime.turn_interrupted_after_writes", retryable: false });
      expect(err.message).not.toMatch(/resend your last request\./i);
      expect(err.message).toMatch(/Do not resend your last request: continue from these results/);
      expect(err.message).toMatch(/must not be sent again: createIssue \(toolCallId tc-write\)/);
      expect(err.message).toMatch(/may be sent again as new tool calls: addComment \(toolCallId tc-never, never sent\)/);
      expect(account(err).toolCalls.map((c) => c.status)).toEqual([kind, "never_sent"]);
    },
  );

  it("any unknown: external_effect.unknown exactly as before (ids, not retryable) with the account added", () => {
    const unknown = call("unknown");
    const executing = call("executing");
    const done = call("succeeded");
    const err = turnInterruptedRunError(RUN, [done, unknown, executing]);
    expect(RunErrorSchema.parse(err)).toMatchObject({
      code: "external_effect.unknown",
      retryable: false,
      details: { effectIds: [unknown.effectId, executing.effectId].sort() },
    });
    expect(err.message).toMatch(/^This turn ended while 2 tool calls' outcome is unknown\. /);
    expect(err.message).toMatch(/Outcome unknown, must not be sent again/);
    expect(account(err)).toMatchObject({ total: 3, counts: { unknown: 2, succeeded: 1 }, omitted: 0 });
  });

  it("a turn of 500 tool calls: details within 4 KiB, every call counted, written ones listed first, the route to the rest", () => {
    const calls = Array.from({ length: 500 }, (_, i) => (i === 400 ? call("succeeded", { toolCallId: "x".repeat(128) }) : call("intent")));
    const err = turnInterruptedRunError(RUN, calls, { driverInstanceId: newUlid() });
    expect(RunErrorSchema.safeParse(err).success).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(err.details))).toBeLessThanOrEqual(MAX_ERROR_DETAILS_BYTES);
    const a = account(err);
    expect(a.total).toBe(500);
    expect(a.counts).toEqual({ never_sent: 499, succeeded: 1 });
    expect(a.toolCalls.length + a.omitted).toBe(500);
    expect(a.toolCalls.length).toBeGreaterThan(5);
    expect(a.toolCalls.some((c) => c.status === "succeeded")).toBe(true);
    expect(a.rest).toContain(`/v1/runs/${RUN}/tool-calls/`);
    expect(err.message.length).toBeLessThanOrEqual(2000);
    expect(err.message).toMatch(/and 496 more/);
  });

  it("many unknown effects with long names: still a valid error within the limits", () => {
    const calls = Array.from({ length: 300 }, () => call("unknown", { toolName: "t".repeat(128), toolCallId: "c".repeat(128) }));
    const err = turnInterruptedRunError(RUN, calls);
    expect(RunErrorSchema.safeParse(err).success).toBe(true);
    expect(err.details["effectIdsOmitted"]).toBe(240);
    expect(account(err).counts).toEqual({ unknown: 300 });
  });
});

describe("GET /v1/runs/:runId/tool-calls/:toolCallId and the account of a finalized run over HTTP", () => {
  it("answers what became of each tool call; 404 tool_call.not_found for another id; the run error's account names the same", async () => {
    const f = createDoubleWorld({ enabled: false });
    try {
      const app = buildHttpApp(f.runtime, TEST_AUTH);
      const get = (path: string) => requestJson(app, "GET", path, undefined, defaultCredential("GET", path));
      const driver = await connectDriver(f.runtime);
      const { runId } = await f.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
      const queued = await f.runtime.runs.enqueueToolCall(runId, {
        serverId: "tracker",
        toolName: "createIssue",
        arguments: issueArgs(),
        toolCallId: "tc-1",
      });
      // queued on a live Driver: no answer yet, never reported as a fenced write
      expect((await get(`/v1/runs/${runId}/tool-calls/tc-1`)).body).toMatchObject({ commandStatus: "queued", status: "in_flight" });
      await f.runtime.repair.finalize(driver.instance.id, "driver_request");
      const one = await get(`/v1/runs/${runId}/tool-calls/tc-1`);
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({
        runId,
        toolCallId: "tc-1",
        commandId: queued.commandId,
        commandStatus: "failed",
        effectId: queued.effectId,
        effectStatus: "intent",
        status: "never_sent",
        result: null,
        error: { code: "driver.command_driver_terminal" },
        repeatOfEffectId: null,
      });
      const missing = await get(`/v1/runs/${runId}/tool-calls/tc-2`);
      expect(missing).toMatchObject({ status: 404, body: { error: { code: "tool_call.not_found" } } });
      const run = await get(`/v1/runs/${runId}`);
      expect(run.body.run.error).toMatchObject({
        code: "runtime.turn_interrupted",
        retryable: true,
        details: { account: { toolCalls: [{ toolCallId: "tc-1", effectId: queued.effectId, status: "never_sent" }] } },
      });
    } finally {
      f.close();
    }
  });
});
