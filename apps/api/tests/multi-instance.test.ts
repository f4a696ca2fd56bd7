// Several API instances on ONE store (docs/DESIGN.md §11): two runtimes on one SQLite file (two
// processes' worth of state: separate connections, separate memory, one manual clock and one provider
// double). A Driver's repair is claimed in the store, so two instances never repair it at once; the
// sweep's Driver part runs on one instance at a time while its reconciliation part runs on every
// instance at once, sharing the backlog through per-effect leases; a reconciliation lease is taken over
// only once it expired; no effect is looked up twice. Store-busy answers between the two connections are retried
// (as the sweep and the HTTP edge do).
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { retryWhenBusy, BACKGROUND_BUSY_RETRY } from "../src/platform/db/store-busy.js";
import {
  buildRuntime,
  commitAtProvider,
  createDoubleWorld,
  createTempDir,
  dispatchWrite,
  openTestStore,
  type DoubleWorld,
  type Runtime,
  type Store,
  type TempDir,
} from "./kit/index.js";
import { effectRow, reconciliationRecords, runEvents } from "./helpers/reconciliation-db.js";
import { effectRepository } from "../src/modules/ledger/infrastructure/effect.repository.js";
import { LEASED_ELSEWHERE, type LeasedEffect } from "../src/modules/reconciliation/application/reconciliation-lease-batch.service.js";

const HEARTBEAT_TTL_MS = 3_600_000;
const LEASE_MS = 30_000;

interface TwoInstances {
  a: DoubleWorld;
  /** Instance B: its own connection to the same file and its own runtime (own memory, own instance id). */
  b: { store: Store; runtime: Runtime };
}

let temp: TempDir | undefined;
let open: TwoInstances | undefined;
afterEach(() => {
  open?.b.store.closeNow();
  open?.a.close();
  open = undefined;
  temp?.remove();
  temp = undefined;
});

function twoInstances(): TwoInstances {
  temp = createTempDir("mosoo-multi-instance-");
  const a = createDoubleWorld({ dbFile: join(temp.dir, "api.db"), leaseMs: LEASE_MS, heartbeatTtlMs: HEARTBEAT_TTL_MS });
  const store = openTestStore(join(temp.dir, "api.db"));
  const runtime = buildRuntime(store, a.clock, { reconciliation: a.settings, heartbeatTtlMs: HEARTBEAT_TTL_MS });
  open = { a, b: { store, runtime } };
  expect(runtime.ctx.instanceId).not.toBe(a.runtime.ctx.instanceId);
  return open;
}

/** Holds every lookup of the adapter at a gate until `release()`; `reached` resolves when the first lookup arrived; `arrived()` counts them. */
function gateLookups(f: DoubleWorld) {
  let count = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let arrived!: () => void;
  const reached = new Promise<void>((r) => (arrived = r));
  const inner = f.adapter.lookup.bind(f.adapter);
  f.adapter.lookup = async (req, ctx) => {
    count += 1;
    arrived();
    await gate;
    return inner(req, ctx);
  };
  return { release, reached, arrivals: () => count };
}

/** A dispatched write the provider committed, whose Driver then lost track of it: `unknown`, never looked up. */
async function unknownEffect(f: DoubleWorld) {
  const call = await dispatchWrite(f);
  await commitAtProvider(f, call);
  await f.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
    connectionId: call.driver.connectionId,
    attempt: 1,
    reason: "lost",
  });
  return call;
}

