import { describe, expect, it } from "vitest";
import { AdapterAnswerRefusedError, AdapterCrashedError, askAdapter, judgeLookupAnswer, reconcileEffect } from "../src/host/index.ts";
import {
  HOUR_MS,
  SERVER_ID,
  T0,
  TIMEOUT_MS,
  makeDeclaration,
  makeEffect,
  notExecutedAnswer,
  scriptedAdapter,
} from "./reconcile-fixtures.ts";

/** A provider without a fence: a not_executed answer within an hour of the last dispatch proves nothing. */
const UNFENCED = makeDeclaration({ keyFencing: { kind: "max_in_flight", maxInFlightMs: HOUR_MS } });
const NOW = T0 + 60_000;

describe("adapters are untrusted code (DESIGN §4, §5)", () => {
  it("repro 1: an adapter that rewrites the dispatch times it was handed, then answers not_executed → in_flight_window", async () => {
    const effect = makeEffect();
    const { adapter, calls } = scriptedAdapter((request) => {
      request.lastDispatchedAtMs = 0;
      request.firstDispatchedAtMs = Date.now();
      return Promise.resolve(notExecutedAnswer(effect));
    }, UNFENCED);
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toMatchObject({
      decision: "still_unknown",
      reasonSource: "runtime",
      reasonCode: "in_flight_window",
      nextLookupNotBeforeMs: T0 + HOUR_MS,
    });
    expect(calls[0]!.request.lastDispatchedAtMs).toBe(0); // it did mutate its copy
    expect(effect.lastDispatchedAtMs).toBe(T0); // never the runtime's
  });

  it("judgeLookupAnswer judges against the effect it is given (the store's), not the request the adapter saw", async () => {
    const asked = makeEffect({ firstDispatchedAtMs: T0 - 2 * HOUR_MS, lastDispatchedAtMs: T0 - 2 * HOUR_MS });
    const { adapter } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(asked)), UNFENCED);
    const answer = await askAdapter({ effect: asked, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(answer.kind).toBe("answered");
    const canary = { verdict: "confirmed" as const, canaryEffectId: makeEffect().effectId };
    expect(judgeLookupAnswer(answer, asked, canary)).toMatchObject({ decision: "confirmed_not_executed" });
    // the stored row says it was dispatched again a minute ago: the same answer proves nothing now
    const stored = { ...asked, lastDispatchedAtMs: T0 };
    expect(judgeLookupAnswer(answer, stored, canary)).toMatchObject({ decision: "still_unknown", reasonCode: "in_flight_window" });
  });

  it.each([
    ["crashed", "adapter worker crashed: floating rejection"],
    ["exited", "adapter worker exited: worker exited with code: 7"],
    ["out_of_memory", "adapter worker out_of_memory: heap"],
  ] as const)("a host's AdapterCrashedError (%s) → still_unknown adapter_crashed, not adapter_error", async (reason, message) => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.reject(new AdapterCrashedError(reason, message)), UNFENCED);
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toMatchObject({
      decision: "still_unknown",
      reasonSource: "runtime",
      reasonCode: "adapter_crashed",
      operatorAttention: false,
    });
    expect((d as { error: string }).error).toContain(reason);
  });

  it("a host's AdapterAnswerRefusedError (an answer over its size bound) → invalid_adapter_output naming the bound, not a schema message", async () => {
    const effect = makeEffect();
    const reason = "the answer is larger than the 1114112-character bound on an adapter answer";
    const { adapter } = scriptedAdapter(() => Promise.reject(new AdapterAnswerRefusedError(reason)), UNFENCED);
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toMatchObject({
      decision: "still_unknown",
      reasonSource: "runtime",
      reasonCode: "invalid_adapter_output",
      operatorAttention: false,
    });
    expect((d as { error: string }).error).toBe(`AdapterAnswerRefusedError: ${reason}`);
  });

  it("a worker death the host reported before the signal aborted stays adapter_crashed (out_of_memory), not lookup_cancelled/lookup_timeout", async () => {
    // Deterministic by microtask order, no timer: the crash settles the call first, then the caller's
    // signal aborts (two microtasks later) before the lookup runner reads the race's result.
    const effect = makeEffect();
    const caller = new AbortController();
    const { adapter } = scriptedAdapter(() => {
      queueMicrotask(() => queueMicrotask(() => caller.abort(new Error("the lookup bound"))));
      return Promise.reject(
        new AdapterCrashedError(
          "out_of_memory",
          "adapter worker out_of_memory: Worker terminated due to reaching memory limit: JS heap out of memory",
        ),
      );
    }, UNFENCED);
    const d = await reconcileEffect({
      effect,
      binding: { serverId: SERVER_ID, adapter },
      nowMs: NOW,
      timeoutMs: TIMEOUT_MS,
      signal: caller.signal,
    });
    expect(caller.signal.aborted).toBe(true);
    expect(d).toMatchObject({ decision: "still_unknown", reasonSource: "runtime", reasonCode: "adapter_crashed" });
    expect((d as { error: string }).error).toMatch(/^out_of_memory: /);
  });

  it("a plain rejection is still adapter_error", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.reject(new Error("503")), UNFENCED);
    expect(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS })).toMatchObject({
      reasonCode: "adapter_error",
    });
  });
});
