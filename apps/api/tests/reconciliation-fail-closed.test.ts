import { afterEach, describe, expect, it } from "vitest";
import type { AdapterFault } from "@mosoo/effect-reconciliation/testing";
import {
  commitAtProvider,
  connectDriver,
  createDoubleWorld,
  createTestWorld,
  deliverAcceptClaim,
  type DispatchedCall,
  dispatchWrite,
  type DoubleWorld,
  type DoubleWorldOptions,
  enqueueCreateIssue,
  finalizeDriver,
  reconnectDriver,
  redeliverAndClaim,
  seedRetentionCanary,
  until,
} from "./kit/index.js";
import {
  commandRow,
  effectRow,
  expectReconciled,
  expectStillUnknown,
  reconciliationRecords,
  runEvents,
} from "./helpers/reconciliation-db.js";

let fx: DoubleWorld | undefined;
afterEach(() => {
  fx?.close();
  fx = undefined;
});
function setup(opts: DoubleWorldOptions = {}): DoubleWorld {
  fx = createDoubleWorld(opts);
  return fx;
}

/** Finalization path, still_unknown: the command fails `external_effect.unknown` naming the schedule, after one `effect.reconciled`. */
function expectCommandFailedUnknown(f: DoubleWorld, call: DispatchedCall, nextLookupAtMs: number | null) {
  expect(commandRow(f.store, call.commandId)).toMatchObject({
    status: "failed",
    error: { code: "external_effect.unknown", details: { effectId: call.effectId, lookupCount: 1, nextLookupAtMs } },
  });
  const types = runEvents(f.store, call.runId).map((e) => e.type);
  expect(types.indexOf("effect.reconciled")).toBeGreaterThan(-1);
  expect(types.indexOf("effect.reconciled")).toBeLessThan(types.indexOf("tool_call.failed"));
  expect(runEvents(f.store, call.runId, "effect.reconciled")[0]!.payload).toMatchObject({
    outcome: "still_unknown",
    effectStatus: "unknown",
  });
}

describe("confirmed outcomes (the adapter is honest)", () => {
  it("finalization: a committed write becomes succeeded/reconciled and completes the command with the provider's result", async () => {
    const f = setup();
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call);
    const summary = await finalizeDriver(f, call);
    expect(summary).toMatchObject({ effectsFenced: 1, effectsReconciled: 1, commandsCompleted: 1, commandsFailed: 0, runsFailed: 1 });
    const { receipt } = expectReconciled(f.store, call.runId, call.effectId, "succeeded");
    const record = f.double.record(call.idempotencyKey)!;
    expect(receipt).toMatchObject({ providerOperationId: record.operationId, requestFingerprint: record.requestFingerprint });
    const result = { outputText: `created ${record.operationId}`, serverId: "tracker", toolName: "createIssue" };
    expect(JSON.parse(effectRow(f.store, call.effectId).result_json!)).toMatchObject(result);
    expect(commandRow(f.store, call.commandId)).toMatchObject({ status: "completed", result });
    expect(f.double.writeCount(call.idempotencyKey)).toBe(1);
  });

  it("redelivery: the claim answers completed with the provider's result; the provider was invoked once", async () => {
    const f = setup();
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call);
    const claim = await redeliverAndClaim(f, call);
    expect(claim).toMatchObject({
      kind: "completed",
      effectId: call.effectId,
      result: { outputText: expect.stringMatching(/^created op_/), toolName: "createIssue" },
    });
    expectReconciled(f.store, call.runId, call.effectId, "succeeded");
    expect(reconciliationRecords(f.store, call.effectId)[0]!.trigger).toBe("redelivery");
    expect(f.double.writeCount(call.idempotencyKey)).toBe(1);
  });

  it("finalization: a fenced key becomes not_executed/reconciled, the command fails external_effect.not_executed, a late write is refused", async () => {
    const f = setup();
    const call = await dispatchWrite(f);
    await finalizeDriver(f, call);
    expectReconciled(f.store, call.runId, call.effectId, "not_executed");
    expect(commandRow(f.store, call.commandId).error).toMatchObject({
      code: "external_effect.not_executed",
      details: { effectId: call.effectId },
    });
    expect(await f.double.commit(call.idempotencyKey, call.args)).toEqual({ status: "refused", reason: "fenced" });
  });
});

