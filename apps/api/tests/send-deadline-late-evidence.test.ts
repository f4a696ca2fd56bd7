import { afterEach, describe, expect, it } from "vitest";
import { fingerprintArguments, type EffectLateResultRequest } from "@mosoo/contracts";
import { requestJson } from "./helpers/http-call.js";
import {
  buildHttpApp,
  commitAtProvider,
  createDoubleWorld,
  deliverAcceptClaim,
  type DispatchedCall,
  dispatchWrite,
  type DoubleWorld,
  finalizeDriver,
  reconnectDriver,
  redeliverAndClaim,
  seedRetentionCanary,
} from "./kit/index.js";
import { commandRow, effectRow, reconciliationRecords, runEvents } from "./helpers/reconciliation-db.js";

// docs/DESIGN.md §3 rule 12 (send-by deadline) and rule 13 (late evidence), on the API's side.
// One manual clock drives the runtime and the provider double; nothing depends on real timers.

let fx: DoubleWorld | undefined;
afterEach(() => fx?.close());

const MAX_IN_FLIGHT = { kind: "max_in_flight", maxInFlightMs: 2_000 } as const;

function attemptRow(f: DoubleWorld, effectId: string, attempt = 1) {
  return f.store.sqlite
    .prepare("SELECT * FROM external_tool_effect_attempts WHERE effect_id = ? AND attempt = ?")
    .get(effectId, attempt) as {
    status: string;
    unknown_reason: string | null;
    late_result_json: string | null;
    late_reported_at_ms: number | null;
  };
}

function requestIdOf(call: DispatchedCall): string {
  const row = fx!.store.sqlite.prepare("SELECT request_id FROM external_tool_effects WHERE id = ?").get(call.effectId) as {
    request_id: string;
  };
  return row.request_id;
}

function lateEvidence(call: DispatchedCall, overrides: Partial<EffectLateResultRequest> = {}): EffectLateResultRequest {
  return {
    connectionId: call.driver.connectionId,
    attempt: 1,
    idempotencyKey: call.idempotencyKey,
    toolName: "createIssue",
    requestFingerprint: fingerprintArguments(call.args),
    result: { outputText: "created op_1", requestId: requestIdOf(call), serverId: "tracker", toolName: "createIssue" },
    receipt: { "io.example/op": "op_1" },
    ...overrides,
  };
}

describe("send-by deadline: the claim carries it and the in-flight window covers it (rule 12)", () => {
  it("stores the deadline with the dispatch and answers it in the execute claim", async () => {
    fx = createDoubleWorld({ sendDeadlineMs: 5_000, double: { keyFencing: MAX_IN_FLIGHT } });
    const call = await dispatchWrite(fx, { sendWithinMs: 5_000 });
    expect(fx.store.sqlite.prepare("SELECT send_within_ms FROM external_tool_effects WHERE id = ?").get(call.effectId)).toEqual({
      send_within_ms: 5_000,
    });
  });

  it("a fence-less provider's 'not found' is no proof before claim + deadline + maxInFlight; a send just before the deadline is found", async () => {
    fx = createDoubleWorld({ sendDeadlineMs: 5_000, double: { keyFencing: MAX_IN_FLIGHT } });
    const call = await dispatchWrite(fx, { sendWithinMs: 5_000 });
    // The Driver is lost at once (heartbeat expiry or finalization): the lookup finds nothing.
    fx.clock.advance(2_500); // past claim + maxInFlight: the OLD window would have accepted "not found" here
    await finalizeDriver(fx, call);
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "unknown", next_lookup_at_ms: call.dispatchedAtMs + 5_000 + 2_000 });
    expect(reconciliationRecords(fx.store, call.effectId).map((r) => r.reason_code)).toEqual(["in_flight_window"]);
    // A slow Driver read the claim answer 4 999 ms after sending the claim request: it may still send.
    fx.clock.advance(2_499);
    await commitAtProvider(fx, call);
    // Not due before the window closes; at claim + deadline + maxInFlight the lookup finds the write.
    fx.clock.advance(1_999);
    await fx.runtime.sweep.sweepOnce();
    expect(effectRow(fx.store, call.effectId).status).toBe("unknown");
    fx.clock.advance(2);
    await fx.runtime.sweep.sweepOnce();
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "succeeded", resolution: "reconciled" });
  });

  it("with nothing sent, the window closes at claim + deadline + maxInFlight and then settles not_executed", async () => {
    fx = createDoubleWorld({ sendDeadlineMs: 5_000, double: { keyFencing: MAX_IN_FLIGHT } });
    await seedRetentionCanary(fx, { sendWithinMs: 5_000 }); // a committed write of the same tool: the retention canary (DESIGN §4)
    const call = await dispatchWrite(fx, { sendWithinMs: 5_000 });
    await finalizeDriver(fx, call);
    fx.clock.advance(6_999);
    await fx.runtime.sweep.sweepOnce();
    expect(effectRow(fx.store, call.effectId).status).toBe("unknown");
    fx.clock.advance(1);
    await fx.runtime.sweep.sweepOnce();
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "reconciled" });
    expect(fx.double.totalWriteCount()).toBe(1); // the canary's own write only
  });
});

