// A recovery outcome on PostgreSQL is one statement (compare-and-set, record, run event): all of it when the
// compare-and-set passes, nothing of it when it is lost, and a rolled-back transaction when the run is gone.
import { afterEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { dispatchUnknownWrite, openDoubleWorld, type AnyStoreDoubleWorld } from "./kit/index.js";
import { reconciliationRepository } from "../src/modules/reconciliation/infrastructure/effect-reconciliation.repository.js";
import { pgOutcomeWriteRepository } from "../src/modules/reconciliation/infrastructure/pg-outcome-write.repository.js";
import { effectOf, eventsOf, reconciliationsOf } from "./helpers/store-rows.js";

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

/** A dispatched write made `unknown` and leased by `owner`; returns the world, the effect as leased and the run's last event seq. */
async function leasedUnknown(kind: "pglite" | "postgres", owner: string) {
  fx = await openDoubleWorld({ store: kind, prefix: "pg_outcome" });
  const w = fx;
  const call = await dispatchUnknownWrite(w);
  const read = (await effectOf(w.store, call.effectId))!;
  const now = w.clock.now();
  const count = await w.store.transaction((tx) =>
    reconciliationRepository.acquireLease(tx, read.id, read.version, owner, now, now + w.settings.leaseMs),
  );
  expect(count).toBe(1);
  const leased = (await effectOf(w.store, call.effectId))!;
  const seqBefore = (await eventsOf(w.store, leased.runId)).length;
  return { w, leased, seqBefore };
}

/** The outcome write of `leased` as the sweep writes a `still_unknown` answer (next lookup at `now` + 1 s). */
function stillUnknown(w: AnyStoreDoubleWorld, leased: NonNullable<Awaited<ReturnType<typeof effectOf>>>, version: number, owner: string) {
  const now = w.clock.now();
  return {
    current: leased,
    version,
    owner,
    set: { nextLookupAtMs: now + 1_000, updatedAtMs: now },
    record: {
      id: `rec-${version}-${owner}`,
      effectId: leased.id,
      adapterId: "tracker",
      adapterVersion: "1",
      adapterPackage: null,
      adapterPackageVersion: null,
      adapterDeclarationHash: null,
      trigger: "sweep" as const,
      outcome: "still_unknown" as const,
      reasonCode: "not_found_yet",
      receiptJson: null,
      resultJson: null,
      error: null,
      startedAtMs: now,
      finishedAtMs: now,
    },
    payload: (row: { status: string }) => ({ effectId: leased.id, effectStatus: row.status }),
    nowMs: now,
  };
}

describe.each(["pglite", "postgres"] as const)("the recovery outcome as one statement (%s)", (kind) => {
  it("a lost compare-and-set writes nothing: no effect change, no record, no run event, no seq bump", async () => {
    const { w, leased, seqBefore } = await leasedUnknown(kind, "A");
    for (const [version, owner] of [
      [leased.version + 1, "A"],
      [leased.version, "B"],
    ] as const) {
      const out = await w.store.transaction((tx) => pgOutcomeWriteRepository.commit(tx, stillUnknown(w, leased, version, owner)));
      expect(out).toBeUndefined();
    }
    expect(await effectOf(w.store, leased.id)).toEqual(leased);
    expect(await reconciliationsOf(w.store, leased.id)).toEqual([]);
    expect(await eventsOf(w.store, leased.runId)).toHaveLength(seqBefore);
    const run = await w.store.read((tx) => tx.db.select().from(tx.tables.sessionRuns).where(eq(tx.tables.sessionRuns.id, leased.runId)));
    expect(run[0]!.lastEventSeq).toBe(seqBefore);
  });

  it("a won compare-and-set writes the outcome, the record and the event at the run's next seq, and returns the row as stored", async () => {
    const { w, leased, seqBefore } = await leasedUnknown(kind, "A");
    const write = stillUnknown(w, leased, leased.version, "A");
    const out = await w.store.transaction((tx) => pgOutcomeWriteRepository.commit(tx, write));
    const stored = await effectOf(w.store, leased.id);
    expect(out).toEqual(stored);
    expect(stored).toMatchObject({ version: leased.version + 1, leaseOwner: null, nextLookupAtMs: write.set.nextLookupAtMs });
    const records = await reconciliationsOf(w.store, leased.id);
    expect(records).toMatchObject([{ id: write.record.id, outcome: "still_unknown", nextLookupAtMs: write.set.nextLookupAtMs }]);
    const events = await eventsOf(w.store, leased.runId);
    expect(events).toHaveLength(seqBefore + 1);
    expect(events.at(-1)).toMatchObject({ seq: seqBefore + 1, type: "effect.reconciled", terminal: false });
    expect(JSON.parse(events.at(-1)!.payloadJson)).toEqual({ effectId: leased.id, effectStatus: "unknown" });
  });

  it("a record the store refuses rolls the whole outcome back (the effect keeps its lease)", async () => {
    const { w, leased, seqBefore } = await leasedUnknown(kind, "A");
    const bad = { ...stillUnknown(w, leased, leased.version, "A") };
    bad.record = { ...bad.record, trigger: "no_such_trigger" as never };
    await expect(w.store.transaction((tx) => pgOutcomeWriteRepository.commit(tx, bad))).rejects.toThrow();
    expect(await effectOf(w.store, leased.id)).toEqual(leased);
    expect(await reconciliationsOf(w.store, leased.id)).toEqual([]);
    expect(await eventsOf(w.store, leased.runId)).toHaveLength(seqBefore);
  });

  it("a batch's give-backs are one statement: each lease still held by its owner is released and uncounted, others untouched", async () => {
    const { w, leased } = await leasedUnknown(kind, "A");
    const released = await w.store.transaction((tx) =>
      pgOutcomeWriteRepository.releaseLeases(tx, [
        { effectId: leased.id, owner: "B" },
        { effectId: "no-such-effect", owner: "A" },
      ]),
    );
    expect(released).toBe(0);
    expect(await effectOf(w.store, leased.id)).toEqual(leased);
    const again = await w.store.transaction((tx) => pgOutcomeWriteRepository.releaseLeases(tx, [{ effectId: leased.id, owner: "A" }]));
    expect(again).toBe(1);
    expect(await effectOf(w.store, leased.id)).toEqual({ ...leased, leaseOwner: null, leaseExpiresAtMs: null, lookupCount: 0 });
  });
});
