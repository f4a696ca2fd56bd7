import { describe, expect, it } from "vitest";
import { askAdapter, judgeLookupAnswer, reconcileEffect, retentionCanaryWindow, type ReconcilableEffect } from "../src/host/index.ts";
import {
  HOUR_MS,
  OTHER_FINGERPRINT,
  SERVER_ID,
  T0,
  TIMEOUT_MS,
  makeDeclaration,
  makeEffect,
  notExecutedAnswer,
  scriptedAdapter,
  succeededAnswer,
} from "./reconcile-fixtures.ts";

// DESIGN §4 "Retention canary", §5 last rows: a miss without a key fence is believed only once the
// same adapter confirmed a key known to have committed, at least as old and inside the declared window.
const MAX_IN_FLIGHT_MS = 60_000;
const unfenced = makeDeclaration({ keyFencing: { kind: "max_in_flight", maxInFlightMs: MAX_IN_FLIGHT_MS } });
const NOW = T0 + 10 * 60 * 1000;

/** An adapter that answers the canary's key with `forCanary` and any other key with a miss of `effect`. */
function adapterFor(effect: ReconcilableEffect, canary: ReconcilableEffect, forCanary: () => unknown, declaration = unfenced) {
  return scriptedAdapter(
    (request) => (request.idempotencyKey === canary.idempotencyKey ? forCanary() : Promise.resolve(notExecutedAnswer(effect))),
    declaration,
  );
}
const olderCanary = (overrides: Partial<ReconcilableEffect> = {}) =>
  makeEffect({ firstDispatchedAtMs: T0 - HOUR_MS, lastDispatchedAtMs: T0 - HOUR_MS, ...overrides });