describe("missed deadline report (rule 12): proof that nothing was sent", () => {
  it("settles an executing effect not_executed (deadline_missed) and fails the command not_executed, retryable, in one transaction", async () => {
    fx = createDoubleWorld({ double: { keyFencing: MAX_IN_FLIGHT } });
    const call = await dispatchWrite(fx);
    const answer = await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      elapsedMs: 12_000,
    });
    expect(answer).toEqual({ outcome: "applied", status: "not_executed" });
    expect(effectRow(fx.store, call.effectId)).toMatchObject({
      status: "not_executed",
      resolution: "deadline_missed",
      next_lookup_at_ms: null,
      operator_attention: null,
    });
    expect(attemptRow(fx, call.effectId)).toMatchObject({ status: "not_sent" });
    expect(attemptRow(fx, call.effectId).unknown_reason).toMatch(/^deadline_missed: .*12000 ms.*10000 ms/);
    expect(commandRow(fx.store, call.commandId)).toMatchObject({
      status: "failed",
      error: { code: "external_effect.not_executed", details: { effectId: call.effectId, resolution: "deadline_missed" } },
    });
    expect((commandRow(fx.store, call.commandId).error as unknown as { retryable: boolean }).retryable).toBe(true);
    expect(runEvents(fx.store, call.runId, "effect.resolved").map((e) => e.payload)).toEqual([
      {
        effectId: call.effectId,
        commandId: call.commandId,
        attempt: 1,
        resolution: "deadline_missed",
        effectStatus: "not_executed",
        elapsedMs: 12_000,
      },
    ]);
    // The same report again changes nothing.
    const version = effectRow(fx.store, call.effectId).version;
    expect(
      await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
        connectionId: call.driver.connectionId,
        attempt: 1,
        elapsedMs: 12_000,
      }),
    ).toEqual({
      outcome: "duplicate",
      status: "not_executed",
    });
    expect(effectRow(fx.store, call.effectId).version).toBe(version);
  });

  it("settles an unknown effect whose fenced attempt is the one reported, from the attempt's own (superseded) connection", async () => {
    fx = createDoubleWorld({ enabled: false });
    const call = await dispatchWrite(fx);
    expect((await redeliverAndClaim(fx, call)).kind).toBe("unknown");
    expect(effectRow(fx.store, call.effectId).status).toBe("unknown");
    const answer = await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      elapsedMs: 30_000,
    });
    expect(answer).toEqual({ outcome: "applied", status: "not_executed" });
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "deadline_missed" });
    expect(commandRow(fx.store, call.commandId)).toMatchObject({ status: "failed", error: { code: "external_effect.not_executed" } });
  });

  it("refuses a report for another attempt or a succeeded effect, and changes nothing", async () => {
    fx = createDoubleWorld({ double: { keyFencing: MAX_IN_FLIGHT } });
    const call = await dispatchWrite(fx);
    const other = await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 2,
      elapsedMs: 1,
    });
    expect(other).toMatchObject({ outcome: "rejected", status: "executing" });
    await fx.runtime.ledger.complete(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      result: lateEvidence(call).result,
      receipt: null,
    });
    const before = effectRow(fx.store, call.effectId);
    // The Driver reported attempt 1's result: it sent, so a missed deadline about it is refused outright.
    await expect(
      fx!.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
        connectionId: call.driver.connectionId,
        attempt: 1,
        elapsedMs: 1,
      }),
    ).rejects.toThrow(expect.objectContaining({ code: "effect.attempt_sent" }));
    expect(effectRow(fx.store, call.effectId)).toEqual(before);
  });

  it("refuses a report whose elapsedMs is inside the claim's send-by deadline (the Driver may have sent): nothing changes", async () => {
    fx = createDoubleWorld({ double: { keyFencing: MAX_IN_FLIGHT } });
    const call = await dispatchWrite(fx);
    const before = effectRow(fx.store, call.effectId);
    const sendWithinMs = (before as unknown as { send_within_ms: number }).send_within_ms;
    expect(sendWithinMs).toBeGreaterThan(0);
    const inside = await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      elapsedMs: sendWithinMs - 1,
    });
    expect(inside).toMatchObject({ outcome: "rejected", status: "executing" });
    expect(effectRow(fx.store, call.effectId)).toEqual(before);
  });

  it("a reconciler that held the lease while the report landed loses its compare-and-set: superseded, nothing overridden", async () => {
    fx = createDoubleWorld({ double: { keyFencing: MAX_IN_FLIGHT, faults: { lookupDelayMs: 1_000 } } });
    const call = await dispatchWrite(fx);
    const finalizing = fx.runtime.repair.finalize(call.driver.instance.id, "operator");
    // finalization fenced the effect and is waiting on its lookup (the double answers after 1 000 ms of its clock)
    await new Promise((resolve) => setImmediate(resolve));
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "unknown" });
    expect(effectRow(fx.store, call.effectId).lease_owner).not.toBeNull();
    // The finalized Driver can no longer authenticate; its instance row as read before stands in for
    // a report that was already in flight.
    const answer = await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      elapsedMs: 11_000,
    });
    expect(answer).toEqual({ outcome: "applied", status: "not_executed" });
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "deadline_missed", lease_owner: null });
    // The lookup now answers; its commit loses the compare-and-set and changes nothing.
    fx.clock.advance(1_000);
    await finalizing;
    expect(reconciliationRecords(fx.store, call.effectId).map((r) => r.outcome)).toContain("superseded");
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "deadline_missed" });
  });
});

