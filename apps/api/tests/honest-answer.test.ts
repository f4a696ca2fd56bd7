/**
 * docs/DESIGN.md §3 rule 14 ("what the agent is told"): whenever a command
 * or a run ends while one of its effects is `unknown`, its error is `external_effect.unknown`,
 * `retryable: false`, with the effect ids, on every path (redelivery to a restarted Driver,
 * finalization repair, heartbeat expiry found by the sweep), flag on or off, bound or not.
 * `driver.command_driver_terminal` / `runtime.turn_interrupted` remain only where no effect is unknown, and
 * the resend wording of `runtime.turn_interrupted` only where nothing of the turn was written (rule 16).
 */
import { afterEach, describe, expect, it } from "vitest";
import { effectUnknownError, RunErrorSchema, type RunError } from "@mosoo/contracts";
import {
  commitAtProvider,
  connectDriver,
  createDoubleWorld,
  deliverAcceptClaim,
  type DispatchedCall,
  dispatchWrite,
  type DoubleWorld,
  type DoubleWorldOptions,
  finalizeDriver,
  issueArgs,
  reconnectDriver,
} from "./kit/index.js";
import { commandRow, effectRow, runEvents } from "./helpers/reconciliation-db.js";

let fx: DoubleWorld | undefined;
afterEach(() => {
  fx?.close();
  fx = undefined;
});

const HEARTBEAT_TTL_MS = 10_000;

/** The configurations of rule 14: flag off, on but unbound, on and bound with a lookup that cannot decide. */
const CONFIGS: Array<[string, DoubleWorldOptions]> = [
  ["flag off", { enabled: false }],
  ["flag on, server unbound", { bind: false }],
  ["flag on, bound, lookup still_unknown", { double: { faults: { adapterFault: "throws" } } }],
];

function setup(opts: DoubleWorldOptions): DoubleWorld {
  fx = createDoubleWorld({ heartbeatTtlMs: HEARTBEAT_TTL_MS, ...opts });
  return fx;
}

function runRow(f: DoubleWorld, runId: string): { status: string; error: RunError | null } {
  const row = f.store.sqlite.prepare("SELECT status, error_json FROM session_runs WHERE id = ?").get(runId) as {
    status: string;
    error_json: string | null;
  };
  return { status: row.status, error: row.error_json ? (JSON.parse(row.error_json) as RunError) : null };
}

/** The honest answer: `external_effect.unknown`, not retryable, naming exactly `effectIds`, and a valid contract. */
function expectUnknownAnswer(error: unknown, effectIds: string[]) {
  expect(error).toMatchObject({ code: "external_effect.unknown", retryable: false, details: { effectIds } });
  expect(RunErrorSchema.safeParse(error).success).toBe(true);
  expect(JSON.stringify(error)).not.toMatch(/resend/i);
}

/** A write the provider committed whose response was lost: the effect is `executing` at the API. */
async function lostResponse(f: DoubleWorld): Promise<DispatchedCall> {
  const call = await dispatchWrite(f);
  await commitAtProvider(f, call);
  return call;
}

/** The same Driver instance restarts; the command is redelivered, claimed (fenced `unknown`) and reported failed with `error`. */
async function restartAndReport(f: DoubleWorld, call: DispatchedCall, error: RunError) {
  const restarted = await reconnectDriver(f.runtime, call.driver);
  const { commandId, claim } = await deliverAcceptClaim(f.runtime, restarted);
  expect(commandId).toBe(call.commandId);
  expect(claim).toEqual({ kind: "unknown", effectId: call.effectId });
  const update = await f.runtime.commands.updateCommand(restarted.instance, call.commandId, {
    connectionId: restarted.connectionId,
    status: "failed",
    error,
  });
  expect(update.outcome).toBe("applied");
  return restarted;
}

