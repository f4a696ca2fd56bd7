/**
 * An operator's resolve and a reconciler's lease agree (docs/DESIGN.md §7): between a reconciler's
 * lease commit and its adapter call, an operator's resolve is refused (409
 * `effect.lookup_in_progress`, nothing written but the refusal's audit row), and a reconciler whose
 * lease no longer outlasts its lookup gives it back without asking the adapter. Two runtimes on one
 * store play two API instances; the reconciler's store pauses right after a chosen transaction
 * commits (the window the race needs, made an event), on SQLite and on the real PostgreSQL server.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import type { Store, StoreTx, TransactionOptions } from "../src/platform/db/store.port.js";
import {
  buildRuntime,
  commitAtProvider,
  dispatchWrite,
  openDoubleWorld,
  operatorNamed,
  type AnyStoreDoubleWorld,
  type Runtime,
} from "./kit/index.js";
import { LEASE_LAPSED } from "../src/modules/reconciliation/application/effect-reconciler.service.js";
import { reconciliationRepository } from "../src/modules/reconciliation/infrastructure/effect-reconciliation.repository.js";
import { effectOf } from "./helpers/store-rows.js";
import { eq } from "drizzle-orm";

const KINDS = ["sqlite", "postgres"] as const;

/** The audited refusals of operator actions on effect `effectId`. */
function operatorRefusalsOf(store: Store, effectId: string) {
  return store.read((tx) => {
    const t = tx.tables.effectOperatorRefusals;
    return tx.db.select().from(t).where(eq(t.effectId, effectId));
  });
}
const AUDIT = { reason: "checked at the provider" };

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

/**
 * `store`, except that the transaction after {@link PausingStore.arm} is held, once it committed,
 * until `release()`: `paused` resolves when it committed.
 */
interface PausingStore {
  store: Store;
  arm(): { paused: Promise<void>; release: () => void };
}

function pausing(inner: Store): PausingStore {
  let armed: { committed: () => void; held: Promise<void> } | undefined;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== "transaction") return Reflect.get(target, prop, receiver) as unknown;
      return async <T>(fn: (tx: StoreTx) => Promise<T>, opts?: TransactionOptions): Promise<T> => {
        const out = await target.transaction(fn, opts);
        const hold = armed;
        armed = undefined;
        if (hold) {
          hold.committed();
          await hold.held;
        }
        return out;
      };
    },
  });
  return {
    store,
    arm() {
      let committed!: () => void;
      let release!: () => void;
      const paused = new Promise<void>((r) => (committed = r));
      const held = new Promise<void>((r) => (release = r));
      armed = { committed, held };
      return { paused, release };
    },
  };
}

/** Wraps the world's bound adapter so that each lookup records the effect's status and lease owner as the store holds them when the adapter is asked. */
function watchLookups(w: AnyStoreDoubleWorld): Array<{ status: string | undefined; leaseOwner: string | null | undefined }> {
  const seen: Array<{ status: string | undefined; leaseOwner: string | null | undefined }> = [];
  const inner: ReconciliationAdapter = { declaration: w.adapter.declaration, lookup: w.adapter.lookup.bind(w.adapter) };
  w.adapter.lookup = async (request, context) => {
    const row = await effectOf(w.store, request.effectId);
    seen.push({ status: row?.status, leaseOwner: row?.leaseOwner });
    return inner.lookup(request, context);
  };
  return seen;
}

/** A committed write the Driver lost track of: `unknown`, no lookup yet; and a second runtime (another API instance) whose store pauses on demand. */
async function unknownEffectAndSecondInstance(w: AnyStoreDoubleWorld): Promise<{ effectId: string; other: Runtime; pause: PausingStore }> {
  const call = await dispatchWrite(w);
  await commitAtProvider(w, call);
  await w.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
    connectionId: call.driver.connectionId,
    attempt: 1,
    reason: "transport closed",
  });
  expect((await effectOf(w.store, call.effectId))?.status).toBe("unknown");
  const pause = pausing(w.store);
  const other = buildRuntime(pause.store, w.clock, { heartbeatTtlMs: 3_600_000, reconciliation: w.settings });
  return { effectId: call.effectId, other, pause };
}