describe("late evidence (rule 13)", () => {
  it("a real result reported after a redelivery fenced the effect settles it succeeded (reported_late), with its receipt, nothing re-run", async () => {
    fx = createDoubleWorld({ enabled: false });
    const call = await dispatchWrite(fx);
    expect((await redeliverAndClaim(fx, call)).kind).toBe("unknown");
    // The old call's result arrives: complete is refused (fenced) ...
    const refused = await fx.runtime.ledger.complete(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      result: lateEvidence(call).result,
      receipt: null,
    });
    expect(refused).toMatchObject({ outcome: "rejected", status: "unknown" });
    // ... and is reported as evidence.
    const answer = await fx.runtime.ledger.lateResult(call.driver.instance, call.effectId, lateEvidence(call));
    expect(answer).toEqual({ outcome: "applied", status: "succeeded" });
    const row = effectRow(fx.store, call.effectId);
    expect(row).toMatchObject({
      status: "succeeded",
      resolution: "reported_late",
      provider_receipt_json: JSON.stringify({ "io.example/op": "op_1" }),
      operator_attention: null,
    });
    expect(JSON.parse(row.result_json ?? "null")).toEqual(lateEvidence(call).result);
    expect(attemptRow(fx, call.effectId)).toMatchObject({ status: "succeeded" });
    expect(attemptRow(fx, call.effectId).late_result_json).not.toBeNull();
    expect(commandRow(fx.store, call.commandId)).toMatchObject({ status: "completed", result: lateEvidence(call).result });
    expect(runEvents(fx.store, call.runId, "effect.resolved").map((e) => e.payload["resolution"])).toEqual(["reported_late"]);
    expect(fx.double.totalWriteCount()).toBe(0); // the API never calls the provider for evidence
    // The same evidence again: duplicate, nothing changes.
    expect(await fx.runtime.ledger.lateResult(call.driver.instance, call.effectId, lateEvidence(call))).toEqual({
      outcome: "duplicate",
      status: "succeeded",
    });
  });

  it("refuses evidence whose key, tool or fingerprint is not the effect's, and changes nothing", async () => {
    fx = createDoubleWorld({ enabled: false });
    const call = await dispatchWrite(fx);
    await redeliverAndClaim(fx, call);
    const before = effectRow(fx.store, call.effectId);
    for (const bad of [
      { requestFingerprint: fingerprintArguments({ other: true }) },
      { idempotencyKey: call.effectId === call.idempotencyKey ? "01ARZ3NDEKTSV4RRFFQ69G5FAV" : call.effectId },
    ]) {
      expect(await fx.runtime.ledger.lateResult(call.driver.instance, call.effectId, lateEvidence(call, bad))).toMatchObject({
        outcome: "rejected",
        status: "unknown",
      });
    }
    await expect(
      fx!.runtime.ledger.lateResult(
        call.driver.instance,
        call.effectId,
        lateEvidence(call, { result: { ...lateEvidence(call).result, toolName: "deleteIssue" } }),
      ),
    ).rejects.toThrow(/request.invalid|names/);
    expect(effectRow(fx.store, call.effectId)).toEqual(before);
    expect(attemptRow(fx, call.effectId).late_result_json).toBeNull();
  });

  it("contradiction with not_executed: nothing is overridden, the effect is flagged late_evidence_contradiction and the evidence kept", async () => {
    fx = createDoubleWorld({ bind: false }); // flag on (the operator surface), no adapter: nothing reconciles inline
    const call = await dispatchWrite(fx);
    await redeliverAndClaim(fx, call);
    await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      elapsedMs: 20_000,
    });
    expect(effectRow(fx.store, call.effectId).status).toBe("not_executed");
    const answer = await fx.runtime.ledger.lateResult(call.driver.instance, call.effectId, lateEvidence(call));
    expect(answer).toMatchObject({ outcome: "rejected", status: "not_executed" });
    expect(answer.reason).toMatch(/^late_evidence_contradiction/);
    expect(effectRow(fx.store, call.effectId)).toMatchObject({
      status: "not_executed",
      resolution: "deadline_missed",
      operator_attention: "late_evidence_contradiction",
      result_json: null,
    });
    expect(attemptRow(fx, call.effectId).late_result_json).toBe(JSON.stringify(lateEvidence(call).result));
    // visible to an operator in list and show
    const listed = await fx.runtime.operator.list({ status: "not_executed", limit: 10 });
    expect(JSON.stringify(listed)).toContain("late_evidence_contradiction");
    expect(JSON.stringify(await fx.runtime.operator.show(call.effectId))).toContain("late_evidence_contradiction");
  });

  it("a tool-error result about a not_executed effect (e.g. a fenced key refused) is kept as evidence but is no contradiction", async () => {
    fx = createDoubleWorld({ enabled: false });
    const call = await dispatchWrite(fx);
    await redeliverAndClaim(fx, call);
    await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      elapsedMs: 20_000,
    });
    const refused = lateEvidence(call, { result: { ...lateEvidence(call).result, outputText: "idempotency_key_fenced", isError: true } });
    expect(await fx.runtime.ledger.lateResult(call.driver.instance, call.effectId, refused)).toMatchObject({
      outcome: "rejected",
      status: "not_executed",
    });
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", operator_attention: null });
    expect(attemptRow(fx, call.effectId).late_result_json).toContain("idempotency_key_fenced");
  });

  it("contradiction with succeeded and another result: the stored result stays, the effect is flagged", async () => {
    fx = createDoubleWorld({ enabled: false });
    const call = await dispatchWrite(fx);
    await redeliverAndClaim(fx, call);
    await fx.runtime.ledger.lateResult(call.driver.instance, call.effectId, lateEvidence(call));
    const other = lateEvidence(call, { result: { ...lateEvidence(call).result, outputText: "created op_2" } });
    expect(await fx.runtime.ledger.lateResult(call.driver.instance, call.effectId, other)).toMatchObject({
      outcome: "rejected",
      status: "succeeded",
    });
    const row = effectRow(fx.store, call.effectId);
    expect(row).toMatchObject({ status: "succeeded", resolution: "reported_late", operator_attention: "late_evidence_contradiction" });
    expect(JSON.parse(row.result_json ?? "null")).toMatchObject({ outputText: "created op_1" });
  });
});