describe("rule 14: one honest answer for the command and the run, on every path", () => {
  describe.each(CONFIGS)("%s", (_name, opts) => {
    it("finalization repair: command and run end external_effect.unknown naming the effect", async () => {
      const f = setup(opts);
      const call = await lostResponse(f);
      await finalizeDriver(f, call);
      expect(effectRow(f.store, call.effectId).status).toBe("unknown");
      expect(commandRow(f.store, call.commandId).status).toBe("failed");
      expectUnknownAnswer(commandRow(f.store, call.commandId).error, [call.effectId]);
      expect(commandRow(f.store, call.commandId).error?.details).toMatchObject({ effectId: call.effectId });
      const run = runRow(f, call.runId);
      expect(run.status).toBe("failed");
      expectUnknownAnswer(run.error, [call.effectId]);
      expect(run.error?.details).toMatchObject({ driverInstanceId: call.driver.instance.id });
      // the published events carry the same answer as the rows
      expectUnknownAnswer(runEvents(f.store, call.runId, "tool_call.failed")[0]!.payload["error"], [call.effectId]);
      expectUnknownAnswer(runEvents(f.store, call.runId, "run.failed")[0]!.payload["error"], [call.effectId]);
    });

    it("heartbeat expiry found by the sweep: the same answer", async () => {
      const f = setup(opts);
      const call = await lostResponse(f);
      f.clock.advance(HEARTBEAT_TTL_MS + 1);
      expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(1);
      expect(effectRow(f.store, call.effectId).status).toBe("unknown");
      expectUnknownAnswer(commandRow(f.store, call.commandId).error, [call.effectId]);
      expectUnknownAnswer(runRow(f, call.runId).error, [call.effectId]);
    });

    it("redelivery to a restarted Driver: whatever the Driver reports, the ledger's answer is stored; the run ending later says unknown too", async () => {
      const f = setup(opts);
      const call = await lostResponse(f);
      // a confused Driver reports a retryable error for a fenced effect: the ledger answers for it
      const restarted = await restartAndReport(f, call, { code: "mcp.tool_call_failed", message: "boom", retryable: true, details: {} });
      const error = commandRow(f.store, call.commandId).error;
      expectUnknownAnswer(error, [call.effectId]);
      expect(error?.details).toMatchObject({ effectId: call.effectId, reportedError: "mcp.tool_call_failed" });
      expect(runRow(f, call.runId).status).toBe("active");
      // the run ends (its Driver finalizes) while the write is still unknown
      await f.runtime.repair.finalize(restarted.instance.id, "driver_request");
      expect(effectRow(f.store, call.effectId).status).toBe("unknown");
      expectUnknownAnswer(runRow(f, call.runId).error, [call.effectId]);
    });
  });

  it("redelivery: a Driver's external_effect.unknown naming another effect is stored naming this one (its other details kept)", async () => {
    const f = setup({ enabled: false });
    const call = await lostResponse(f);
    await restartAndReport(f, call, effectUnknownError("01ARZ3NDEKTSV4RRFFQ69G5FAV", { reason: "mcp_call_failed: socket hang up" }));
    const error = commandRow(f.store, call.commandId).error;
    expectUnknownAnswer(error, [call.effectId]);
    expect(error?.details).toEqual({ effectId: call.effectId, effectIds: [call.effectId], reason: "mcp_call_failed: socket hang up" });
  });

  it("the run names every unknown effect of its turn, earlier ones included, in id order", async () => {
    const f = setup({ enabled: false });
    const first = await lostResponse(f);
    // the first write is fenced by a restart and its command failed; the turn goes on with a second write
    const restarted = await restartAndReport(f, first, effectUnknownError(first.effectId));
    const second = await f.runtime.runs.enqueueToolCall(first.runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: issueArgs("second"),
    });
    expect((await deliverAcceptClaim(f.runtime, restarted)).claim.kind).toBe("execute");
    await f.runtime.repair.finalize(restarted.instance.id, "driver_request");
    expectUnknownAnswer(commandRow(f.store, second.commandId).error, [second.effectId]);
    expectUnknownAnswer(runRow(f, first.runId).error, [first.effectId, second.effectId].sort());
  });
});

describe("rule 14: the resend wording only where no effect is unknown", () => {
  it("a command never dispatched (intent) ends driver.command_driver_terminal; the run runtime.turn_interrupted", async () => {
    const f = setup({ enabled: false });
    const driver = await reconnectDriver(f.runtime, (await dispatchWrite(f)).driver);
    // the first write was claimed (executing); queue a second one that no claim ever reaches
    const { runId } = f.store.sqlite.prepare("SELECT id AS runId FROM session_runs WHERE status = 'active'").get() as { runId: string };
    const queued = await f.runtime.runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: issueArgs("never sent"),
    });
    await f.runtime.repair.finalize(driver.instance.id, "driver_request");
    expect(commandRow(f.store, queued.commandId).error).toMatchObject({ code: "driver.command_driver_terminal", retryable: false });
    // the first write is unknown, so the run still must not invite a resend
    expect(runRow(f, runId).error).toMatchObject({ code: "external_effect.unknown", retryable: false });
  });

  it("a run whose effects are all settled or never dispatched ends runtime.turn_interrupted (retryable)", async () => {
    const f = setup({ enabled: false });
    const driver = await connectDriver(f.runtime);
    const { runId } = await f.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    const queued = await f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: issueArgs() });
    await f.runtime.repair.finalize(driver.instance.id, "driver_request");
    expect(commandRow(f.store, queued.commandId).error).toMatchObject({
      code: "driver.command_driver_terminal",
      retryable: false,
      details: { effectId: queued.effectId, effectStatus: "intent" },
    });
    expect(runRow(f, runId).error).toMatchObject({
      code: "runtime.turn_interrupted",
      retryable: true,
      details: { account: { total: 1, toolCalls: [{ effectId: queued.effectId, status: "never_sent" }] } },
    });
  });

  it("finalization that reconciles the write (flag on, bound): command completed, run turn_interrupted_after_writes (rule 16)", async () => {
    const f = setup({});
    const call = await lostResponse(f);
    await finalizeDriver(f, call);
    expect(effectRow(f.store, call.effectId)).toMatchObject({ status: "succeeded", resolution: "reconciled" });
    expect(commandRow(f.store, call.commandId).status).toBe("completed");
    const error = runRow(f, call.runId).error;
    expect(error).toMatchObject({
      code: "runtime.turn_interrupted_after_writes",
      retryable: false,
      details: { account: { total: 1, omitted: 0, toolCalls: [{ effectId: call.effectId, status: "succeeded" }] } },
    });
    expect(RunErrorSchema.safeParse(error).success).toBe(true);
    expect(error?.message).not.toMatch(/resend your last request\./i);
    expect(error?.message).toMatch(/must not be sent again/);
  });
});