describe("DESIGN §5: a misbehaving adapter never changes the effect (finalization path)", () => {
  it.each<[AdapterFault, string]>([
    ["throws", "adapter_error"],
    ["rejects", "adapter_error"],
    ["garbage", "invalid_adapter_output"],
    ["oversized_receipt", "invalid_adapter_output"],
    ["oversized_result", "invalid_adapter_output"],
    ["wrong_key", "answer_mismatch"],
    ["wrong_tool", "answer_mismatch"],
  ])("%s → still_unknown %s, next lookup scheduled, command failed external_effect.unknown", async (fault, reason) => {
    const f = setup({ double: { faults: { adapterFault: fault } } });
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call); // the write did happen: only a validated answer may say so
    await finalizeDriver(f, call);
    const effect = expectStillUnknown(f.store, call.effectId, reason, "finalization");
    expect(effect).toMatchObject({ operator_attention: null, next_lookup_at_ms: f.clock.now() + f.settings.backoff.initialMs });
    expectCommandFailedUnknown(f, call, effect.next_lookup_at_ms);
    expect(f.lookups).toHaveLength(1);
    expect(f.double.writeCount(call.idempotencyKey)).toBe(1);
  });

  it("hangs ignoring its signal past the lookup timeout → still_unknown lookup_timeout", async () => {
    const f = setup({ lookupTimeoutMs: 200, double: { faults: { adapterFault: "hangs_ignoring_signal" } } });
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call);
    await finalizeDriver(f, call);
    const effect = expectStillUnknown(f.store, call.effectId, "lookup_timeout", "finalization");
    expect(effect.next_lookup_at_ms).toBe(f.clock.now() + 1_000);
    expectCommandFailedUnknown(f, call, effect.next_lookup_at_ms);
  });

  it.each<AdapterFault>(["conflicting_fingerprint", "none"])(
    "fingerprint conflict (%s) → still_unknown key_conflict for an operator, no next lookup, none by the sweep",
    async (fault) => {
      const f = setup({ double: { faults: { adapterFault: fault } } });
      const call = await dispatchWrite(f);
      // with fault "none" the provider itself recorded other arguments under the key
      const res = await f.double.commit(call.idempotencyKey, fault === "none" ? { ...call.args, title: "something else" } : call.args);
      expect(res.status).toBe("committed");
      await finalizeDriver(f, call);
      const effect = expectStillUnknown(f.store, call.effectId, "key_conflict", "finalization");
      expect(effect).toMatchObject({ operator_attention: "key_conflict", next_lookup_at_ms: null });
      expectCommandFailedUnknown(f, call, null);
      f.clock.advance(24 * 3_600_000);
      expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 0 });
      expect(f.lookups).toHaveLength(1);
    },
  );

  it("a key_conflict found on redelivery is not looked up again (nor cleared) when the Driver is then finalized", async () => {
    const f = setup();
    const call = await dispatchWrite(f);
    await f.double.commit(call.idempotencyKey, { ...call.args, title: "something else" });
    expect(await redeliverAndClaim(f, call)).toEqual({ kind: "unknown", effectId: call.effectId });
    expect(effectRow(f.store, call.effectId).operator_attention).toBe("key_conflict");
    f.double.setFaults({ adapterFault: "rejects" }); // whatever a further lookup would say
    await f.runtime.repair.finalize(call.driver.instance.id, "heartbeat_expired");
    expect(f.lookups).toHaveLength(1);
    expect(effectRow(f.store, call.effectId)).toMatchObject({
      status: "unknown",
      operator_attention: "key_conflict",
      next_lookup_at_ms: null,
      lookup_count: 1,
    });
    expect(commandRow(f.store, call.commandId).error).toMatchObject({ code: "external_effect.unknown" });
  });

  it("confirmed_not_executed after the retention window → still_unknown retention_expired for an operator", async () => {
    const f = setup({ double: { retentionWindowMs: 60_000 } });
    const call = await dispatchWrite(f);
    f.clock.advance(61_000);
    await finalizeDriver(f, call);
    const effect = expectStillUnknown(f.store, call.effectId, "retention_expired", "finalization");
    expect(effect).toMatchObject({ operator_attention: "retention_expired", next_lookup_at_ms: null });
    expectCommandFailedUnknown(f, call, null);
  });

  it("confirmed_not_executed without a fence inside the in-flight window → in_flight_window; a sweep after it confirms not_executed", async () => {
    const f = setup({ double: { keyFencing: { kind: "max_in_flight", maxInFlightMs: 60_000 } } });
    await seedRetentionCanary(f); // a committed write of the same tool: the retention canary (DESIGN §4)
    const call = await dispatchWrite(f);
    await finalizeDriver(f, call);
    const effect = expectStillUnknown(f.store, call.effectId, "in_flight_window", "finalization");
    expect(effect.next_lookup_at_ms).toBeGreaterThanOrEqual(effect.last_dispatched_at_ms! + 60_000);
    expectCommandFailedUnknown(f, call, effect.next_lookup_at_ms);

    f.clock.advance(effect.next_lookup_at_ms! - f.clock.now() - 1);
    expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 0 });
    f.clock.advance(1);
    expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 1, effectsResolved: 1 });
    expectReconciled(f.store, call.runId, call.effectId, "not_executed");
    expect(reconciliationRecords(f.store, call.effectId).map((r) => [r.trigger, r.outcome])).toEqual([
      ["finalization", "still_unknown"],
      ["sweep", "confirmed_not_executed"],
    ]);
    // the command was already terminal: it keeps its error
    expect(commandRow(f.store, call.commandId).error).toMatchObject({ code: "external_effect.unknown" });
  });

  it("a late commit inside the in-flight window is found by the next lookup (succeeded, never not_executed)", async () => {
    const f = setup({ double: { keyFencing: { kind: "max_in_flight", maxInFlightMs: 60_000 } } });
    const call = await dispatchWrite(f);
    const late = f.double.commit(call.idempotencyKey, call.args, { delayMs: 30_000 });
    await finalizeDriver(f, call);
    expectStillUnknown(f.store, call.effectId, "in_flight_window", "finalization");
    f.clock.advance(70_000); // the window is the 10 s send-by deadline (rule 12) plus the 60 s maximum in-flight time
    expect((await late).status).toBe("committed");
    await f.runtime.sweep.sweepOnce();
    expectReconciled(f.store, call.runId, call.effectId, "succeeded");
  });
  it("a reconcile step that makes no lookup (ineligible: invalid lookup timeout) counts no lookup and leaves no record", async () => {
    const f = setup({ lookupTimeoutMs: 0 }); // not reachable from config (min 100), only via createRuntime
    const call = await dispatchWrite(f);
    await finalizeDriver(f, call);
    expect(f.lookups).toHaveLength(0);
    expect(reconciliationRecords(f.store, call.effectId)).toEqual([]);
    expect(commandRow(f.store, call.commandId).error).toMatchObject({ code: "external_effect.unknown" });
    expect(effectRow(f.store, call.effectId)).toMatchObject({
      status: "unknown",
      lease_owner: null,
      next_lookup_at_ms: null,
      lookup_count: 0,
    });
  });
});