describe("HTTP: the two Driver routes", () => {
  it("deadline-missed and late-result answer typed JSON; a bad body is a typed 400 that writes nothing", async () => {
    fx = createDoubleWorld({ enabled: false });
    const app = buildHttpApp(fx.runtime);
    const call = await dispatchWrite(fx);
    const token = call.driver.token;
    const bad = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/deadline-missed`,
      { connectionId: call.driver.connectionId, attempt: 1, elapsedMs: -5 },
      token,
    );
    expect(bad).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
    expect(effectRow(fx.store, call.effectId).status).toBe("executing");
    const badLate = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/late-result`,
      { ...lateEvidence(call), requestFingerprint: "nope" },
      token,
    );
    expect(badLate).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
    const ok = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/deadline-missed`,
      { connectionId: call.driver.connectionId, attempt: 1, elapsedMs: 15_000 },
      token,
    );
    expect(ok).toEqual({ status: 200, body: { outcome: "applied", status: "not_executed" } });
  });
});

describe("HTTP: evidence from a Driver whose instance was finalized while its call was in flight (lease loss)", () => {
  it("its complete is refused (fenced) and its late result settles the effect succeeded (reported_late); its other routes stay 409 driver.finalized", async () => {
    fx = createDoubleWorld({ enabled: false });
    const app = buildHttpApp(fx.runtime);
    const call = await dispatchWrite(fx);
    await finalizeDriver(fx, call); // heartbeat expiry or its own finalize: the executing effect is fenced
    expect(effectRow(fx.store, call.effectId).status).toBe("unknown");
    const token = call.driver.token;
    const complete = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/complete`,
      { connectionId: call.driver.connectionId, attempt: 1, result: lateEvidence(call).result, receipt: null },
      token,
    );
    expect(complete).toEqual({ status: 200, body: { outcome: "rejected", status: "unknown", reason: expect.any(String) } });
    const late = await requestJson(app, "POST", `/v1/drivers/effects/${call.effectId}/late-result`, lateEvidence(call), token);
    expect(late).toEqual({ status: 200, body: { outcome: "applied", status: "succeeded" } });
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "succeeded", resolution: "reported_late" });
    // only the reports about its own past attempts are taken: the protocol itself is closed to it
    const heartbeat = await requestJson(app, "POST", "/v1/drivers/heartbeat", { connectionId: call.driver.connectionId }, token);
    expect(heartbeat).toMatchObject({ status: 409, body: { error: { code: "driver.finalized" } } });
    const update = await requestJson(
      app,
      "POST",
      `/v1/drivers/commands/${call.commandId}/update`,
      { connectionId: call.driver.connectionId, status: "accepted" },
      token,
    );
    expect(update).toMatchObject({ status: 409, body: { error: { code: "driver.finalized" } } });
  });

  it("its missed-deadline report settles the fenced effect not_executed (deadline_missed): it sent nothing", async () => {
    fx = createDoubleWorld({ enabled: false });
    const app = buildHttpApp(fx.runtime);
    const call = await dispatchWrite(fx);
    await finalizeDriver(fx, call);
    const missed = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/deadline-missed`,
      { connectionId: call.driver.connectionId, attempt: 1, elapsedMs: 15_000 },
      call.driver.token,
    );
    expect(missed).toEqual({ status: 200, body: { outcome: "applied", status: "not_executed" } });
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "deadline_missed" });
  });

  it("a report from a connection that did not make the attempt is refused for a finalized instance, and changes nothing", async () => {
    fx = createDoubleWorld({ enabled: false });
    const app = buildHttpApp(fx.runtime);
    const call = await dispatchWrite(fx);
    await finalizeDriver(fx, call);
    const other = "01JDZZZZZZZZZZZZZZZZZZZZZZ";
    const late = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/late-result`,
      { ...lateEvidence(call), connectionId: other },
      call.driver.token,
    );
    expect(late.status).toBe(409);
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "unknown", resolution: null });
  });
});

