import { fingerprintArguments, newUlid } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import { reconcileEffect, type ReconcilableEffect } from "../src/host/index.ts";
import {
  ProviderResponseLostError,
  createManualClock,
  createProviderDouble,
  createProviderDoubleAdapter,
  type AdapterFault,
  type ProviderDouble,
} from "../src/testing/index.ts";
import { ARGS } from "./reconcile-fixtures.ts";

const SERVER = "double";

function effectOf(double: ProviderDouble, key: string, dispatchedAtMs: number): ReconcilableEffect {
  return {
    effectId: newUlid(),
    serverId: SERVER,
    toolName: double.toolName,
    idempotencyKey: key,
    requestFingerprint: fingerprintArguments(ARGS),
    firstDispatchedAtMs: dispatchedAtMs,
    lastDispatchedAtMs: dispatchedAtMs,
  };
}

function reconcile(double: ProviderDouble, effect: ReconcilableEffect, timeoutMs = 1000) {
  const adapter = createProviderDoubleAdapter(double);
  return reconcileEffect({ effect, binding: { serverId: SERVER, adapter }, nowMs: double.clock.now(), timeoutMs });
}

describe("provider double: idempotency and counting", () => {
  it("dedupes on the key: a replay with the same arguments writes nothing, other arguments conflict", async () => {
    const double = createProviderDouble({ clock: createManualClock() });
    const key = newUlid();
    const first = await double.commit(key, ARGS);
    const replay = await double.commit(key, { labels: ["ops"], title: "Printer on fire" });
    const conflict = await double.commit(key, { title: "Other" });
    expect(first).toMatchObject({ status: "committed", replayed: false });
    expect(replay).toMatchObject({ status: "committed", replayed: true });
    expect(replay.status === "committed" && first.status === "committed" && replay.result).toEqual(
      first.status === "committed" && first.result,
    );
    expect(conflict).toEqual({ status: "conflict", recordedFingerprint: fingerprintArguments(ARGS) });
    expect(double.writeCount(key)).toBe(1);
    expect(double.totalWriteCount()).toBe(1);
  });

  it("counts lookups per key", () => {
    const double = createProviderDouble({ clock: createManualClock() });
    const key = newUlid();
    double.lookup(key);
    double.lookup(key);
    expect(double.lookupCount(key)).toBe(2);
    expect(double.lookupCount(newUlid())).toBe(0);
  });
});

describe("provider double: fault knobs", () => {
  it("late commit: a fence placed before the commit lands stops it", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({ clock });
    const key = newUlid();
    const pending = double.commit(key, ARGS, { delayMs: 5000 });
    expect(double.lookup(key)).toEqual({ found: false, fenced: true });
    clock.advance(5000);
    await expect(pending).resolves.toEqual({ status: "refused", reason: "fenced" });
    expect(double.writeCount(key)).toBe(0);
  });

  it("late commit: without a fence it lands after the delay", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({ clock, keyFencing: { kind: "max_in_flight", maxInFlightMs: 10_000 } });
    const key = newUlid();
    const pending = double.commit(key, ARGS, { delayMs: 5000 });
    expect(double.lookup(key)).toEqual({ found: false, fenced: false });
    clock.advance(5000);
    await expect(pending).resolves.toMatchObject({ status: "committed" });
    expect(double.writeCount(key)).toBe(1);
  });

  it("max in-flight: a write applied later than maxInFlightMs after it was sent is refused as stale", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({ clock, keyFencing: { kind: "max_in_flight", maxInFlightMs: 1000 } });
    const key = newUlid();
    const pending = double.commit(key, ARGS, { delayMs: 1001 });
    clock.advance(1001);
    await expect(pending).resolves.toEqual({ status: "refused", reason: "stale" });
    expect(double.writeCount(key)).toBe(0);
  });

  it("lost response: the write is applied but the caller gets ProviderResponseLostError", async () => {
    const double = createProviderDouble({ clock: createManualClock() });
    const key = newUlid();
    await expect(double.commit(key, ARGS, { loseResponse: true })).rejects.toBeInstanceOf(ProviderResponseLostError);
    expect(double.writeCount(key)).toBe(1);
    expect(double.record(key)?.requestFingerprint).toBe(fingerprintArguments(ARGS));
  });

  it("lookup lag: lookups answer not found for lookupLagMs after a commit", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({
      clock,
      keyFencing: { kind: "max_in_flight", maxInFlightMs: 60_000 },
      faults: { lookupLagMs: 2000 },
    });
    const key = newUlid();
    await double.commit(key, ARGS);
    clock.advance(1999);
    expect(double.lookup(key).found).toBe(false);
    clock.advance(1);
    expect(double.lookup(key).found).toBe(true);
  });

  it("retention: a commit older than the retention window is forgotten", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({ clock, retentionWindowMs: 10_000, keyFencing: { kind: "max_in_flight", maxInFlightMs: 1000 } });
    const key = newUlid();
    await double.commit(key, ARGS);
    clock.advance(10_000);
    expect(double.lookup(key).found).toBe(true);
    clock.advance(1);
    expect(double.lookup(key).found).toBe(false);
  });
});

