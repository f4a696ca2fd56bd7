// A recovery outcome is judged against the row its lease left, with the lookup count the lease statement
// returned: a lease given back uncounted after the caller's read changes the count without moving the
// version, so the read's count + 1 would park the effect at the lookup bound one lookup early.
import { afterEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { dispatchWrite, openDoubleWorld, type AnyStoreDoubleWorld } from "./kit/index.js";
import { reconciliationRepository } from "../src/modules/reconciliation/infrastructure/effect-reconciliation.repository.js";
import { effectOf } from "./helpers/store-rows.js";

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

describe.each(["sqlite", "postgres"] as const)("the leased row's lookup count after an uncounted give-back (%s)", (kind) => {
  it("an outcome is judged with the stored lookup count, not the pre-lease read's", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "leased_count", maxLookups: 4 });
    const w = fx;
    const call = await dispatchWrite(w);
    await w.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "transport closed",
    });
    // two lookups made so far (max 4)
    await w.store.transaction((tx) => {
      const t = tx.tables.externalToolEffects;
      return tx.db.update(t).set({ lookupCount: 2, nextLookupAtMs: w.clock.now(), version: 50 }).where(eq(t.id, call.effectId));
    });
    const now = w.clock.now();
    // reconciler A (another instance) leases it: count 3, version 51
    expect(
      await w.store.transaction((tx) => reconciliationRepository.acquireLease(tx, call.effectId, 50, "A", now, now + w.settings.leaseMs)),
    ).toBe(3);
    // reconciler B reads the row while A's lease is live (e.g. a batch's rows, or reconcile's read)
    const readByB = (await effectOf(w.store, call.effectId))!;
    expect(readByB).toMatchObject({ version: 51, lookupCount: 3, leaseOwner: "A" });
    // A gives its lease back unused, uncounted (ineligible answer / lease lapsed / batch leftovers): count 2, version STILL 51
    expect(await w.store.transaction((tx) => reconciliationRepository.releaseLease(tx, call.effectId, "A", true))).toBe(true);
    expect(await effectOf(w.store, call.effectId)).toMatchObject({ version: 51, lookupCount: 2, leaseOwner: null });
    // B leases the row it read (CAS on version 51 passes): stored count 3 = the 3rd lookup of 4
    w.double.setFaults({ adapterFault: "rejects" }); // the lookup answers still_unknown
    const [leased] = await w.runtime.reconciler.leaseBatch([readByB], "operator");
    expect(leased && "owner" in leased).toBe(true);
    const result = await w.runtime.reconciler.reconcileLeased(leased as never, "operator");
    expect(result.kind).toBe("still_unknown");
    const stored = (await effectOf(w.store, call.effectId))!;
    expect(stored.lookupCount).toBe(3); // 3 lookups counted, bound is 4
    // what the runtime answered must be the row as stored ...
    expect(result.effect?.lookupCount).toBe(stored.lookupCount);
    // ... and with 3 of 4 lookups made the effect must stay scheduled, not parked at the operator
    expect(stored).toMatchObject({ operatorAttention: null });
    expect(stored.nextLookupAtMs).not.toBeNull();
  });
});