// docs/DESIGN.md §3 rules 12-13: a missed deadline proves non-execution only because nothing was
// sent, and evidence about an attempt comes from the connection that made it. A report against the
// ledger's own evidence is a typed 409 that writes nothing.
describe("HTTP: a deadline-missed report against the ledger's evidence is refused", () => {
  function snapshot(f: DoubleWorld, call: DispatchedCall) {
    return {
      effect: effectRow(f.store, call.effectId),
      attempt: attemptRow(f, call.effectId),
      command: commandRow(f.store, call.commandId),
      events: runEvents(f.store, call.runId).length,
    };
  }

  it("after the Driver marked the attempt unknown (it sent or tried to send): 409 effect.attempt_sent, nothing written", async () => {
    fx = createDoubleWorld({ enabled: false });
    const app = buildHttpApp(fx.runtime);
    const call = await dispatchWrite(fx);
    const token = call.driver.token;
    const marked = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/mark-unknown`,
      { connectionId: call.driver.connectionId, attempt: 1, reason: "mcp_call_failed: socket hang up" },
      token,
    );
    expect(marked).toEqual({ status: 200, body: { outcome: "applied", status: "unknown" } });
    const before = snapshot(fx, call);
    const missed = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/deadline-missed`,
      { connectionId: call.driver.connectionId, attempt: 1, elapsedMs: 15_000 },
      token,
    );
    expect(missed).toMatchObject({ status: 409, body: { error: { code: "effect.attempt_sent" } } });
    expect(snapshot(fx, call)).toEqual(before);
    expect(before.effect).toMatchObject({ status: "unknown", resolution: null });
  });

  it("after a mark-unknown that found the attempt already fenced by a redelivery (duplicate): still refused", async () => {
    fx = createDoubleWorld({ enabled: false });
    const call = await dispatchWrite(fx);
    expect((await redeliverAndClaim(fx, call)).kind).toBe("unknown");
    const marked = await fx.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "mcp_call_failed: socket hang up",
    });
    expect(marked).toMatchObject({ outcome: "duplicate", status: "unknown" }); // already fenced: nothing changes but the send evidence
    const before = snapshot(fx, call);
    await expect(
      fx!.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
        connectionId: call.driver.connectionId,
        attempt: 1,
        elapsedMs: 30_000,
      }),
    ).rejects.toThrow(expect.objectContaining({ code: "effect.attempt_sent" }));
    expect(snapshot(fx, call)).toEqual(before);
  });

  it("after a complete (a provider result) about the attempt, rejected because the finalization repair fenced it: refused", async () => {
    fx = createDoubleWorld({ enabled: false });
    const call = await dispatchWrite(fx);
    await finalizeDriver(fx, call);
    const complete = await fx.runtime.ledger.complete(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      result: lateEvidence(call).result,
      receipt: null,
    });
    expect(complete).toMatchObject({ outcome: "rejected", status: "unknown" });
    const before = snapshot(fx, call);
    await expect(
      fx!.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
        connectionId: call.driver.connectionId,
        attempt: 1,
        elapsedMs: 30_000,
      }),
    ).rejects.toThrow(expect.objectContaining({ code: "effect.attempt_sent" }));
    expect(snapshot(fx, call)).toEqual(before);
  });

  it("from a later connection of the same instance about the attempt an earlier connection made: 409 effect.not_attempt_connection, nothing written", async () => {
    fx = createDoubleWorld({ enabled: false });
    const app = buildHttpApp(fx.runtime);
    const call = await dispatchWrite(fx);
    const c2 = await reconnectDriver(fx.runtime, call.driver);
    expect((await deliverAcceptClaim(fx.runtime, c2)).claim.kind).toBe("unknown"); // C2's redelivered claim fenced C1's attempt 1
    const before = snapshot(fx, call);
    const missed = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/deadline-missed`,
      { connectionId: c2.connectionId, attempt: 1, elapsedMs: 30_000 },
      c2.token,
    );
    expect(missed).toMatchObject({ status: 409, body: { error: { code: "effect.not_attempt_connection" } } });
    expect(snapshot(fx, call)).toEqual(before);
    // The connection that made the attempt (superseded since) may still report it: it sent nothing.
    const own = await requestJson(
      app,
      "POST",
      `/v1/drivers/effects/${call.effectId}/deadline-missed`,
      { connectionId: call.driver.connectionId, attempt: 1, elapsedMs: 30_000 },
      call.driver.token,
    );
    expect(own).toEqual({ status: 200, body: { outcome: "applied", status: "not_executed" } });
  });
});
