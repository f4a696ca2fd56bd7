import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserFacingError } from "../src/kernel/user-facing-error.js";
import {
  buildRuntime,
  connectDriver,
  createFixtureProviderWorld,
  createTestWorld,
  enqueueCreateIssue,
  type FixtureProviderWorld,
  issueResult,
  reconnectDriver,
  type TestWorld,
  waitFor,
} from "./kit/index.js";

let f: TestWorld;
beforeEach(() => {
  f = createTestWorld();
});
afterEach(() => f.close());

/** Delivers, accepts and claims the next command on `driver`; returns the claim. */
async function deliverAcceptClaim(driver: Awaited<ReturnType<typeof connectDriver>>) {
  const env = await f.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
  expect(env).not.toBeNull();
  if (env!.status !== "accepted") {
    expect(
      (await f.runtime.commands.updateCommand(driver.instance, env!.commandId, { connectionId: driver.connectionId, status: "accepted" }))
        .outcome,
    ).toBe("applied");
  }
  return { env: env!, claim: await f.runtime.ledger.claim(driver.instance, driver.connectionId, env!.commandId) };
}

const runView = (runId: string) => f.runtime.runs.getRunView(runId);
const terminalEvents = async (runId: string) => (await runView(runId)).events.filter((e) => e.terminal);

async function expectUserFacingError(fn: () => unknown, code: string) {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UserFacingError);
    expect((err as UserFacingError).code).toBe(code);
    return err as UserFacingError;
  }
  throw new Error(`expected UserFacingError ${code}, nothing was thrown`);
}

