import { Buffer } from "node:buffer";
import { newUlid } from "@mosoo/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LookupOutcomeSchema, MAX_RECEIPT_BYTES, reconcileEffect, type KeyFencing } from "../src/host/index.ts";
import {
  ARGS_FINGERPRINT,
  OTHER_FINGERPRINT,
  SERVER_ID,
  T0,
  TOOL,
  makeDeclaration,
  makeEffect,
  observedAt,
  scriptedAdapter,
} from "./reconcile-fixtures.ts";

const effect = makeEffect();
const OTHER_KEY = newUlid();

/** A valid confirmation of the retention canary's key. */
function canaryConfirmed(idempotencyKey: string) {
  return {
    outcome: "confirmed_succeeded",
    toolName: TOOL,
    idempotencyKey,
    result: { content: [] },
    receipt: { observedAt: observedAt(), requestFingerprint: ARGS_FINGERPRINT },
  };
}

/** Mostly `valid` (4 in 5), otherwise one of the `wrong` arbitraries. */
function mostly<T>(valid: fc.Arbitrary<T>, ...wrong: Array<fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: fc.oneof(...wrong) });
}
const absent = fc.constant(undefined);

const receiptArb = mostly(
  fc
    .record(
      {
        providerOperationId: mostly(fc.string({ minLength: 1, maxLength: 10 }), fc.constant(""), fc.constant("x".repeat(300))),
        observedAt: mostly(fc.constant(observedAt()), fc.constant("not a date"), absent),
        requestFingerprint: mostly(
          fc.constantFrom(ARGS_FINGERPRINT, undefined),
          fc.constantFrom(OTHER_FINGERPRINT, ARGS_FINGERPRINT.toUpperCase(), "abc"),
        ),
        detail: mostly(
          fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 })),
          fc.constant({ pad: "p".repeat(MAX_RECEIPT_BYTES) }),
          fc.constant([1]),
        ),
        stray: mostly(absent, fc.string()),
      },
      { requiredKeys: ["providerOperationId", "observedAt", "requestFingerprint", "detail", "stray"] },
    )
    .map((receipt) => Object.fromEntries(Object.entries(receipt).filter(([, v]) => v !== undefined))),
  fc.jsonValue({ maxDepth: 2 }),
  fc.record({ observedAt: fc.constant(observedAt()), stray: fc.string() }),
);

const resultArb = mostly(
  fc.record(
    {
      content: fc.array(fc.record({ type: fc.constantFrom("text", "image"), text: fc.string({ maxLength: 20 }) }), { maxLength: 3 }),
      structuredContent: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 })),
      isError: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue({ maxDepth: 2 }),
  fc.constant({ content: "text" }),
);

/** Answers built from the outcome's parts, each part mostly valid, so that a good share validates. */
const shapedAnswerArb = fc
  .record({
    outcome: mostly(fc.constantFrom("confirmed_succeeded", "confirmed_not_executed", "still_unknown"), fc.constant("found"), absent),
    toolName: mostly(fc.constant(TOOL), fc.constantFrom("other_tool", 42), absent),
    idempotencyKey: mostly(fc.constant(effect.idempotencyKey), fc.constantFrom(OTHER_KEY, "key-1"), absent),
    result: resultArb,
    receipt: receiptArb,
    reasonCode: mostly(fc.constantFrom("rate_limited", "key_conflict"), fc.constant("Bad Code"), absent),
    retryAfterMs: fc.oneof(absent, fc.integer({ min: -5, max: 100_000 }), fc.double()),
  })
  .map((answer) => {
    // Keep only the keys the outcome has (plus, sometimes, stray ones), so valid shapes occur.
    const keys: Record<string, string[]> = {
      confirmed_succeeded: ["outcome", "toolName", "idempotencyKey", "result", "receipt"],
      confirmed_not_executed: ["outcome", "toolName", "idempotencyKey", "receipt"],
      still_unknown: ["outcome", "reasonCode", "retryAfterMs"],
    };
    const wanted = keys[String(answer.outcome)] ?? Object.keys(answer);
    return Object.fromEntries(Object.entries(answer).filter(([k, v]) => wanted.includes(k) && v !== undefined));
  });

const answerArb = fc.oneof(
  { weight: 1, arbitrary: fc.jsonValue() },
  { weight: 1, arbitrary: fc.anything() },
  { weight: 6, arbitrary: shapedAnswerArb },
);

/** Times are drawn relative to the windows, so that every boundary is near. */
const scenarioArb = fc
  .record({
    retentionWindowMs: fc.integer({ min: 1, max: 10_000_000 }),
    fencedProvider: fc.boolean(),
    timeoutMs: fc.integer({ min: 1, max: 10_000 }),
  })
  .chain(({ retentionWindowMs, fencedProvider, timeoutMs }) =>
    fc.record({
      answer: answerArb,
      retentionWindowMs: fc.constant(retentionWindowMs),
      timeoutMs: fc.constant(timeoutMs),
      keyFencing: fencedProvider
        ? fc.constant<KeyFencing>({ kind: "lookup_fences_key" })
        : fc.integer({ min: 1, max: retentionWindowMs }).map((maxInFlightMs): KeyFencing => ({ kind: "max_in_flight", maxInFlightMs })),
      firstToLastMs: fc.integer({ min: 0, max: retentionWindowMs }),
      nowAfterLastMs: fc.integer({ min: -1_000, max: retentionWindowMs + timeoutMs }),
      // the claim's send-by deadline (docs/DESIGN.md §3 rule 12): absent (an effect claimed before it existed) or ms
      sendWithinMs: fc.option(fc.integer({ min: 1, max: Math.max(1, Math.floor(retentionWindowMs / 2)) }), { nil: undefined }),
    }),
  );

