/**
 * A Driver's evidence whose compare-and-set loses to a concurrent write of the effect (docs/DESIGN.md
 * §3 rules 7, 12 and 13): evidence settles the effect whoever holds its lease, so a lost
 * compare-and-set is judged again on a fresh read and is never answered `rejected` (the Driver drops
 * a result once it is answered). On PostgreSQL another API instance takes the reconciliation lease
 * between the late result's read and its compare-and-set (its transaction held before its commit, the
 * late result waiting on the row lock: observed in pg_stat_activity, no timer). On both stores the
 * competing write (a lease, the sweep's bound flag) is committed in the same unit of work just before
 * the compare-and-set (the spied repository call), as a concurrent writer would.
 */
import { fingerprintArguments, type EffectDeadlineMissedRequest, type EffectLateResultRequest } from "@mosoo/contracts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { effectRepository } from "../src/modules/ledger/infrastructure/effect.repository.js";
import { reconciliationRepository } from "../src/modules/reconciliation/infrastructure/effect-reconciliation.repository.js";
import { StoreBusyError } from "../src/platform/db/store-busy.js";
import type { StoreTx } from "../src/platform/db/store.port.js";
import {
  buildRuntime,
  commitAtProvider,
  dispatchWrite,
  gateLookups,
  openDoubleWorld,
  pollUntil,
  redeliverAndClaim,
  type AnyStoreDoubleWorld,
  type DispatchedCall,
} from "./kit/index.js";
import { attemptsOf, commandOf, effectOf, reconciliationsOf } from "./helpers/store-rows.js";
import { holdingBeforeCommit, lockWaiters } from "./helpers/hold-before-commit.js";

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await fx?.close();
  fx = undefined;
});

/** A write the provider committed, fenced `unknown` by a redelivery while its result was on the way (reconciliation off on this instance). */
async function fencedWrite(kind: "sqlite" | "postgres"): Promise<{ w: AnyStoreDoubleWorld; call: DispatchedCall }> {
  const w = await openDoubleWorld({ store: kind, enabled: false, prefix: "late_cas" });
  fx = w;
  const call = await dispatchWrite(w);
  await commitAtProvider(w, call);
  expect((await redeliverAndClaim(w, call)).kind).toBe("unknown");
  return { w, call };
}

/** The Driver's late evidence about attempt 1 of `call` (the provider's real result). */
async function lateEvidence(w: AnyStoreDoubleWorld, call: DispatchedCall): Promise<EffectLateResultRequest> {
  const { requestId } = (await effectOf(w.store, call.effectId))!;
  return {
    connectionId: call.driver.connectionId,
    attempt: 1,
    idempotencyKey: call.idempotencyKey,
    toolName: "createIssue",
    requestFingerprint: fingerprintArguments(call.args),
    result: { outputText: "created op_1", requestId, serverId: "tracker", toolName: "createIssue" },
    receipt: { "io.example/op": "op_1" },
  };
}

const deadlineMissed = (call: DispatchedCall): EffectDeadlineMissedRequest => ({
  connectionId: call.driver.connectionId,
  attempt: 1,
  elapsedMs: 20_000,
});

/** The next settling compare-and-set on the effect (its `set` names a resolution) first commits `compete(tx, current)` in the same unit of work, then runs. */
function competeBeforeCas(compete: (tx: StoreTx, current: Parameters<typeof effectRepository.updateIfCurrent>[1]) => Promise<void>): void {
  const real = effectRepository.updateIfCurrent.bind(effectRepository);
  let done = false;
  vi.spyOn(effectRepository, "updateIfCurrent").mockImplementation(async (tx, current, set) => {
    if (!done && set.resolution !== undefined) {
      done = true;
      await compete(tx, current);
    }
    return real(tx, current, set);
  });
}

describe("late result racing a lease taken on another API instance (PostgreSQL, READ COMMITTED)", () => {
  it("the late result waits on the lease's row lock, loses its compare-and-set, is judged again and settles the effect reported_late", async () => {
    const { w, call } = await fencedWrite("postgres");
    // another API instance, reconciliation on, takes the effect's lease; its transaction is held before its commit
    const hold = holdingBeforeCommit(w.store);
    const other = buildRuntime(hold.store, w.clock, { heartbeatTtlMs: 3_600_000, reconciliation: { ...w.settings, enabled: true } });
    const open = gateLookups(w); // its lookup, once the lease commits, waits at the gate
    const { atCommit, release } = hold.arm(0);
    const reconciling = other.reconciler.reconcile(call.effectId, "operator");
    await atCommit;
    // the Driver's late result reads the effect as last committed (no lease) and its compare-and-set waits for the lease's row lock
    const evidence = await lateEvidence(w, call);
    const reporting = w.runtime.ledger.lateResult(call.driver.instance, call.effectId, evidence);
    await pollUntil(async () => ((await lockWaiters(w.store)) > 0 ? true : undefined), 60_000, "the late result waits on the row lock");
    release();
    const answer = await reporting;
    expect(answer).toEqual({ outcome: "applied", status: "succeeded" });
    expect(await effectOf(w.store, call.effectId)).toMatchObject({
      status: "succeeded",
      resolution: "reported_late",
      leaseOwner: null,
      resultJson: JSON.stringify(evidence.result),
    });
    expect((await commandOf(w.store, call.commandId))?.status).toBe("completed");
    // the reconciler's outcome then loses its compare-and-set: recorded superseded, nothing overridden
    open();
    expect((await reconciling).kind).toBe("superseded");
    expect(await effectOf(w.store, call.effectId)).toMatchObject({ status: "succeeded", resolution: "reported_late" });
    expect((await reconciliationsOf(w.store, call.effectId)).map((r) => r.outcome)).toContain("superseded");
  }, 180_000);
});

