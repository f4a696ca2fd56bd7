import { describe, expect, it } from "vitest";
import {
  ArgumentsJsonSchema,
  DriverTokenSchema,
  EffectClaimSchema,
  effectUnknownError,
  EnqueueToolCallRequestSchema,
  fingerprintArguments,
  RunErrorSchema,
  runEffectsUnknownError,
  turnInterruptedError,
  newUlid,
  toMcpExecuteCommandResult,
  UlidSchema,
} from "../src/index.js";

const command = { requestId: "req-1", serverId: "tracker", toolName: "createIssue" };

describe("request fingerprint (RFC 8785 + sha-256)", () => {
  it("ignores key order and number spelling, and changes with any value", () => {
    const a = fingerprintArguments({ title: "x", body: "y", n: 1 });
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprintArguments({ n: 1.0, body: "y", title: "x" })).toBe(a);
    expect(fingerprintArguments({ title: "x", body: "y", n: 2 })).not.toBe(a);
    expect(fingerprintArguments({ title: "x", body: "y ", n: 1 })).not.toBe(a);
  });

  it("refuses what JSON cannot carry (a non-finite number)", () => {
    expect(() => fingerprintArguments({ n: Number.POSITIVE_INFINITY })).toThrow();
  });
});

describe("McpExecuteCommandResult from an MCP tool result", () => {
  it("joins text blocks, keeps isError, and falls back to structuredContent", () => {
    expect(
      toMcpExecuteCommandResult({ content: [{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }] }, command),
    ).toEqual({ ...command, outputText: "a\nb" });
    expect(toMcpExecuteCommandResult({ content: [{ type: "text", text: "no" }], isError: true }, command)).toEqual({
      ...command,
      outputText: "no",
      isError: true,
    });
    expect(toMcpExecuteCommandResult({ content: [], structuredContent: { id: 7 } }, command).outputText).toBe('{"id":7}');
  });
});

describe("schemas", () => {
  it("accepts ULIDs and refuses anything else", () => {
    expect(UlidSchema.safeParse(newUlid()).success).toBe(true);
    expect(UlidSchema.safeParse("01JDZZZZZZZZZZZZZZZZZZZZZI").success).toBe(false); // I is not Crockford base32
    expect(UlidSchema.safeParse("short").success).toBe(false);
    // 26 base32 characters hold 130 bits, a ULID 128: the first character is at most 7
    expect(UlidSchema.safeParse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ").success).toBe(true);
    expect(UlidSchema.safeParse("8ZZZZZZZZZZZZZZZZZZZZZZZZZ").success).toBe(false);
    expect(UlidSchema.safeParse("Z0000000000000000000000000").success).toBe(false);
    expect(DriverTokenSchema.safeParse(`mdt_8ZZZZZZZZZZZZZZZZZZZZZZZZZ_${"x".repeat(43)}`).success).toBe(false);
  });

  it("keeps ULIDs minted in one millisecond in creation order", () => {
    const ids = Array.from({ length: 50 }, () => newUlid(1_700_000_000_000));
    expect([...ids].sort()).toEqual(ids);
  });

  it("takes only a JSON object as argumentsJson", () => {
    expect(ArgumentsJsonSchema.safeParse('{"a":1}').success).toBe(true);
    for (const bad of ["[]", "1", "null", "{nope"]) expect(ArgumentsJsonSchema.safeParse(bad).success).toBe(false);
  });

  it("discriminates the claim union and refuses an unknown kind", () => {
    const effectId = newUlid();
    expect(EffectClaimSchema.parse({ kind: "not_executed", effectId })).toEqual({ kind: "not_executed", effectId });
    expect(
      EffectClaimSchema.safeParse({ kind: "execute", effectId, attempt: 0, idempotencyKey: newUlid(), sendWithinMs: 1_000 }).success,
    ).toBe(false);
    // an execute claim always carries its send-by deadline (docs/DESIGN.md §3 rule 12): positive whole ms
    expect(
      EffectClaimSchema.safeParse({ kind: "execute", effectId, attempt: 1, idempotencyKey: newUlid(), sendWithinMs: 1_000 }).success,
    ).toBe(true);
    for (const sendWithinMs of [undefined, 0, -1, 1.5]) {
      expect(EffectClaimSchema.safeParse({ kind: "execute", effectId, attempt: 1, idempotencyKey: newUlid(), sendWithinMs }).success).toBe(
        false,
      );
    }
    expect(EffectClaimSchema.safeParse({ kind: "retry", effectId }).success).toBe(false);
  });

  it("checks the Driver token shape and the tool call request", () => {
    expect(DriverTokenSchema.safeParse(`mdt_${newUlid()}_${"a".repeat(43)}`).success).toBe(true);
    expect(DriverTokenSchema.safeParse(`mdt_${newUlid()}_short`).success).toBe(false);
    expect(EnqueueToolCallRequestSchema.safeParse({ serverId: "bad id", toolName: "x", arguments: {} }).success).toBe(false);
    expect(EnqueueToolCallRequestSchema.safeParse({ serverId: "tracker", toolName: "x", arguments: [] }).success).toBe(false);
  });
});

describe("RunError: one honest answer for an unknown effect (docs/DESIGN.md §3 rule 14)", () => {
  const id = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
  it("effectUnknownError and runEffectsUnknownError are not retryable, name the effects, and pass the schema", () => {
    expect(RunErrorSchema.parse(effectUnknownError(id))).toMatchObject({
      code: "external_effect.unknown",
      retryable: false,
      details: { effectId: id, effectIds: [id] },
    });
    const run = runEffectsUnknownError([id, "01ARZ3NDEKTSV4RRFFQ69G5FAW"], { driverInstanceId: "d" });
    expect(RunErrorSchema.parse(run)).toMatchObject({
      retryable: false,
      details: { effectIds: [id, "01ARZ3NDEKTSV4RRFFQ69G5FAW"], driverInstanceId: "d" },
    });
    expect(run.message).not.toMatch(/resend/i);
    expect(() => runEffectsUnknownError([])).toThrow();
  });

  it("the schema refuses an external_effect.unknown that is retryable or names no effect", () => {
    const base = effectUnknownError(id);
    expect(RunErrorSchema.safeParse({ ...base, retryable: true }).success).toBe(false);
    expect(RunErrorSchema.safeParse({ ...base, details: { effectId: id } }).success).toBe(false);
    expect(RunErrorSchema.safeParse({ ...base, details: { effectIds: [] } }).success).toBe(false);
    // other codes keep their own rules: the resend wording stays retryable
    expect(RunErrorSchema.safeParse(turnInterruptedError()).success).toBe(true);
  });
});