describe("two API instances on one store", () => {
  it("never repair the same Driver at once: the second instance's finalize returns at once while the first holds the repair", async () => {
    const { a, b } = twoInstances();
    const call = await dispatchWrite(a);
    await commitAtProvider(a, call); // the write happened; the Driver dies before it reports it
    const gate = gateLookups(a);
    const first = a.runtime.repair.finalize(call.driver.instance.id, "driver_request");
    await gate.reached; // instance A fenced the effect and is looking it up under its claim
    const second = await retryWhenBusy(
      () => b.runtime.repair.finalize(call.driver.instance.id, "heartbeat_expired"),
      BACKGROUND_BUSY_RETRY,
    );
    expect(second).toEqual({ effectsFenced: 0, commandsCompleted: 0, commandsFailed: 0, runsFailed: 0, effectsReconciled: 0 });
    gate.release();
    expect(await first).toEqual({ effectsFenced: 1, commandsCompleted: 1, commandsFailed: 0, runsFailed: 1, effectsReconciled: 1 });
    expect(a.lookups).toHaveLength(1);
    // one outcome, no superseded reconciler (B never reached the effect), one terminal run event
    expect(gate.arrivals()).toBe(1);
    expect(reconciliationRecords(a.store, call.effectId).map((r) => [r.trigger, r.outcome])).toEqual([
      ["finalization", "confirmed_succeeded"],
    ]);
    expect(runEvents(a.store, call.runId).filter((e) => e.type === "run.failed")).toHaveLength(1);
    // the claim was released: a later finalize (any instance) runs and finds nothing left to do
    expect(await b.runtime.repair.finalize(call.driver.instance.id, "operator")).toMatchObject({ effectsFenced: 0, runsFailed: 0 });
    expect(b.store.sqlite.prepare("SELECT count(*) AS n FROM work_claims").get()).toEqual({ n: 0 });
  });

  it("both instances sweep the same backlog at once; every due effect is looked up exactly once, no superseded record", async () => {
    const { a, b } = twoInstances();
    const calls = [];
    for (let i = 0; i < 4; i += 1) calls.push(await unknownEffect(a));
    const effects = calls.map((c) => c.effectId);
    const settled = () => effects.every((id) => effectRow(a.store, id).status === "succeeded");
    for (let pass = 0; pass < 20 && !settled(); pass += 1) await Promise.all([a.runtime.sweep.sweepOnce(), b.runtime.sweep.sweepOnce()]);
    expect(settled()).toBe(true);
    // one adapter double serves both instances: each key reached it once
    expect(a.lookups.map((l) => l.idempotencyKey).sort()).toEqual(calls.map((c) => c.idempotencyKey).sort());
    for (const id of effects) expect(reconciliationRecords(a.store, id).map((r) => r.outcome)).toEqual(["confirmed_succeeded"]);
  });

  it("a sweep skips an effect another instance leased after the sweep read it (nothing written); other triggers record superseded", async () => {
    const { a, b } = twoInstances();
    const call = await unknownEffect(a);
    const staleRow = await b.runtime.ctx.store.read((tx) => effectRepository.findById(tx, call.effectId));
    const gate = gateLookups(a);
    const held = a.runtime.reconciler.reconcile(call.effectId, "sweep"); // A leases it; its lookup waits at the gate
    await gate.reached;
    const [skipped] = await retryWhenBusy(() => b.runtime.reconciler.leaseBatch([staleRow!], "sweep"), BACKGROUND_BUSY_RETRY);
    expect(skipped).toMatchObject({ kind: "ineligible", reasonCode: LEASED_ELSEWHERE });
    expect(reconciliationRecords(a.store, call.effectId)).toEqual([]);
    const [lost] = await retryWhenBusy(() => b.runtime.reconciler.leaseBatch([staleRow!], "finalization"), BACKGROUND_BUSY_RETRY);
    expect(lost).toMatchObject({ kind: "superseded" });
    expect(reconciliationRecords(a.store, call.effectId).map((r) => [r.trigger, r.outcome, r.reason_code])).toEqual([
      ["finalization", "superseded", "lease_held"],
    ]);
    gate.release();
    expect(await held).toMatchObject({ kind: "confirmed_succeeded" });
    expect(gate.arrivals()).toBe(1);
  });

  it("a sweep leases at the current version an effect whose lease another instance took and gave back since the sweep read it", async () => {
    const { a, b } = twoInstances();
    const call = await unknownEffect(a);
    const staleRow = (await b.runtime.ctx.store.read((tx) => effectRepository.findById(tx, call.effectId)))!;
    // A leases it and gives the lease back unused (the end of a pass): no lease, version moved on
    const [taken] = await a.runtime.reconciler.leaseBatch([staleRow], "sweep");
    expect(taken).toHaveProperty("owner");
    await a.runtime.reconciler.releaseLeases([taken as LeasedEffect]);
    const [leased] = await retryWhenBusy(() => b.runtime.reconciler.leaseBatch([staleRow], "sweep"), BACKGROUND_BUSY_RETRY);
    expect(leased).toMatchObject({ leasedVersion: staleRow.version + 2 });
    expect(effectRow(a.store, call.effectId).lease_owner).toBe((leased as { owner: string }).owner);
    expect(reconciliationRecords(a.store, call.effectId)).toEqual([]);
  });

  it("a live lease is not taken over (not at startup, not by the sweep); an expired one is, recorded lookup_interrupted", async () => {
    const { a, b } = twoInstances();
    const call = await unknownEffect(a);
    const gate = gateLookups(a);
    const stalled = a.runtime.reconciler.reconcile(call.effectId, "sweep"); // A holds the lease, its lookup hangs
    await gate.reached;
    expect(effectRow(a.store, call.effectId).lease_owner).not.toBeNull();
    // B starts (what server.ts does) and sweeps while A's lease is live: nothing of A's lookup is touched
    expect(await b.runtime.reconciler.endExpiredLeases({ startup: true })).toBe(0);
    expect((await retryWhenBusy(() => b.runtime.sweep.sweepOnce(), BACKGROUND_BUSY_RETRY)).effectsLookedUp).toBe(0);
    expect(gate.arrivals()).toBe(1);
    expect(reconciliationRecords(a.store, call.effectId)).toEqual([]);
    // A stalls past its lease: B's sweep ends the lease (lookup_interrupted, next lookup scheduled) ...
    a.clock.advance(LEASE_MS + 1);
    await retryWhenBusy(() => b.runtime.sweep.sweepOnce(), BACKGROUND_BUSY_RETRY);
    expect(reconciliationRecords(a.store, call.effectId).map((r) => [r.outcome, r.reason_code])).toEqual([
      ["still_unknown", "lookup_interrupted"],
    ]);
    // ... and looks the effect up again once that lookup is due
    a.clock.advance(a.settings.backoff.maxMs);
    gate.release();
    await retryWhenBusy(() => b.runtime.sweep.sweepOnce(), BACKGROUND_BUSY_RETRY);
    expect(effectRow(a.store, call.effectId)).toMatchObject({ status: "succeeded", resolution: "reconciled", lease_owner: null });
    // A's late answer loses the compare-and-set: recorded superseded, changes nothing
    expect((await stalled).kind).toBe("superseded");
    expect(
      reconciliationRecords(a.store, call.effectId)
        .map((r) => `${r.outcome}/${r.reason_code}`)
        .sort(),
    ).toEqual(["confirmed_succeeded/null", "still_unknown/lookup_interrupted", "superseded/cas_lost"]);
    expect(gate.arrivals()).toBe(2);
  });
});