describe("DESIGN §5 via the redelivery claim", () => {
  it.each<[AdapterFault, string]>([
    ["rejects", "adapter_error"],
    ["garbage", "invalid_adapter_output"],
    ["oversized_receipt", "invalid_adapter_output"],
    ["wrong_key", "answer_mismatch"],
    ["conflicting_fingerprint", "key_conflict"],
  ])("%s → claim unknown, still_unknown %s, the command stays with the Driver", async (fault, reason) => {
    const f = setup({ double: { faults: { adapterFault: fault } } });
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call);
    expect(await redeliverAndClaim(f, call)).toEqual({ kind: "unknown", effectId: call.effectId });
    expectStillUnknown(f.store, call.effectId, reason, "redelivery");
    expect(commandRow(f.store, call.commandId).status).toBe("accepted");
  });
});

describe("DESIGN §3 rule 4 / §6: no eligible adapter, or the flag off → exactly the baseline fence, zero lookups", () => {
  const paths = ["finalization", "redelivery"] as const;
  async function runPath(f: DoubleWorld, path: (typeof paths)[number], opts: { serverId?: string; toolName?: string } = {}) {
    const call = await dispatchWrite(f, opts);
    await f.double.commit(call.idempotencyKey, call.args);
    if (path === "redelivery") {
      expect(await redeliverAndClaim(f, call)).toEqual({ kind: "unknown", effectId: call.effectId });
    } else {
      await finalizeDriver(f, call);
      // DESIGN §3 rule 14: unbound or flag off, the answer is still external_effect.unknown (never a resend)
      expect(commandRow(f.store, call.commandId).error).toMatchObject({
        code: "external_effect.unknown",
        retryable: false,
        details: { effectId: call.effectId, effectIds: [call.effectId] },
      });
    }
    f.clock.advance(3_600_000);
    expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 0 });
    expect(f.lookups).toHaveLength(0);
    expect(f.double.lookupCount(call.idempotencyKey)).toBe(0);
    expect(reconciliationRecords(f.store, call.effectId)).toEqual([]);
    expect(effectRow(f.store, call.effectId)).toMatchObject({
      status: "unknown",
      lookup_count: 0,
      next_lookup_at_ms: null,
      operator_attention: null,
    });
    expect(runEvents(f.store, call.runId, "effect.reconciled")).toEqual([]);
    return call;
  }

  it.each(paths)("server without a binding (%s)", async (path) => {
    await runPath(setup(), path, { serverId: "wiki" });
  });

  it.each(paths)("tool the bound adapter does not declare (%s)", async (path) => {
    await runPath(setup(), path, { toolName: "closeIssue" });
  });

  it.each(paths)(
    "flag off with a binding (%s): same events as a runtime without reconciliation; an operator trigger is ineligible",
    async (path) => {
      const f = setup({ enabled: false });
      const call = await runPath(f, path);
      expect(await f.runtime.reconciler.reconcile(call.effectId, "operator")).toMatchObject({ kind: "ineligible", reasonCode: "flag_off" });
      expect(f.lookups).toHaveLength(0);

      const base = createTestWorld();
      try {
        const driver = await connectDriver(base.runtime);
        const b = await enqueueCreateIssue(base.runtime, driver);
        await deliverAcceptClaim(base.runtime, driver);
        if (path === "redelivery") await deliverAcceptClaim(base.runtime, await reconnectDriver(base.runtime, driver));
        else await base.runtime.repair.finalize(driver.instance.id, "driver_request");
        const baseTypes = (await base.runtime.runs.getRunView(b.runId)).events.map((e) => e.type);
        expect(runEvents(f.store, call.runId).map((e) => e.type)).toEqual(baseTypes);
      } finally {
        base.close();
      }
    },
  );
});

