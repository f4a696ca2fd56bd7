import { afterEach, describe, expect, it } from "vitest";
import { confirmedNotExecuted } from "@mosoo/effect-reconciliation";
import {
  type AnyStoreDoubleWorld,
  commitAtProvider,
  connectDriver,
  createDoubleWorld,
  dispatchWrite,
  type DoubleWorld,
  finalizeDriver,
  openDoubleWorld,
  seedRetentionCanary,
} from "./kit/index.js";
import { effectOf } from "./helpers/store-rows.js";
import { effectRow, reconciliationRecords } from "./helpers/reconciliation-db.js";

// docs/DESIGN.md §4 "Retention canary": a fence-less provider's "not executed" stands only once the same
// adapter confirmed an older committed key of the same server and tool.
let fx: DoubleWorld | undefined;
afterEach(() => {
  fx?.close();
  fx = undefined;
});
const MAX_IN_FLIGHT = { kind: "max_in_flight", maxInFlightMs: 1_000 } as const;

/** Makes the bound adapter forget every key, as a provider keeping keys shorter than declared would; returns the keys it was asked about. */
function forgetEverything(f: DoubleWorld): string[] {
  const asked: string[] = [];
  f.adapter.lookup = async (request) => {
    asked.push(request.idempotencyKey);
    return confirmedNotExecuted(request);
  };
  return asked;
}

describe("retention canary in the reconciler", () => {
  it("a provider that forgot a committed write: the miss is refused retention_contradicted, the effect flagged, the canary untouched", async () => {
    fx = createDoubleWorld({ double: { keyFencing: MAX_IN_FLIGHT } });
    const canary = await seedRetentionCanary(fx);
    const canaryBefore = effectRow(fx.store, canary.effectId);
    const call = await dispatchWrite(fx);
    await commitAtProvider(fx, call); // the write DID commit; its answer was lost
    fx.clock.advance(20_000); // past claim + send-by deadline + maximum in-flight time
    const asked = forgetEverything(fx);
    await finalizeDriver(fx, call);
    expect(asked).toEqual([call.idempotencyKey, canary.idempotencyKey]);
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "unknown", operator_attention: "retention_contradicted" });
    const [record] = reconciliationRecords(fx.store, call.effectId);
    expect(record).toMatchObject({ outcome: "still_unknown", reason_code: "retention_contradicted" });
    expect(record!.error).toContain(canary.effectId);
    expect(effectRow(fx.store, canary.effectId)).toEqual(canaryBefore); // nothing about the canary is written
    expect(reconciliationRecords(fx.store, canary.effectId)).toEqual([]);
    const metrics = await fx.runtime.metricsRegistry.metrics();
    expect(metrics).toMatch(/mosoo_effect_reconciliation_retention_canary_total\{adapter="[^"]+",verdict="contradicted"\} 1/);
  });

  it("an honest provider: the canary is confirmed and the miss settles not_executed", async () => {
    fx = createDoubleWorld({ double: { keyFencing: MAX_IN_FLIGHT } });
    await seedRetentionCanary(fx);
    const call = await dispatchWrite(fx);
    fx.clock.advance(20_000);
    await finalizeDriver(fx, call);
    expect(effectRow(fx.store, call.effectId)).toMatchObject({
      status: "not_executed",
      resolution: "reconciled",
      operator_attention: null,
    });
  });

  it("no committed write to serve as canary: retention_unverified, not flagged, looked up again later (fail closed)", async () => {
    fx = createDoubleWorld({ double: { keyFencing: MAX_IN_FLIGHT } });
    const call = await dispatchWrite(fx);
    fx.clock.advance(20_000);
    await finalizeDriver(fx, call);
    const effect = effectRow(fx.store, call.effectId);
    expect(effect).toMatchObject({ status: "unknown", operator_attention: null });
    expect(effect.next_lookup_at_ms).not.toBeNull();
    expect(reconciliationRecords(fx.store, call.effectId)[0]).toMatchObject({ reason_code: "retention_unverified" });
  });

  it("a first lookup that used up the lease: the canary is not asked, retention_unverified (an adapter is asked only under a live lease)", async () => {
    fx = createDoubleWorld({ double: { keyFencing: MAX_IN_FLIGHT } });
    const f = fx;
    await seedRetentionCanary(f);
    const call = await dispatchWrite(f);
    f.clock.advance(20_000);
    const asked: string[] = [];
    f.adapter.lookup = async (request) => {
      asked.push(request.idempotencyKey);
      // the lookup ran so long that what is left of the lease no longer covers a second one
      f.clock.advance(f.settings.leaseMs - f.settings.lookupTimeoutMs + 1);
      return confirmedNotExecuted(request);
    };
    await finalizeDriver(f, call);
    expect(asked).toEqual([call.idempotencyKey]);
    expect(effectRow(f.store, call.effectId)).toMatchObject({ status: "unknown", operator_attention: null });
    expect(reconciliationRecords(f.store, call.effectId)[0]).toMatchObject({
      outcome: "still_unknown",
      reason_code: "retention_unverified",
    });
    const metrics = await f.runtime.metricsRegistry.metrics();
    expect(metrics).toMatch(/mosoo_effect_reconciliation_retention_canary_total\{adapter="[^"]+",verdict="unverified"\} 1/);
  });
});

// The canary search on both stores (its SQL is one statement per dialect).
describe.each(["sqlite", "postgres"] as const)("retention canary search on %s", (kind) => {
  let w: AnyStoreDoubleWorld | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  it("older successes that cannot serve (tool errors, more than a page of them) do not hide a canary behind them: the miss settles not_executed", async () => {
    w = await openDoubleWorld({ store: kind, prefix: "canary_pages", double: { keyFencing: MAX_IN_FLIGHT } });
    const f = w;
    for (let i = 0; i < 9; i++) {
      const driver = await connectDriver(f.runtime, `tool-error-driver-${i}`);
      const call = await dispatchWrite(f, { driver, args: { title: `refused ${i}` }, requestId: `req-refused-${i}` });
      await commitAtProvider(f, call);
      const done = await f.runtime.ledger.complete(driver.instance, call.effectId, {
        connectionId: driver.connectionId,
        attempt: 1,
        result: { outputText: "refused", requestId: `req-refused-${i}`, serverId: "tracker", toolName: "createIssue", isError: true },
        receipt: null,
      });
      expect(done).toMatchObject({ outcome: "applied", status: "succeeded" });
    }
    const canary = await seedRetentionCanary(f);
    const call = await dispatchWrite(f);
    f.clock.advance(20_000);
    const asked: string[] = [];
    const inner = f.adapter.lookup.bind(f.adapter);
    f.adapter.lookup = async (request, ctx) => {
      asked.push(request.idempotencyKey);
      return inner(request, ctx);
    };
    await finalizeDriver(f, call);
    expect(asked).toEqual([call.idempotencyKey, canary.idempotencyKey]);
    expect(await effectOf(f.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "reconciled" });
  });
});