describe.each(KINDS)("an operator's resolve and a reconciler's lease agree (%s)", (kind) => {
  it("refuses a resolve between the lease's commit and the adapter call (409 effect.lookup_in_progress); the lookup then runs on an unknown, leased effect", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "resolve_lease" });
    const w = fx;
    const seen = watchLookups(w);
    const { effectId, other, pause } = await unknownEffectAndSecondInstance(w);
    const before = (await effectOf(w.store, effectId))!;
    const { paused, release } = pause.arm();
    const reconciling = other.reconciler.reconcile(effectId, "sweep");
    await paused; // the lease is committed; the adapter has not been asked yet
    const leased = (await effectOf(w.store, effectId))!;
    expect(leased).toMatchObject({ status: "unknown", version: before.version + 1 });
    expect(leased.leaseOwner).not.toBeNull();

    const refused = await w.runtime.operator.resolve(effectId, { outcome: "not_executed", ...AUDIT }, operatorNamed("alice")).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ code: "effect.lookup_in_progress", httpStatus: 409 });
    expect((refused as Error).message).toMatch(/retry/i);
    expect((refused as { details?: Record<string, unknown> }).details).toMatchObject({ leaseExpiresAtMs: leased.leaseExpiresAtMs });
    // nothing of the resolve was written but its refusal's audit row
    expect(await effectOf(w.store, effectId)).toEqual(leased);
    expect(await operatorRefusalsOf(w.store, effectId)).toEqual([
      expect.objectContaining({ action: "resolve", actor: "alice", outcome: "effect.lookup_in_progress", effectStatus: "unknown" }),
    ]);

    release();
    expect((await reconciling).kind).toBe("confirmed_succeeded");
    expect(seen).toEqual([{ status: "unknown", leaseOwner: leased.leaseOwner }]);
    // once the lookup ended, the effect is settled: a resolve now meets the ordinary refusal
    await expect(w.runtime.operator.resolve(effectId, { outcome: "not_executed", ...AUDIT }, operatorNamed("alice"))).rejects.toMatchObject(
      {
        code: "effect.not_unknown",
      },
    );
  });

  it("a resolve after the lease expired settles the effect, and the stalled reconciler gives its lease back without asking the adapter", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "resolve_lease" });
    const w = fx;
    const seen = watchLookups(w);
    const { effectId, other, pause } = await unknownEffectAndSecondInstance(w);
    const { paused, release } = pause.arm();
    const reconciling = other.reconciler.reconcile(effectId, "sweep");
    await paused;
    const leased = (await effectOf(w.store, effectId))!;
    w.clock.advance(w.settings.leaseMs + 1); // the reconciler stalled past its lease
    const resolved = await w.runtime.operator.resolve(
      effectId,
      { outcome: "succeeded", result: { content: [{ type: "text", text: "created" }] }, ...AUDIT },
      operatorNamed("alice"),
    );
    expect(resolved).toMatchObject({ status: "succeeded", resolution: "operator" });
    release();
    expect(await reconciling).toMatchObject({ kind: "ineligible", reasonCode: LEASE_LAPSED });
    expect(seen).toEqual([]); // the adapter was never asked about a settled effect
    const after = (await effectOf(w.store, effectId))!;
    // the lease was the operator's to clear (it had expired): the lookup it counted stays counted
    expect(after).toMatchObject({ status: "succeeded", resolution: "operator", leaseOwner: null, lookupCount: leased.lookupCount });
  });

  it("a reconciler whose lease lapsed before its adapter call gives the lease back uncounted and asks nothing", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "resolve_lease" });
    const w = fx;
    const seen = watchLookups(w);
    const { effectId, other, pause } = await unknownEffectAndSecondInstance(w);
    const before = (await effectOf(w.store, effectId))!;
    const { paused, release } = pause.arm();
    const reconciling = other.reconciler.reconcile(effectId, "sweep");
    await paused;
    // what is left of the lease no longer covers a whole lookup
    w.clock.advance(w.settings.leaseMs - w.settings.lookupTimeoutMs + 1);
    release();
    expect(await reconciling).toMatchObject({ kind: "ineligible", reasonCode: LEASE_LAPSED });
    expect(seen).toEqual([]);
    expect(await effectOf(w.store, effectId)).toMatchObject({
      status: "unknown",
      leaseOwner: null,
      leaseExpiresAtMs: null,
      lookupCount: before.lookupCount,
    });
    // the next reconciler looks it up as usual
    expect((await w.runtime.reconciler.reconcile(effectId, "sweep")).kind).toBe("confirmed_succeeded");
    expect(seen).toHaveLength(1);
  });

  it("a lapsed lease taken over from a dead lookup leaves the effect due: the sweep looks it up (no unknown effect is left unscheduled and unflagged)", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "resolve_lease" });
    const w = fx;
    const seen = watchLookups(w);
    const { effectId, other, pause } = await unknownEffectAndSecondInstance(w);
    // an API instance took the lease (the lookup counted, nothing scheduled yet) and died before its adapter call
    const before = (await effectOf(w.store, effectId))!;
    const now = w.clock.now();
    expect(
      await w.store.transaction((tx) =>
        reconciliationRepository.acquireLease(tx, effectId, before.version, "dead-api", now, now + w.settings.leaseMs),
      ),
    ).toBe(before.lookupCount + 1);
    w.clock.advance(w.settings.leaseMs + 1);
    // another reconciler takes the expired lease over, then stalls until what is left of it no longer covers a lookup
    const { paused, release } = pause.arm();
    const reconciling = other.reconciler.reconcile(effectId, "sweep");
    await paused;
    w.clock.advance(w.settings.leaseMs - w.settings.lookupTimeoutMs + 1);
    release();
    expect(await reconciling).toMatchObject({ kind: "ineligible", reasonCode: LEASE_LAPSED });
    // the dead lookup stays counted; nothing was scheduled and no operator was asked
    expect(await effectOf(w.store, effectId)).toMatchObject({
      status: "unknown",
      leaseOwner: null,
      lookupCount: before.lookupCount + 1,
      nextLookupAtMs: null,
      operatorAttention: null,
    });
    // the next sweep finds it due and looks it up (the provider committed the write)
    await w.runtime.sweep.sweepOnce();
    expect(seen).toHaveLength(1);
    expect(await effectOf(w.store, effectId)).toMatchObject({ status: "succeeded", resolution: "reconciled" });
  });
});