describe("retention canary", () => {
  it("a confirmed canary lets the miss stand; the canary's key was asked, with its own request", async () => {
    const effect = makeEffect();
    const canary = olderCanary();
    const { adapter, calls } = adapterFor(effect, canary, () => Promise.resolve(succeededAnswer(canary)));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS, canary });
    expect(d.decision).toBe("confirmed_not_executed");
    expect(calls.map((c) => c.request.idempotencyKey)).toEqual([effect.idempotencyKey, canary.idempotencyKey]);
    expect(calls[1]!.request).toMatchObject({ effectId: canary.effectId, requestFingerprint: canary.requestFingerprint });
  });

  it("a forgotten canary (the adapter says not_executed for a committed key) → retention_contradicted, operator attention, receipt kept", async () => {
    const effect = makeEffect();
    const canary = olderCanary();
    const { adapter } = adapterFor(effect, canary, () => Promise.resolve(notExecutedAnswer(canary)));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS, canary });
    expect(d).toMatchObject({
      decision: "still_unknown",
      reasonSource: "runtime",
      reasonCode: "retention_contradicted",
      operatorAttention: true,
      receipt: { detail: { fenced: true } },
    });
    expect(d.decision === "still_unknown" && d.error).toContain(canary.effectId);
  });

  it("a canary confirmed under another request fingerprint is a contradiction too (key_conflict on the canary)", async () => {
    const effect = makeEffect();
    const canary = olderCanary();
    const { adapter } = adapterFor(effect, canary, () =>
      Promise.resolve(
        succeededAnswer(canary, { receipt: { observedAt: new Date(T0).toISOString(), requestFingerprint: OTHER_FINGERPRINT } }),
      ),
    );
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS, canary });
    expect(d).toMatchObject({ decision: "still_unknown", reasonCode: "retention_contradicted", operatorAttention: true });
  });

  it.each([
    ["throws", () => Promise.reject(new Error("503"))],
    ["answers garbage", () => Promise.resolve({ outcome: "maybe" })],
    ["answers still_unknown", () => Promise.resolve({ outcome: "still_unknown", reasonCode: "rate_limited", retryAfterMs: 5_000 })],
  ])("a canary lookup that %s proves nothing → retention_unverified, no operator attention", async (_name, forCanary) => {
    const effect = makeEffect();
    const canary = olderCanary();
    const { adapter } = adapterFor(effect, canary, forCanary);
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS, canary });
    expect(d).toMatchObject({
      decision: "still_unknown",
      reasonSource: "runtime",
      reasonCode: "retention_unverified",
      operatorAttention: false,
    });
    if (_name === "answers still_unknown") expect(d.decision === "still_unknown" && d.nextLookupNotBeforeMs).toBe(NOW + 5_000);
  });

  it("no canary → retention_unverified (fail closed), one adapter call", async () => {
    const effect = makeEffect();
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)), unfenced);
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toMatchObject({ decision: "still_unknown", reasonCode: "retention_unverified", operatorAttention: false });
    expect(calls).toHaveLength(1);
  });

  it.each([
    ["dispatched after the effect", { firstDispatchedAtMs: T0 + 1, lastDispatchedAtMs: T0 + 1 }],
    ["older than the declared window", { firstDispatchedAtMs: NOW + TIMEOUT_MS - 24 * HOUR_MS - 1, lastDispatchedAtMs: T0 }],
    ["of another tool", { toolName: "close_issue" }],
  ])("a canary %s is not asked: retention_unverified", async (_name, overrides) => {
    const effect = makeEffect();
    const canary = olderCanary(overrides);
    const { adapter, calls } = adapterFor(effect, canary, () => Promise.resolve(succeededAnswer(canary)));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS, canary });
    expect(d).toMatchObject({ decision: "still_unknown", reasonCode: "retention_unverified" });
    expect(calls).toHaveLength(1);
  });

  it("not asked when the provider fences a miss, nor when another check already refuses the miss", async () => {
    const effect = makeEffect();
    const canary = olderCanary();
    const fenced = adapterFor(effect, canary, () => Promise.resolve(notExecutedAnswer(canary)), makeDeclaration());
    const d = await reconcileEffect({
      effect,
      binding: { serverId: SERVER_ID, adapter: fenced.adapter },
      nowMs: NOW,
      timeoutMs: TIMEOUT_MS,
      canary,
    });
    expect(d.decision).toBe("confirmed_not_executed");
    expect(fenced.calls).toHaveLength(1);
    const early = adapterFor(effect, canary, () => Promise.resolve(notExecutedAnswer(canary)));
    const inWindow = await reconcileEffect({
      effect,
      binding: { serverId: SERVER_ID, adapter: early.adapter },
      nowMs: T0 + 1,
      timeoutMs: TIMEOUT_MS,
      canary,
    });
    expect(inWindow).toMatchObject({ decision: "still_unknown", reasonCode: "in_flight_window" });
    expect(early.calls).toHaveLength(1);
  });

  it("judgeLookupAnswer without a verdict refuses a fence-less miss; a success needs none", async () => {
    const effect = makeEffect();
    const miss = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)), unfenced);
    const answer = await askAdapter({ effect, binding: { serverId: SERVER_ID, adapter: miss.adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(judgeLookupAnswer(answer, effect)).toMatchObject({ decision: "still_unknown", reasonCode: "retention_unverified" });
    const hit = scriptedAdapter(() => Promise.resolve(succeededAnswer(effect)), unfenced);
    const found = await askAdapter({ effect, binding: { serverId: SERVER_ID, adapter: hit.adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(judgeLookupAnswer(found, effect).decision).toBe("confirmed_succeeded");
  });

  it("retentionCanaryWindow: from (now + timeout - retention) to the effect's first dispatch; empty → null", () => {
    expect(retentionCanaryWindow({ firstDispatchedAtMs: T0 }, HOUR_MS, T0 + 1000, 100)).toEqual({ fromMs: T0 + 1100 - HOUR_MS, toMs: T0 });
    expect(retentionCanaryWindow({ firstDispatchedAtMs: T0 }, HOUR_MS, T0 + HOUR_MS, 1)).toBeNull();
    expect(retentionCanaryWindow({ firstDispatchedAtMs: null }, HOUR_MS, T0, 1)).toBeNull();
  });
});