type Expected = "confirmed_succeeded" | "confirmed_not_executed" | "still_unknown";

/** The rules of docs/DESIGN.md §5 restated independently of the implementation. */
function expectedDecision(
  answer: unknown,
  s: { retentionWindowMs: number; keyFencing: KeyFencing; timeoutMs: number; sendWithinMs?: number | undefined },
  times: { first: number; last: number; now: number },
): Expected {
  const parsed = LookupOutcomeSchema.safeParse(answer);
  if (!parsed.success || parsed.data.outcome === "still_unknown") return "still_unknown";
  const a = parsed.data;
  if (a.toolName !== effect.toolName || a.idempotencyKey !== effect.idempotencyKey) return "still_unknown";
  if (a.receipt.requestFingerprint !== undefined && a.receipt.requestFingerprint !== effect.requestFingerprint) return "still_unknown";
  if (a.outcome === "confirmed_succeeded") return "confirmed_succeeded";
  if (times.now + s.timeoutMs - times.first > s.retentionWindowMs) return "still_unknown";
  // a request may leave the Driver up to sendWithinMs after the claim, and commit up to maxInFlightMs after that
  if (s.keyFencing.kind === "max_in_flight" && times.now < times.last + (s.sendWithinMs ?? 0) + s.keyFencing.maxInFlightMs)
    return "still_unknown";
  return "confirmed_not_executed";
}

describe("property: an adapter's answer is data, not proof (DESIGN §3 rule 5, §5)", () => {
  // 2,000 runs: on a loaded 2-core machine this takes longer than vitest's 5 s default (no timing is asserted)
  it(
    "for any answer, the decision is confirmed_* exactly when the answer validates and passes every check",
    { timeout: 120_000 },
    async () => {
      const seen = { confirmed_succeeded: 0, confirmed_not_executed: 0, still_unknown: 0 };
      await fc.assert(
        fc.asyncProperty(scenarioArb, async (s) => {
          const last = T0;
          const first = T0 - s.firstToLastMs;
          const nowMs = last + s.nowAfterLastMs;
          const target = {
            ...effect,
            firstDispatchedAtMs: first,
            lastDispatchedAtMs: last,
            ...(s.sendWithinMs === undefined ? {} : { sendWithinMs: s.sendWithinMs }),
          };
          const declaration = makeDeclaration({ retentionWindowMs: s.retentionWindowMs, keyFencing: s.keyFencing });
          // the retention canary (a committed key as old as the effect) is confirmed: the property is about the answer
          const canary = { ...target, effectId: newUlid(), idempotencyKey: newUlid(), lastDispatchedAtMs: first };
          const { adapter } = scriptedAdapter(
            (request) =>
              Promise.resolve(request.idempotencyKey === canary.idempotencyKey ? canaryConfirmed(canary.idempotencyKey) : s.answer),
            declaration,
          );
          const decision = await reconcileEffect({
            effect: target,
            binding: { serverId: SERVER_ID, adapter },
            nowMs,
            timeoutMs: s.timeoutMs,
            canary,
          });

          expect(decision.decision).toBe(expectedDecision(s.answer, s, { first, last, now: nowMs }));
          if (decision.decision !== "ineligible") seen[decision.decision] += 1;
          if (decision.decision === "confirmed_succeeded" || decision.decision === "confirmed_not_executed") {
            // Checked without the schema under test: the receipt is bounded and names no other request.
            expect(Buffer.byteLength(JSON.stringify(decision.receipt))).toBeLessThanOrEqual(MAX_RECEIPT_BYTES);
            expect([undefined, effect.requestFingerprint]).toContain(decision.receipt.requestFingerprint);
            const answer = s.answer as { toolName?: unknown; idempotencyKey?: unknown; receipt?: unknown };
            expect(answer.toolName).toBe(effect.toolName);
            expect(answer.idempotencyKey).toBe(effect.idempotencyKey);
            expect(decision.receipt).toEqual(JSON.parse(JSON.stringify(answer.receipt)));
          }
        }),
        { numRuns: 2000 },
      );
      // The generator must reach every branch, or the property proves little.
      expect(seen.confirmed_succeeded).toBeGreaterThan(0);
      expect(seen.confirmed_not_executed).toBeGreaterThan(0);
      expect(seen.still_unknown).toBeGreaterThan(0);
    },
  ); // 2000 runs; each request and answer is structured-cloned (the adapter holds a copy)
});
