import { describe, expect, it } from "vitest";
import {
  AdapterDeclarationSchema,
  LookupOutcomeSchema,
  LookupRequestSchema,
  MAX_PROVIDER_OPERATION_ID_LENGTH,
  MAX_RECEIPT_BYTES,
  MAX_RESULT_BYTES,
  ReceiptSchema,
} from "../src/host/index.ts";
import { ARGS_FINGERPRINT, T0, makeDeclaration, makeEffect, notExecutedAnswer, observedAt, succeededAnswer } from "./reconcile-fixtures.ts";

describe("contract constants (DESIGN §4: typed and bounded)", () => {
  it("bounds receipts at 4096 bytes and results at 1 MiB", () => {
    expect(MAX_RECEIPT_BYTES).toBe(4096);
    expect(MAX_RESULT_BYTES).toBe(1024 * 1024);
  });
});

describe("ReceiptSchema", () => {
  it("accepts the documented fields, with a UTC or an offset date-time", () => {
    const receipt = {
      providerOperationId: "op-1",
      observedAt: "2026-03-01T10:00:00+02:00",
      requestFingerprint: ARGS_FINGERPRINT,
      detail: { a: [1, "b", null] },
    };
    expect(ReceiptSchema.parse(receipt)).toEqual(receipt);
    expect(ReceiptSchema.safeParse({ observedAt: observedAt() }).success).toBe(true);
  });

  it(`bounds providerOperationId at ${MAX_PROVIDER_OPERATION_ID_LENGTH} characters`, () => {
    const at = ReceiptSchema.safeParse({ observedAt: observedAt(), providerOperationId: "o".repeat(MAX_PROVIDER_OPERATION_ID_LENGTH) });
    const over = ReceiptSchema.safeParse({
      observedAt: observedAt(),
      providerOperationId: "o".repeat(MAX_PROVIDER_OPERATION_ID_LENGTH + 1),
    });
    expect([at.success, over.success]).toEqual([true, false]);
  });

  it("refuses a detail that is not a JSON object, and unknown keys", () => {
    expect(ReceiptSchema.safeParse({ observedAt: observedAt(), detail: [1, 2] }).success).toBe(false);
    expect(ReceiptSchema.safeParse({ observedAt: observedAt(), detail: { f: () => 1 } }).success).toBe(false);
    expect(ReceiptSchema.safeParse({ observedAt: observedAt(), receiptId: "x" }).success).toBe(false);
    // a key a copy would drop silently (an own "__proto__", as JSON.parse makes it) is refused, nested or not
    expect(ReceiptSchema.safeParse({ observedAt: observedAt(), detail: { "": JSON.parse('{"__proto__": 0}') } }).success).toBe(false);
    expect(ReceiptSchema.safeParse({ observedAt: observedAt(), detail: JSON.parse('{"constructor": 1}') }).success).toBe(false);
    expect(ReceiptSchema.parse({ observedAt: observedAt(), detail: { a: { b: [1, "x", null] } } }).detail).toEqual({
      a: { b: [1, "x", null] },
    });
  });
});

describe("LookupOutcomeSchema", () => {
  const effect = makeEffect();
  it("accepts the three documented outcomes", () => {
    expect(LookupOutcomeSchema.safeParse(succeededAnswer(effect)).success).toBe(true);
    expect(LookupOutcomeSchema.safeParse(notExecutedAnswer(effect)).success).toBe(true);
    expect(LookupOutcomeSchema.safeParse({ outcome: "still_unknown", reasonCode: "rate_limited", retryAfterMs: 1000 }).success).toBe(true);
  });

  it("fills a result's missing content with [] (McpToolResultSchema) and keeps unknown result fields", () => {
    const parsed = LookupOutcomeSchema.parse(succeededAnswer(effect, { result: { structuredContent: { n: 1 }, extra: true } }));
    expect(parsed.outcome === "confirmed_succeeded" && parsed.result).toEqual({ content: [], structuredContent: { n: 1 }, extra: true });
  });

  it("refuses a 65-character reason code and a fractional retryAfterMs", () => {
    expect(LookupOutcomeSchema.safeParse({ outcome: "still_unknown", reasonCode: `a${"b".repeat(64)}` }).success).toBe(false);
    expect(LookupOutcomeSchema.safeParse({ outcome: "still_unknown", reasonCode: `a${"b".repeat(63)}` }).success).toBe(true);
    expect(LookupOutcomeSchema.safeParse({ outcome: "still_unknown", reasonCode: "slow", retryAfterMs: 1.5 }).success).toBe(false);
  });
});

describe("AdapterDeclarationSchema", () => {
  it("accepts both fencing kinds and semver versions with pre-release and build parts", () => {
    expect(AdapterDeclarationSchema.safeParse(makeDeclaration({ version: "2.0.0-rc.1+build.5" })).success).toBe(true);
    expect(
      AdapterDeclarationSchema.safeParse(makeDeclaration({ keyFencing: { kind: "max_in_flight", maxInFlightMs: 300_000 } })).success,
    ).toBe(true);
  });

  it("refuses an id longer than 64 characters or starting with a symbol", () => {
    expect(AdapterDeclarationSchema.safeParse(makeDeclaration({ id: "a".repeat(64) })).success).toBe(true);
    expect(AdapterDeclarationSchema.safeParse(makeDeclaration({ id: "a".repeat(65) })).success).toBe(false);
    expect(AdapterDeclarationSchema.safeParse(makeDeclaration({ id: "-adapter" })).success).toBe(false);
  });
});

describe("LookupRequestSchema", () => {
  it("requires first <= last dispatch", () => {
    const { firstDispatchedAtMs: _f, lastDispatchedAtMs: _l, ...rest } = makeEffect();
    expect(LookupRequestSchema.safeParse({ ...rest, firstDispatchedAtMs: T0, lastDispatchedAtMs: T0 + 1 }).success).toBe(true);
    expect(LookupRequestSchema.safeParse({ ...rest, firstDispatchedAtMs: T0 + 1, lastDispatchedAtMs: T0 }).success).toBe(false);
  });
});