describe.each(["sqlite", "postgres"] as const)("evidence whose compare-and-set loses (%s)", (kind) => {
  it("late result: a lease taken between the read and the compare-and-set does not stop the evidence settling the effect", async () => {
    const { w, call } = await fencedWrite(kind);
    competeBeforeCas(async (tx, current) => {
      const now = w.clock.now();
      expect(await reconciliationRepository.acquireLease(tx, current.id, current.version, "other-instance", now, now + 30_000)).toBeTypeOf(
        "number",
      );
    });
    const evidence = await lateEvidence(w, call);
    expect(await w.runtime.ledger.lateResult(call.driver.instance, call.effectId, evidence)).toEqual({
      outcome: "applied",
      status: "succeeded",
    });
    expect(await effectOf(w.store, call.effectId)).toMatchObject({ status: "succeeded", resolution: "reported_late", leaseOwner: null });
    expect((await attemptsOf(w.store, call.effectId))[0]).toMatchObject({ status: "succeeded" });
    expect((await commandOf(w.store, call.commandId))?.status).toBe("completed");
  });

  it("late result: the sweep's lookup_bound_reached flag written meanwhile is cleared by the evidence's settle", async () => {
    const { w, call } = await fencedWrite(kind);
    competeBeforeCas(async (tx, current) => {
      const flag = { operatorAttention: "lookup_bound_reached" as const, nextLookupAtMs: null, updatedAtMs: w.clock.now() };
      expect(await effectRepository.updateIfCurrent(tx, current, flag)).toBe(true);
    });
    expect(await w.runtime.ledger.lateResult(call.driver.instance, call.effectId, await lateEvidence(w, call))).toEqual({
      outcome: "applied",
      status: "succeeded",
    });
    expect(await effectOf(w.store, call.effectId)).toMatchObject({ status: "succeeded", operatorAttention: null });
  });

  it("deadline missed: a lease taken between the read and the compare-and-set does not stop the proof settling the effect", async () => {
    const w = await openDoubleWorld({ store: kind, enabled: false, prefix: "late_cas" });
    fx = w;
    const call = await dispatchWrite(w);
    expect((await redeliverAndClaim(w, call)).kind).toBe("unknown");
    competeBeforeCas(async (tx, current) => {
      const now = w.clock.now();
      expect(await reconciliationRepository.acquireLease(tx, current.id, current.version, "other-instance", now, now + 30_000)).toBeTypeOf(
        "number",
      );
    });
    expect(await w.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, deadlineMissed(call))).toEqual({
      outcome: "applied",
      status: "not_executed",
    });
    expect(await effectOf(w.store, call.effectId)).toMatchObject({
      status: "not_executed",
      resolution: "deadline_missed",
      leaseOwner: null,
    });
  });

  it("a compare-and-set lost on every round answers 503 store.busy with nothing written (the Driver reports again)", async () => {
    const { w, call } = await fencedWrite(kind);
    const before = await effectOf(w.store, call.effectId);
    const real = effectRepository.updateIfCurrent.bind(effectRepository);
    vi.spyOn(effectRepository, "updateIfCurrent").mockImplementation(async (tx, current, set) => {
      expect(await real(tx, current, { updatedAtMs: w.clock.now() + 1 })).toBe(true); // someone else always gets there first
      return real(tx, current, set);
    });
    const reporting = w.runtime.ledger.lateResult(call.driver.instance, call.effectId, await lateEvidence(w, call));
    await expect(reporting).rejects.toBeInstanceOf(StoreBusyError);
    await expect(reporting).rejects.toMatchObject({ code: "store.busy", httpStatus: 503 });
    vi.restoreAllMocks();
    expect(await effectOf(w.store, call.effectId)).toEqual(before);
    expect((await attemptsOf(w.store, call.effectId))[0]?.lateResultJson).toBeNull();
    // once the store is quiet, the same report settles the effect
    expect(await w.runtime.ledger.lateResult(call.driver.instance, call.effectId, await lateEvidence(w, call))).toEqual({
      outcome: "applied",
      status: "succeeded",
    });
  });
});