describe("finalization repair", () => {
  it("fails the active run and accepted commands with one replayable terminal event, also when run twice", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    const { claim } = await deliverAcceptClaim(driver);
    expect(claim.kind).toBe("execute");

    const first = await f.runtime.repair.finalize(driver.instance.id, "driver_request");
    expect(first).toMatchObject({ effectsFenced: 1, commandsFailed: 1, runsFailed: 1, commandsCompleted: 0 });
    const second = await f.runtime.repair.finalize(driver.instance.id, "driver_request");
    expect(second).toEqual({ effectsFenced: 0, commandsCompleted: 0, commandsFailed: 0, runsFailed: 0, effectsReconciled: 0 });

    const view = await runView(call.runId);
    expect(view.run.status).toBe("failed");
    // DESIGN §3 rule 14: the fenced write is unknown, so neither the command nor the run invites a resend
    expect(view.run.error).toMatchObject({
      code: "external_effect.unknown",
      retryable: false,
      details: { effectIds: [call.effectId], driverInstanceId: driver.instance.id },
    });
    expect(view.commands[0]).toMatchObject({
      status: "failed",
      error: { code: "external_effect.unknown", retryable: false, details: { effectId: call.effectId, effectIds: [call.effectId] } },
    });
    const terminal = await terminalEvents(call.runId);
    expect(terminal).toHaveLength(1);
    expect(terminal[0]!.type).toBe("run.failed");
    // replayable: reading the stream again from any point returns the same terminal event
    const replay = await f.runtime.runs.listEvents(call.runId, terminal[0]!.seq - 1);
    expect(replay).toHaveLength(1);
    expect(replay[0]).toMatchObject({ type: "run.failed", terminal: true });
  });

  it("queues no mcp.execute when its intent cannot be prepared (no active run)", async () => {
    const driver = await connectDriver(f.runtime);
    const { runId } = await enqueueCreateIssue(f.runtime, driver);
    await f.runtime.repair.finalize(driver.instance.id, "operator");
    const before = await runView(runId);
    const err = await expectUserFacingError(
      () => f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { title: "x", body: "y" } }),
      "run.not_active",
    );
    expect(err.httpStatus).toBe(409);
    const after = await runView(runId);
    expect(after.commands).toHaveLength(before.commands.length);
    expect(after.effects).toHaveLength(before.effects.length);
  });

  it("persists the intent with a 26-char key and fences it as unknown after Driver loss (claim, reconnect, re-claim)", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    const intent = (await runView(call.runId)).effects[0]!;
    expect(intent.status).toBe("intent");
    expect(intent.idempotencyKey).toHaveLength(26);
    expect(intent.idempotencyKey).toBe(call.idempotencyKey);
    expect(intent.requestFingerprint).toMatch(/^[0-9a-f]{64}$/);

    const { claim } = await deliverAcceptClaim(driver);
    expect(claim).toMatchObject({ kind: "execute", attempt: 1, idempotencyKey: call.idempotencyKey });

    const restarted = await reconnectDriver(f.runtime, driver);
    const { env, claim: again } = await deliverAcceptClaim(restarted);
    expect(env).toMatchObject({ commandId: call.commandId, status: "accepted", redelivery: true });
    expect(again).toEqual({ kind: "unknown", effectId: call.effectId });
    const effect = (await runView(call.runId)).effects[0]!;
    expect(effect.status).toBe("unknown");
    expect(effect.attemptCount).toBe(1);
    expect(effect.attempts).toEqual([
      expect.objectContaining({ attempt: 1, status: "unknown", unknownReason: "redelivered_while_executing" }),
    ]);

    // rule 3: unknown never becomes executing again, however often it is claimed
    const third = await f.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId);
    expect(third.kind).toBe("unknown");
    expect((await runView(call.runId)).effects[0]!.attemptCount).toBe(1);
  });

  it("fences an executing effect as unknown through finalization repair (attempt row unknown too)", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    await f.runtime.repair.finalize(driver.instance.id, "driver_request");
    const effect = (await runView(call.runId)).effects[0]!;
    expect(effect.status).toBe("unknown");
    expect(effect.attempts[0]).toMatchObject({ status: "unknown", unknownReason: "driver_finalized" });
    // the finalized Driver cannot reach the ledger any more
    await expectUserFacingError(() => f.runtime.drivers.authenticate(driver.token), "driver.finalized");
  });

  it("keeps an unknown effect through maintenance, run/session deletion, purge and re-registration", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    f.clock.advance(60_000);
    const report = await f.runtime.sweep.sweepOnce();
    expect(report.driversFinalized).toBe(1);
    expect((await runView(call.runId)).effects[0]!.status).toBe("unknown");

    const e1 = await expectUserFacingError(() => f.runtime.runs.deleteRun(call.runId), "effect.fence_retained");
    expect(e1.details).toEqual({ effectIds: [call.effectId] });
    await expectUserFacingError(() => f.runtime.runs.deleteSession(call.sessionId), "effect.fence_retained");
    await expectUserFacingError(() => f.runtime.runs.purgeDriver(driver.instance.id), "effect.fence_retained");
    await expectUserFacingError(
      () => f.runtime.drivers.register({ name: "again", driverInstanceId: driver.instance.id }, { kind: "operator" }),
      "effect.fence_retained",
    );
    await f.runtime.sweep.sweepOnce();

    const effect = (await runView(call.runId)).effects[0]!;
    expect(effect.status).toBe("unknown");
    // the database refuses the delete by itself too (trigger), even bypassing the services
    expect(() => f.store.sqlite.prepare("DELETE FROM session_runs WHERE id = ?").run(call.runId)).toThrow(/effect.fence_retained/);
    expect(() => f.store.sqlite.prepare("DELETE FROM external_tool_effects").run()).toThrow(/effect.fence_retained/);
    expect((await runView(call.runId)).effects).toHaveLength(1);
  });

  it("redelivers a persisted success without a second dispatch", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    const { claim } = await deliverAcceptClaim(driver);
    if (claim.kind !== "execute") throw new Error("expected execute");
    const done = await f.runtime.ledger.complete(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      result: issueResult(),
      receipt: { "io.mosoo/provider-operation-id": "iss_1" },
    });
    expect(done).toEqual({ outcome: "applied", status: "succeeded" });
    // the Driver dies before its terminal update; a new process reconnects
    const restarted = await reconnectDriver(f.runtime, driver);
    const { claim: again } = await deliverAcceptClaim(restarted);
    expect(again).toEqual({ kind: "completed", effectId: call.effectId, result: issueResult() });
    const upd = await f.runtime.commands.updateCommand(restarted.instance, call.commandId, {
      connectionId: restarted.connectionId,
      status: "completed",
      result: issueResult(),
    });
    expect(upd.outcome).toBe("applied");
    const view = await runView(call.runId);
    expect(view.effects[0]).toMatchObject({
      status: "succeeded",
      attemptCount: 1,
      providerReceipt: { "io.mosoo/provider-operation-id": "iss_1" },
    });
    expect(view.commands[0]).toMatchObject({ status: "completed", result: issueResult() });
  });

  it("completes an accepted command whose effect already succeeded during repair", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    await f.runtime.ledger.complete(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      result: issueResult(),
      receipt: null,
    });
    const summary = await f.runtime.repair.finalize(driver.instance.id, "heartbeat_expired");
    expect(summary).toMatchObject({ commandsCompleted: 1, commandsFailed: 0, effectsFenced: 0 });
    const view = await runView(call.runId);
    expect(view.commands[0]).toMatchObject({ status: "completed", result: issueResult() });
    expect(view.events.map((e) => e.type)).toContain("tool_call.completed");
  });

  it("fences through the sweep exactly like finalization", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    f.clock.advance(5_000);
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(0);
    await f.runtime.drivers.heartbeat(driver.instance, driver.connectionId);
    f.clock.advance(9_999);
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(0);
    f.clock.advance(2);
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(1);
    const view = await runView(call.runId);
    expect(view.effects[0]!.status).toBe("unknown");
    expect(view.commands[0]).toMatchObject({
      status: "failed",
      error: { code: "external_effect.unknown", retryable: false, details: { effectIds: [call.effectId] } },
    });
    expect(view.run).toMatchObject({
      status: "failed",
      error: { code: "external_effect.unknown", retryable: false, details: { effectIds: [call.effectId] } },
    });
    expect(await terminalEvents(call.runId)).toHaveLength(1);
  });

  it("resumes a half-done finalization (instance left finalizing) from the sweep", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    f.store.sqlite.prepare("UPDATE driver_instances SET status = 'finalizing', connection_id = NULL WHERE id = ?").run(driver.instance.id);
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(1);
    expect((await runView(call.runId)).run.status).toBe("failed");
    expect((await runView(call.runId)).effects[0]!.status).toBe("unknown");
  });

  it("gives a reconnecting Driver its accepted command again and lets the ledger decide", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    const env = await f.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
    await f.runtime.commands.updateCommand(driver.instance, env!.commandId, { connectionId: driver.connectionId, status: "accepted" });
    // nothing more on the same connection
    expect(await f.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0)).toBeNull();
    const restarted = await reconnectDriver(f.runtime, driver);
    const { env: again, claim } = await deliverAcceptClaim(restarted);
    expect(again).toMatchObject({ commandId: call.commandId, status: "accepted", redelivery: true });
    // the provider never ran (the claim came before any dispatch): the ledger allows attempt 1
    expect(claim).toMatchObject({ kind: "execute", attempt: 1 });
  });
});

