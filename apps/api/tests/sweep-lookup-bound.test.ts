/**
 * An `unknown` effect counted at or past the lookup bound but never flagged reaches an operator through
 * the sweep (docs/DESIGN.md §6.3), on both stores: (1) the bound's lookup was counted by an API instance
 * that died, an operator's lookup took its expired lease over and let it lapse (given back uncounted);
 * (2) a restart lowered `maxLookups` below an effect's count. The sweep flags `lookup_bound_reached`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { buildRuntime, commitAtProvider, dispatchWrite, openDoubleWorld, type AnyStoreDoubleWorld } from "./kit/index.js";
import { reconciliationRepository } from "../src/modules/reconciliation/infrastructure/effect-reconciliation.repository.js";
import { LEASE_LAPSED } from "../src/modules/reconciliation/application/effect-reconciler.service.js";
import { effectOf, reconciliationsOf } from "./helpers/store-rows.js";

const KINDS = ["sqlite", "postgres"] as const;

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

async function unknownEffect(w: AnyStoreDoubleWorld): Promise<string> {
  const call = await dispatchWrite(w);
  await commitAtProvider(w, call);
  await w.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
    connectionId: call.driver.connectionId,
    attempt: 1,
    reason: "transport closed",
  });
  return call.effectId;
}

describe.each(KINDS)("an unknown effect at the lookup bound is flagged, not left unscheduled (%s)", (kind) => {
  it("operator-triggered takeover of a dead lookup's expired lease at the bound that lapses: the sweep must flag lookup_bound_reached ", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "atk_bound" });
    const w = fx;
    const effectId = await unknownEffect(w);
    // max - 1 lookups already made (each scheduled the next one); the last one is due now
    await w.store.transaction((tx) => {
      const t = tx.tables.externalToolEffects;
      return tx.db
        .update(t)
        .set({ lookupCount: w.settings.maxLookups - 1, nextLookupAtMs: w.clock.now(), version: 50 })
        .where(eq(t.id, effectId));
    });
    // an API instance took the lease for the max-th lookup (counted: lookupCount = max) and died
    const now = w.clock.now();
    expect(
      await w.store.transaction((tx) => reconciliationRepository.acquireLease(tx, effectId, 50, "dead-api", now, now + w.settings.leaseMs)),
    ).toBeTypeOf("number");
    w.clock.advance(w.settings.leaseMs + 1);
    // an operator triggers a lookup on another instance; that instance stalls past what its lease covers
    const other = buildRuntime(w.store, w.clock, {
      heartbeatTtlMs: 3_600_000,
      reconciliation: {
        ...w.settings,
        beforeLookup: async () => {
          w.clock.advance(w.settings.leaseMs - w.settings.lookupTimeoutMs + 1);
        },
      },
    });
    expect(await other.reconciler.reconcile(effectId, "operator")).toMatchObject({ kind: "ineligible", reasonCode: LEASE_LAPSED });
    const stuck = (await effectOf(w.store, effectId))!;
    expect(stuck).toMatchObject({ status: "unknown", leaseOwner: null, lookupCount: w.settings.maxLookups, operatorAttention: null });
    // sweeps (several passes, time passing) must either look it up or flag it for an operator
    for (let i = 0; i < 3; i++) {
      w.clock.advance(60_000);
      await w.runtime.sweep.sweepOnce();
    }
    const after = (await effectOf(w.store, effectId))!;
    expect(after).toMatchObject({ status: "unknown", operatorAttention: "lookup_bound_reached", nextLookupAtMs: null });
  });

  it("maxLookups lowered (restart with a smaller bound): a due effect already past the new bound is flagged", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "atk_bound2" });
    const w = fx;
    const effectId = await unknownEffect(w);
    // five lookups made under the old bound, the next one scheduled now
    await w.store.transaction((tx) => {
      const t = tx.tables.externalToolEffects;
      return tx.db
        .update(t)
        .set({ lookupCount: w.settings.maxLookups + 1, nextLookupAtMs: w.clock.now() })
        .where(eq(t.id, effectId));
    });
    for (let i = 0; i < 3; i++) {
      w.clock.advance(60_000);
      await w.runtime.sweep.sweepOnce();
    }
    const after = (await effectOf(w.store, effectId))!;
    expect(after).toMatchObject({ status: "unknown", operatorAttention: "lookup_bound_reached", nextLookupAtMs: null });
  });

  it("the flag is recorded (still_unknown/lookup_bound_reached, no lookup made) and moves the console's change feed, once", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "atk_bound3" });
    const w = fx;
    const effectId = await unknownEffect(w);
    await w.store.transaction((tx) => {
      const t = tx.tables.externalToolEffects;
      return tx.db.update(t).set({ lookupCount: w.settings.maxLookups, nextLookupAtMs: w.clock.now() }).where(eq(t.id, effectId));
    });
    const before = await w.runtime.operator.changeMarker();
    w.clock.advance(60_000);
    await w.runtime.sweep.sweepOnce();
    expect(await effectOf(w.store, effectId)).toMatchObject({
      operatorAttention: "lookup_bound_reached",
      lookupCount: w.settings.maxLookups,
    });
    expect(w.lookups).toHaveLength(0);
    const flagged = await w.runtime.operator.changeMarker();
    expect(flagged).not.toBe(before);
    const records = await reconciliationsOf(w.store, effectId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      trigger: "sweep",
      outcome: "still_unknown",
      reasonCode: "lookup_bound_reached",
      adapterId: w.adapter.declaration.id,
      nextLookupAtMs: null,
      finishedAtMs: w.clock.now(),
    });
    // later sweeps leave the flagged effect alone: nothing more recorded, the feed stays put
    w.clock.advance(60_000);
    await w.runtime.sweep.sweepOnce();
    expect(await reconciliationsOf(w.store, effectId)).toHaveLength(1);
    expect(await w.runtime.operator.changeMarker()).toBe(flagged);
  });
});