describe("DESIGN §3 rule 7: CAS lost while the lookup is in flight → superseded, nothing else changes", () => {
  function bumpVersion(f: DoubleWorld, effectId: string) {
    expect(f.store.sqlite.prepare("UPDATE external_tool_effects SET version = version + 1 WHERE id = ?").run(effectId).changes).toBe(1);
    return effectRow(f.store, effectId);
  }

  it("redelivery claim", async () => {
    const f = setup({ double: { faults: { lookupDelayMs: 5_000 } } });
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call);
    const claiming = redeliverAndClaim(f, call);
    await until(() => f.clock.pendingTimers() === 1); // the adapter waits on the double's clock
    const before = bumpVersion(f, call.effectId);
    f.clock.advance(5_000);
    expect(await claiming).toEqual({ kind: "unknown", effectId: call.effectId });
    expect(f.double.lookupCount(call.idempotencyKey)).toBe(1);
    const records = reconciliationRecords(f.store, call.effectId);
    expect(records).toHaveLength(1);
    // the lost answer is kept as evidence in the record, never applied
    expect(records[0]).toMatchObject({
      outcome: "superseded",
      reason_code: "cas_lost",
      trigger: "redelivery",
      error: "the lost lookup answered confirmed_succeeded",
    });
    expect(JSON.parse(records[0]!.receipt_json!)).toMatchObject({ observedAt: expect.any(String) });
    expect(records[0]!.result_json).not.toBeNull();
    // the loser only releases its own lease
    expect(effectRow(f.store, call.effectId)).toEqual({ ...before, lease_owner: null, lease_expires_at_ms: null });
    expect(runEvents(f.store, call.runId, "effect.reconciled")).toEqual([]);
    expect(commandRow(f.store, call.commandId).status).toBe("accepted");
  });

  it("finalization: an operator resolved the effect meanwhile; the command ends from the effect as it now is", async () => {
    const f = setup({ double: { faults: { lookupDelayMs: 5_000 } } });
    const call = await dispatchWrite(f);
    const finalizing = finalizeDriver(f, call);
    await until(() => f.clock.pendingTimers() === 1);
    f.store.sqlite
      .prepare("UPDATE external_tool_effects SET status = 'not_executed', resolution = 'operator', version = version + 1 WHERE id = ?")
      .run(call.effectId);
    const before = effectRow(f.store, call.effectId);
    f.clock.advance(5_000);
    await finalizing;
    expect(reconciliationRecords(f.store, call.effectId).map((r) => [r.outcome, r.reason_code])).toEqual([["superseded", "cas_lost"]]);
    // the loser only releases its own lease
    expect(effectRow(f.store, call.effectId)).toEqual({ ...before, lease_owner: null, lease_expires_at_ms: null });
    expect(runEvents(f.store, call.runId, "effect.reconciled")).toEqual([]);
    expect(commandRow(f.store, call.commandId).error).toMatchObject({
      code: "external_effect.not_executed",
      details: { resolution: "operator" },
    });
  });
});