describe("ledger guards", () => {
  it("refuses a superseded connection and a zombie's report after the fence", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    const restarted = await reconnectDriver(f.runtime, driver);
    await expectUserFacingError(
      () => f.runtime.commands.updateCommand(driver.instance, call.commandId, { connectionId: driver.connectionId, status: "accepted" }),
      "driver.connection_superseded",
    );
    await deliverAcceptClaim(restarted); // fences
    const late = await f.runtime.ledger.complete(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      result: issueResult(),
      receipt: null,
    });
    expect(late).toMatchObject({ outcome: "rejected", status: "unknown" });
    expect((await runView(call.runId)).effects[0]!.status).toBe("unknown");
  });

  it("accepts the attempt's own result from a superseded connection while the effect is still executing", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    await reconnectDriver(f.runtime, driver);
    const late = await f.runtime.ledger.complete(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      result: issueResult(),
      receipt: null,
    });
    expect(late).toEqual({ outcome: "applied", status: "succeeded" });
  });

  it("rejects a completed update before the effect succeeded, and a duplicate is typed", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    const early = await f.runtime.commands.updateCommand(driver.instance, call.commandId, {
      connectionId: driver.connectionId,
      status: "completed",
      result: issueResult(),
    });
    expect(early.outcome).toBe("rejected");
    expect((await runView(call.runId)).commands[0]!.status).toBe("accepted");
    await f.runtime.ledger.complete(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      result: issueResult(),
      receipt: null,
    });
    const dup = await f.runtime.ledger.complete(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      result: issueResult(),
      receipt: null,
    });
    expect(dup.outcome).toBe("duplicate");
    const ok = await f.runtime.commands.updateCommand(driver.instance, call.commandId, {
      connectionId: driver.connectionId,
      status: "completed",
      result: issueResult(),
    });
    expect(ok.outcome).toBe("applied");
    const again = await f.runtime.commands.updateCommand(driver.instance, call.commandId, {
      connectionId: driver.connectionId,
      status: "completed",
      result: issueResult(),
    });
    expect(again.outcome).toBe("duplicate");
    const back = await f.runtime.commands.updateCommand(driver.instance, call.commandId, {
      connectionId: driver.connectionId,
      status: "accepted",
    });
    expect(back).toMatchObject({ outcome: "rejected", status: "completed" });
  });

  it("fences an executing effect when the Driver fails its command without marking it", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    const res = await f.runtime.commands.updateCommand(driver.instance, call.commandId, {
      connectionId: driver.connectionId,
      status: "failed",
      error: { code: "mcp.tool_call_failed", message: "boom", retryable: true, details: {} },
    });
    expect(res.outcome).toBe("applied");
    const view = await runView(call.runId);
    expect(view.effects[0]!.status).toBe("unknown");
    expect(view.commands[0]!.error).toMatchObject({ code: "external_effect.unknown", details: { effectId: call.effectId } });
  });

  it("stores the ledger's error when a Driver fails a command whose effect is already unknown", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    await f.runtime.ledger.markUnknown(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      reason: "transport closed",
    });
    const res = await f.runtime.commands.updateCommand(driver.instance, call.commandId, {
      connectionId: driver.connectionId,
      status: "failed",
      error: { code: "mcp.tool_call_failed", message: "retry me", retryable: true, details: {} },
    });
    expect(res.outcome).toBe("applied");
    expect((await runView(call.runId)).commands[0]!.error).toMatchObject({
      code: "external_effect.unknown",
      retryable: false,
      details: { effectId: call.effectId, reportedError: "mcp.tool_call_failed" },
    });
  });

  it("does not expire heartbeats missed while the API itself was down (grace of one TTL after startup)", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    // the API restarts 60 s later: a new runtime on the same store
    f.clock.advance(60_000);
    const restarted = buildRuntime(f.store, f.clock, { heartbeatTtlMs: 10_000 });
    expect((await restarted.sweep.sweepOnce()).driversFinalized).toBe(0);
    await restarted.drivers.heartbeat(await restarted.drivers.authenticate(driver.token), driver.connectionId);
    f.clock.advance(9_000);
    expect((await restarted.sweep.sweepOnce()).driversFinalized).toBe(0);
    f.clock.advance(11_000); // no heartbeat for a full TTL after the grace: expired
    expect((await restarted.sweep.sweepOnce()).driversFinalized).toBe(1);
    expect((await runView(call.runId)).effects[0]!.status).toBe("unknown");
  });

  it("never shows or changes another instance's commands and effects", async () => {
    const a = await connectDriver(f.runtime, "a");
    const b = await connectDriver(f.runtime, "b");
    const call = await enqueueCreateIssue(f.runtime, a);
    expect(await f.runtime.commands.nextCommand(b.instance, b.connectionId, 0)).toBeNull();
    await expect(f.runtime.ledger.claim(b.instance, b.connectionId, call.commandId)).rejects.toMatchObject({ code: "command.not_found" });
    await expectUserFacingError(
      () => f.runtime.commands.updateCommand(b.instance, call.commandId, { connectionId: b.connectionId, status: "accepted" }),
      "command.not_found",
    );
    await expectUserFacingError(
      () => f.runtime.ledger.markUnknown(b.instance, call.effectId, { connectionId: b.connectionId, attempt: 1, reason: "x" }),
      "effect.not_found",
    );
    expect((await runView(call.runId)).effects[0]!.status).toBe("intent");
  });

  it("deletes a run once no fence is retained", async () => {
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    await deliverAcceptClaim(driver);
    await f.runtime.ledger.complete(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      result: issueResult(),
      receipt: null,
    });
    await f.runtime.runs.deleteRun(call.runId);
    await expectUserFacingError(() => f.runtime.runs.getRunView(call.runId), "run.not_found");
  });
});

