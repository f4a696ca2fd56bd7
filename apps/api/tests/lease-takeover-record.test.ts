/**
 * A reconciler that takes over an EXPIRED lease (docs/DESIGN.md §11: leases expire; the lookup that
 * lease counted died without an outcome) records that dead lookup `still_unknown` /
 * `lookup_interrupted`, in the takeover's own transaction, exactly as the expired-lease cleanup of the
 * sweep does; the cleanup then finds nothing to record twice. Through `reconcile` and through the
 * batch lease, on both stores.
 */
import { afterEach, describe, expect, it } from "vitest";
import { reconciliationRepository } from "../src/modules/reconciliation/infrastructure/effect-reconciliation.repository.js";
import { commitAtProvider, dispatchWrite, openDoubleWorld, type AnyStoreDoubleWorld, type DispatchedCall } from "./kit/index.js";
import { effectOf, reconciliationsOf } from "./helpers/store-rows.js";

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

/** An unknown effect whose write the provider committed, and a lease an API instance took and died holding, expired now. */
async function expiredLeaseOfDeadLookup(kind: "sqlite" | "postgres"): Promise<{ w: AnyStoreDoubleWorld; call: DispatchedCall }> {
  const w = await openDoubleWorld({ store: kind, prefix: "lease_takeover" });
  fx = w;
  const call = await dispatchWrite(w);
  await commitAtProvider(w, call);
  await w.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
    connectionId: call.driver.connectionId,
    attempt: 1,
    reason: "transport closed",
  });
  const before = (await effectOf(w.store, call.effectId))!;
  const now = w.clock.now();
  const taken = await w.store.transaction((tx) =>
    reconciliationRepository.acquireLease(tx, call.effectId, before.version, "dead-api", now, now + w.settings.leaseMs),
  );
  expect(taken).toBe(before.lookupCount + 1);
  w.clock.advance(w.settings.leaseMs + 1);
  return { w, call };
}

const recordsOf = async (w: AnyStoreDoubleWorld, effectId: string) =>
  (await reconciliationsOf(w.store, effectId)).map((r) => `${r.trigger}/${r.outcome}/${r.reasonCode ?? "-"}`);

describe.each(["sqlite", "postgres"] as const)("taking over an expired lease (%s)", (kind) => {
  it("reconcile records the dead lookup lookup_interrupted, then its own outcome; the sweep's cleanup records nothing more", async () => {
    const { w, call } = await expiredLeaseOfDeadLookup(kind);
    expect((await w.runtime.reconciler.reconcile(call.effectId, "operator")).kind).toBe("confirmed_succeeded");
    expect(await recordsOf(w, call.effectId)).toEqual(["operator/still_unknown/lookup_interrupted", "operator/confirmed_succeeded/-"]);
    const interrupted = (await reconciliationsOf(w.store, call.effectId))[0]!;
    expect(interrupted).toMatchObject({ error: expect.stringContaining("lease expired"), finishedAtMs: w.clock.now() });
    expect(await effectOf(w.store, call.effectId)).toMatchObject({ status: "succeeded", lookupCount: 2 });
    await w.runtime.sweep.sweepOnce();
    expect(await recordsOf(w, call.effectId)).toHaveLength(2);
  });

  it("the record commits with the takeover or not at all: a takeover rolled back at its commit leaves the dead lease and no record", async () => {
    const { w, call } = await expiredLeaseOfDeadLookup(kind);
    let failNext = true;
    w.store.observeDurableWrites({
      beforeCommit() {
        if (!failNext) return;
        failNext = false;
        throw new Error("crash before the takeover's commit");
      },
      afterCommit() {},
    });
    await expect(w.runtime.reconciler.reconcile(call.effectId, "operator")).rejects.toThrow("crash before the takeover's commit");
    w.store.observeDurableWrites(null);
    expect(await effectOf(w.store, call.effectId)).toMatchObject({ leaseOwner: "dead-api", lookupCount: 1 });
    expect(await recordsOf(w, call.effectId)).toEqual([]);
    // taken over again: recorded once
    expect((await w.runtime.reconciler.reconcile(call.effectId, "operator")).kind).toBe("confirmed_succeeded");
    expect(await recordsOf(w, call.effectId)).toEqual(["operator/still_unknown/lookup_interrupted", "operator/confirmed_succeeded/-"]);
  });

  it("the batch lease (sweep) takes it over and records lookup_interrupted in its lease transaction, before any lookup", async () => {
    const { w, call } = await expiredLeaseOfDeadLookup(kind);
    const row = (await effectOf(w.store, call.effectId))!;
    const [leased] = await w.runtime.reconciler.leaseBatch([row], "sweep");
    expect(leased && "owner" in leased).toBe(true);
    expect(w.lookups).toHaveLength(0);
    expect(await recordsOf(w, call.effectId)).toEqual(["sweep/still_unknown/lookup_interrupted"]);
    expect(await effectOf(w.store, call.effectId)).toMatchObject({ lookupCount: 2, leaseOwner: (leased as { owner: string }).owner });
  });
});