describe("the runtime over the provider double: scenarios of research/reliability.md", () => {
  it("C3 (commit, then the response is lost): reconcile confirms the success with the provider's result; one write", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({ clock });
    const key = newUlid();
    const dispatchedAtMs = clock.now();
    await double.commit(key, ARGS, { loseResponse: true }).catch(() => undefined);
    clock.advance(1000);
    const decision = await reconcile(double, effectOf(double, key, dispatchedAtMs));
    expect(decision).toMatchObject({
      decision: "confirmed_succeeded",
      result: double.record(key)?.result,
      receipt: { providerOperationId: "op_1" },
    });
    expect(double.writeCount(key)).toBe(1);
  });

  it("C2 with a fencing provider: a late commit after a not-executed answer is refused; zero writes", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({ clock });
    const key = newUlid();
    const dispatchedAtMs = clock.now();
    const late = double.commit(key, ARGS, { delayMs: 60_000 });
    clock.advance(1000);
    const decision = await reconcile(double, effectOf(double, key, dispatchedAtMs));
    expect(decision.decision).toBe("confirmed_not_executed");
    clock.advance(60_000);
    await expect(late).resolves.toEqual({ status: "refused", reason: "fenced" });
    expect(double.writeCount(key)).toBe(0);
  });

  it("C2 without a fence: not found inside the in-flight window is refused, and a late commit inside it is then found", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({ clock, keyFencing: { kind: "max_in_flight", maxInFlightMs: 30_000 } });
    const key = newUlid();
    const dispatchedAtMs = clock.now();
    const late = double.commit(key, ARGS, { delayMs: 20_000 });
    clock.advance(1000);
    const early = await reconcile(double, effectOf(double, key, dispatchedAtMs));
    expect(early).toMatchObject({
      decision: "still_unknown",
      reasonCode: "in_flight_window",
      nextLookupNotBeforeMs: dispatchedAtMs + 30_000,
    });
    clock.advance(29_000);
    await late;
    const later = await reconcile(double, effectOf(double, key, dispatchedAtMs));
    expect(later.decision).toBe("confirmed_succeeded");
    expect(double.writeCount(key)).toBe(1);
  });

  it("lookup lag covered by the declared in-flight time: the lagging 'not found' is refused", async () => {
    const clock = createManualClock();
    const double = createProviderDouble({
      clock,
      keyFencing: { kind: "max_in_flight", maxInFlightMs: 5000 },
      faults: { lookupLagMs: 3000 },
    });
    const key = newUlid();
    const dispatchedAtMs = clock.now();
    await double.commit(key, ARGS);
    clock.advance(1000);
    const decision = await reconcile(double, effectOf(double, key, dispatchedAtMs));
    expect(decision).toMatchObject({ decision: "still_unknown", reasonCode: "in_flight_window" });
    clock.advance(4000);
    expect((await reconcile(double, effectOf(double, key, dispatchedAtMs))).decision).toBe("confirmed_succeeded");
  });

  const faults: Array<[AdapterFault, string]> = [
    ["garbage", "invalid_adapter_output"],
    ["oversized_receipt", "invalid_adapter_output"],
    ["oversized_result", "invalid_adapter_output"],
    ["wrong_key", "answer_mismatch"],
    ["wrong_tool", "answer_mismatch"],
    ["conflicting_fingerprint", "key_conflict"],
    ["throws", "adapter_error"],
    ["rejects", "adapter_error"],
    ["hangs_ignoring_signal", "lookup_timeout"],
  ];
  it.each(faults)("a committed write and adapter fault %s → still_unknown %s, nothing written", async (fault, reasonCode) => {
    const clock = createManualClock();
    const double = createProviderDouble({ clock });
    const key = newUlid();
    const dispatchedAtMs = clock.now();
    await double.commit(key, ARGS);
    double.setFaults({ adapterFault: fault });
    const decision = await reconcile(double, effectOf(double, key, dispatchedAtMs), 30);
    expect(decision).toMatchObject({ decision: "still_unknown", reasonSource: "runtime", reasonCode });
    expect(double.writeCount(key)).toBe(1);
  });

  it("the double's adapter honours the signal while waiting (lookupDelayMs on a clock that never moves)", async () => {
    const double = createProviderDouble({ clock: createManualClock(), faults: { lookupDelayMs: 60_000 } });
    const adapter = createProviderDoubleAdapter(double);
    const controller = new AbortController();
    const key = newUlid();
    const { effectId: _e, taskId: _t, ...rest } = effectOf(double, key, double.clock.now());
    const pending = adapter.lookup(
      { effectId: newUlid(), ...rest, firstDispatchedAtMs: 0, lastDispatchedAtMs: 0 },
      {
        signal: controller.signal,
        logger: { debug() {}, info() {}, warn() {}, error() {} },
      },
    );
    controller.abort(new Error("stop"));
    await expect(pending).rejects.toThrow("stop");
    expect(double.lookupCount(key)).toBe(0);
  });

  it("answerOverride makes the adapter return any value verbatim", async () => {
    const double = createProviderDouble({
      clock: createManualClock(),
      faults: { answerOverride: () => ({ outcome: "still_unknown", reasonCode: "maintenance", retryAfterMs: 5 }) },
    });
    const decision = await reconcile(double, effectOf(double, newUlid(), double.clock.now()));
    expect(decision).toMatchObject({
      decision: "still_unknown",
      reasonSource: "adapter",
      reasonCode: "maintenance",
      nextLookupNotBeforeMs: double.clock.now() + 5,
    });
  });
});
