/**
 * Which successes may serve as a retention canary (docs/DESIGN.md §4), on both stores: a fence-less
 * "not found" settles `not_executed` only on the word of a canary the provider itself showed, inside the
 * window, of the same server and tool, dispatched no later than the effect, and not undone (nor being
 * undone) by a compensation. Each case makes the only candidate unfit while the provider double still
 * remembers its key: the miss stays `unknown` (`retention_unverified`) and the canary's key is never asked.
 */
import { afterEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import {
  commitAtProvider,
  connectDriver,
  dispatchWrite,
  finalizeDriver,
  openDoubleWorld,
  seedRetentionCanary,
  type AnyStoreDoubleWorld,
} from "./kit/index.js";
import { effectOf, reconciliationsOf } from "./helpers/store-rows.js";

const MAX_IN_FLIGHT = { kind: "max_in_flight", maxInFlightMs: 1_000 } as const;
const RETENTION_MS = 600_000;

let w: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

function recordAsked(f: AnyStoreDoubleWorld): string[] {
  const asked: string[] = [];
  const inner = f.adapter.lookup.bind(f.adapter);
  f.adapter.lookup = async (request, ctx) => {
    asked.push(request.idempotencyKey);
    return inner(request, ctx);
  };
  return asked;
}

function setEffect(f: AnyStoreDoubleWorld, id: string, set: Record<string, unknown>) {
  return f.store.transaction((tx) => {
    const t = tx.tables.externalToolEffects;
    return tx.db.update(t).set(set).where(eq(t.id, id));
  });
}

async function expectMissRefused(f: AnyStoreDoubleWorld, effectId: string, asked: string[], canaryKey: string) {
  expect(await effectOf(f.store, effectId)).toMatchObject({ status: "unknown" });
  expect(asked).not.toContain(canaryKey);
  const recs = await reconciliationsOf(f.store, effectId);
  expect(recs.at(-1)).toMatchObject({ outcome: "still_unknown", reasonCode: "retention_unverified" });
}

describe.each(["sqlite", "postgres"] as const)("retention canary that cannot serve (%s)", (kind) => {
  const open = () =>
    openDoubleWorld({ store: kind, prefix: "atk_canary", double: { keyFencing: MAX_IN_FLIGHT, retentionWindowMs: RETENTION_MS } });

  it("control: an honest canary settles the miss not_executed", async () => {
    w = await open();
    const canary = await seedRetentionCanary(w);
    const call = await dispatchWrite(w);
    w.clock.advance(20_000);
    const asked = recordAsked(w);
    await finalizeDriver(w, call);
    expect(asked).toEqual([call.idempotencyKey, canary.idempotencyKey]);
    expect(await effectOf(w.store, call.effectId)).toMatchObject({ status: "not_executed" });
  });

  it("an operator-resolved success is no canary", async () => {
    w = await open();
    const canary = await seedRetentionCanary(w);
    await setEffect(w, canary.effectId, { resolution: "operator" });
    const call = await dispatchWrite(w);
    w.clock.advance(20_000);
    const asked = recordAsked(w);
    await finalizeDriver(w, call);
    await expectMissRefused(w, call.effectId, asked, canary.idempotencyKey);
  });

  it("a success dispatched after the effect is no canary", async () => {
    w = await open();
    const call = await dispatchWrite(w);
    w.clock.advance(1);
    const canary = await seedRetentionCanary(w);
    w.clock.advance(20_000);
    const asked = recordAsked(w);
    await finalizeDriver(w, call);
    await expectMissRefused(w, call.effectId, asked, canary.idempotencyKey);
  });

  it("a success of another server is no canary", async () => {
    w = await open();
    const canary = await seedRetentionCanary(w);
    await setEffect(w, canary.effectId, { serverId: "another-server" });
    const call = await dispatchWrite(w);
    w.clock.advance(20_000);
    const asked = recordAsked(w);
    await finalizeDriver(w, call);
    await expectMissRefused(w, call.effectId, asked, canary.idempotencyKey);
  });

  it("a success first dispatched before the window (now + timeout - retention) is no canary", async () => {
    w = await open();
    const canary = await seedRetentionCanary(w);
    // the canary is old: the provider would have forgotten it by the time the answer arrives
    w.clock.advance(RETENTION_MS - 25_000);
    const call = await dispatchWrite(w);
    w.clock.advance(24_000); // now + 2 s timeout - retention > canary's dispatch
    const asked = recordAsked(w);
    await finalizeDriver(w, call);
    await expectMissRefused(w, call.effectId, asked, canary.idempotencyKey);
  });

  it("a success undone by a succeeded compensation is no canary", async () => {
    w = await open();
    const canary = await seedRetentionCanary(w);
    const call = await dispatchWrite(w);
    // a later succeeded effect (dispatched after the miss, so no canary itself) plays the canary's compensation
    w.clock.advance(1);
    const d = await connectDriver(w.runtime, "undo-driver");
    const undo = await dispatchWrite(w, { driver: d, args: { title: "undo" }, requestId: "req-undo" });
    await w.runtime.ledger.complete(d.instance, undo.effectId, {
      connectionId: d.connectionId,
      attempt: 1,
      result: { outputText: "deleted", requestId: "req-undo", serverId: "tracker", toolName: "createIssue" },
      receipt: null,
    });
    await setEffect(w, undo.effectId, { compensatesEffectId: canary.effectId });
    w.clock.advance(20_000);
    const asked = recordAsked(w);
    await finalizeDriver(w, call);
    await expectMissRefused(w, call.effectId, asked, canary.idempotencyKey);
  });

  it("a canary whose compensation is still in flight (unknown): the provider may have undone it, no canary", async () => {
    w = await open();
    const canary = await seedRetentionCanary(w);
    const call = await dispatchWrite(w);
    w.clock.advance(1);
    const d = await connectDriver(w.runtime, "undo-driver");
    const undo = await dispatchWrite(w, { driver: d, args: { title: "undo" }, requestId: "req-undo" });
    await w.runtime.ledger.markUnknown(d.instance, undo.effectId, { connectionId: d.connectionId, attempt: 1, reason: "transport closed" });
    await setEffect(w, undo.effectId, { compensatesEffectId: canary.effectId, toolName: "deleteIssue" });
    w.clock.advance(20_000);
    const asked = recordAsked(w);
    await finalizeDriver(w, call);
    await expectMissRefused(w, call.effectId, asked, canary.idempotencyKey);
  });
});