describe("reconciliation through the fixture adapter (MOSOO_EFFECT_RECONCILIATION=on)", () => {
  const args = { title: "Disk full on db-1", body: "seen at 03:12" };
  let s: FixtureProviderWorld;
  afterEach(async () => s?.dispose());

  async function claimNext(driver: Awaited<ReturnType<typeof connectDriver>>) {
    const env = await s.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
    if (!env) throw new Error("expected a command");
    if (env.status !== "accepted")
      await s.runtime.commands.updateCommand(driver.instance, env.commandId, { connectionId: driver.connectionId, status: "accepted" });
    return { env, claim: await s.runtime.ledger.claim(driver.instance, driver.connectionId, env.commandId) };
  }

  /** Enqueues createIssue, claims it, and lets the real provider commit while its response is held (lost). */
  async function commitWithLostResponse() {
    const driver = await connectDriver(s.runtime);
    const call = await enqueueCreateIssue(s.runtime, driver, args.title);
    const { claim } = await claimNext(driver);
    if (claim.kind !== "execute") throw new Error("expected execute");
    void s.callCreateIssue(claim.idempotencyKey, args).catch(() => undefined);
    await waitFor(() => s.provider.stats().writes[call.idempotencyKey] === 1, 5_000, "the provider commit");
    return { driver, call };
  }

  it("reproduces the report: after a lost response and a Driver restart the redelivered command completes with the provider's original result", async () => {
    s = await createFixtureProviderWorld({ mode: "bound", faults: { holdResponseAfterCommit: true } });
    const { driver, call } = await commitWithLostResponse();
    const restarted = await reconnectDriver(s.runtime, driver);
    const { claim } = await claimNext(restarted);
    expect(claim).toMatchObject({
      kind: "completed",
      effectId: call.effectId,
      result: { outputText: `Created issue #1: ${args.title}`, serverId: "tracker", toolName: "createIssue" },
    });

    const before = await s.runtime.runs.getRunView(call.runId);
    const effect = before.effects[0]!;
    expect(effect).toMatchObject({ status: "succeeded", resolution: "reconciled", attemptCount: 1 });
    expect(effect.reconciliationReceipt).toMatchObject({
      requestFingerprint: effect.requestFingerprint,
      providerOperationId: expect.any(String),
    });
    expect(effect.reconciliations).toHaveLength(1);
    expect(effect.reconciliations[0]).toMatchObject({
      trigger: "redelivery",
      outcome: "confirmed_succeeded",
      adapterId: "fixture-issue-tracker",
      adapterVersion: "1.1.0",
    });
    // nothing terminal yet: the receipt and the result are committed before the Driver's terminal update
    expect(before.commands[0]!.status).toBe("accepted");

    if (claim.kind !== "completed") throw new Error("expected completed");
    const upd = await s.runtime.commands.updateCommand(restarted.instance, call.commandId, {
      connectionId: restarted.connectionId,
      status: "completed",
      result: claim.result,
    });
    expect(upd.outcome).toBe("applied");
    const after = await s.runtime.runs.getRunView(call.runId);
    const reconciled = after.events.find((e) => e.type === "effect.reconciled")!;
    const completed = after.events.find((e) => e.type === "tool_call.completed")!;
    expect(reconciled.seq).toBeLessThan(completed.seq);
    expect(after.effects[0]!.reconciliations[0]!.finishedAtMs).toBeLessThanOrEqual(after.commands[0]!.terminalAtMs!);
    expect(after.commands[0]).toMatchObject({ status: "completed", result: claim.result });
    expect(after.run.status).toBe("active"); // the run continues

    const stats = s.provider.stats();
    expect(stats.writes[call.idempotencyKey]).toBe(1);
    expect(stats.createCalls[call.idempotencyKey]).toBe(1);
    expect(stats.lookups[call.idempotencyKey]).toBe(1);
  });

  it("reconciles the same lost response in finalization repair: outcome and command end in one transaction", async () => {
    s = await createFixtureProviderWorld({ mode: "bound", faults: { holdResponseAfterCommit: true } });
    const { driver, call } = await commitWithLostResponse();
    const summary = await s.runtime.repair.finalize(driver.instance.id, "heartbeat_expired");
    expect(summary).toMatchObject({ effectsFenced: 1, effectsReconciled: 1, commandsCompleted: 1, commandsFailed: 0, runsFailed: 1 });
    const view = await s.runtime.runs.getRunView(call.runId);
    expect(view.effects[0]).toMatchObject({ status: "succeeded", resolution: "reconciled" });
    expect(view.effects[0]!.reconciliations[0]).toMatchObject({ trigger: "finalization", outcome: "confirmed_succeeded" });
    expect(view.commands[0]).toMatchObject({ status: "completed", result: { outputText: `Created issue #1: ${args.title}` } });
    const types = view.events.map((e) => e.type);
    expect(types.indexOf("effect.reconciled")).toBeLessThan(types.indexOf("tool_call.completed"));
    expect(types.indexOf("tool_call.completed")).toBeLessThan(types.indexOf("run.failed"));
    expect(view.events.filter((e) => e.terminal)).toHaveLength(1);
    expect(s.provider.stats().writes[call.idempotencyKey]).toBe(1);
    expect(s.provider.stats().lookups[call.idempotencyKey]).toBe(1);
    // idempotent: a second repair changes nothing and looks nothing up
    expect(await s.runtime.repair.finalize(driver.instance.id, "operator")).toMatchObject({ effectsReconciled: 0, commandsCompleted: 0 });
    expect(s.provider.stats().lookups[call.idempotencyKey]).toBe(1);
  });

  it("confirms non-execution: the lookup fences the key, the command fails not_executed, and a late createIssue is refused", async () => {
    s = await createFixtureProviderWorld({ mode: "bound", faults: { delayBeforeCommitMs: 400 } });
    const driver = await connectDriver(s.runtime);
    const call = await enqueueCreateIssue(s.runtime, driver, args.title);
    const { claim } = await claimNext(driver);
    if (claim.kind !== "execute") throw new Error("expected execute");
    const inFlight = s.callCreateIssue(claim.idempotencyKey, args); // the provider has not committed yet
    const summary = await s.runtime.repair.finalize(driver.instance.id, "heartbeat_expired");
    expect(summary).toMatchObject({ effectsReconciled: 1, commandsFailed: 1 });
    const view = await s.runtime.runs.getRunView(call.runId);
    expect(view.effects[0]).toMatchObject({ status: "not_executed", resolution: "reconciled" });
    expect(view.commands[0]!.error).toMatchObject({
      code: "external_effect.not_executed",
      retryable: true,
      details: { effectId: call.effectId },
    });
    // the delayed commit lands after the fence and is refused
    const late = (await inFlight) as { isError?: boolean; content: Array<{ text: string }> };
    expect(late.isError).toBe(true);
    expect(late.content[0]!.text).toMatch(/^idempotency_key_fenced/);
    const again = (await s.callCreateIssue(call.idempotencyKey, args)) as { isError?: boolean; content: Array<{ text: string }> };
    expect(again.isError).toBe(true);
    expect(again.content[0]!.text).toMatch(/^idempotency_key_fenced/);
    expect(s.provider.stats().writes[call.idempotencyKey] ?? 0).toBe(0);
    // the fence is lifted: the run can be deleted
    await s.runtime.runs.deleteRun(call.runId);
  });

  it("never confirms non-execution from a provider that does not fence the key: a late commit is then found", async () => {
    s = await createFixtureProviderWorld({ mode: "bound", fenceOnLookupMiss: false, faults: { delayBeforeCommitMs: 300 } });
    const driver = await connectDriver(s.runtime);
    const call = await enqueueCreateIssue(s.runtime, driver, args.title);
    const { claim } = await claimNext(driver);
    if (claim.kind !== "execute") throw new Error("expected execute");
    const inFlight = s.callCreateIssue(claim.idempotencyKey, args);
    await s.runtime.repair.finalize(driver.instance.id, "heartbeat_expired");
    let view = await s.runtime.runs.getRunView(call.runId);
    expect(view.effects[0]).toMatchObject({ status: "unknown", resolution: null });
    expect(view.effects[0]!.reconciliations[0]).toMatchObject({ outcome: "still_unknown", reasonCode: "not_found_unfenced" });
    expect(view.commands[0]!.error).toMatchObject({ code: "external_effect.unknown", retryable: false });
    await inFlight; // the late commit lands: the key was never fenced
    expect(s.provider.stats().writes[call.idempotencyKey]).toBe(1);
    s.clock.advance(60_000);
    await s.runtime.sweep.sweepOnce();
    view = await s.runtime.runs.getRunView(call.runId);
    expect(view.effects[0]).toMatchObject({ status: "succeeded", resolution: "reconciled" });
    expect(view.effects[0]!.reconciliations.map((r) => r.outcome)).toEqual(["still_unknown", "confirmed_succeeded"]);
  });

  it("answers a redelivered claim not_executed after a confirmed non-execution", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const driver = await connectDriver(s.runtime);
    const call = await enqueueCreateIssue(s.runtime, driver, args.title);
    await claimNext(driver); // executing; the Driver dies before calling the provider
    const restarted = await reconnectDriver(s.runtime, driver);
    const { claim } = await claimNext(restarted);
    expect(claim).toEqual({ kind: "not_executed", effectId: call.effectId });
    expect(s.provider.stats().createCalls[call.idempotencyKey] ?? 0).toBe(0);
  });

  it.each(["flag_off", "no_binding"] as const)("keeps the baseline fence with %s: zero lookups", async (mode) => {
    s = await createFixtureProviderWorld({ mode, faults: { holdResponseAfterCommit: true } });
    const { driver, call } = await commitWithLostResponse();
    const restarted = await reconnectDriver(s.runtime, driver);
    const { claim } = await claimNext(restarted);
    expect(claim).toEqual({ kind: "unknown", effectId: call.effectId });
    await s.runtime.repair.finalize(driver.instance.id, "operator");
    await s.runtime.sweep.sweepOnce();
    const view = await s.runtime.runs.getRunView(call.runId);
    expect(view.effects[0]).toMatchObject({ status: "unknown", resolution: null, lookupCount: 0, reconciliations: [] });
    expect(s.provider.stats().lookups[call.idempotencyKey] ?? 0).toBe(0);
  });

  it("keeps the baseline fence for a tool the adapter did not declare: zero lookups", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const driver = await connectDriver(s.runtime);
    const { runId } = await s.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    const call = await s.runtime.runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "deleteIssue",
      arguments: { issueId: "iss_1" },
    });
    await claimNext(driver);
    const summary = await s.runtime.repair.finalize(driver.instance.id, "operator");
    expect(summary).toMatchObject({ effectsFenced: 1, effectsReconciled: 0 });
    const view = await s.runtime.runs.getRunView(runId);
    expect(view.effects[0]).toMatchObject({ status: "unknown", lookupCount: 0, reconciliations: [] });
    expect(view.commands[0]!.error).toMatchObject({
      code: "external_effect.unknown",
      retryable: false,
      details: { effectIds: [call.effectId] },
    });
    expect(view.run.error).toMatchObject({ code: "external_effect.unknown", retryable: false, details: { effectIds: [call.effectId] } });
    expect(s.provider.stats().lookups[call.idempotencyKey] ?? 0).toBe(0);
  });
});
