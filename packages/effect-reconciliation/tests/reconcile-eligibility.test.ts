import { describe, expect, it } from "vitest";
import { checkEligibility, isEligible, reconcileEffect, type ReconcilableEffect } from "../src/host/index.ts";
import type { AdapterDeclaration } from "../src/index.ts";
import { SERVER_ID, T0, TIMEOUT_MS, makeDeclaration, makeEffect, notExecutedAnswer, scriptedAdapter } from "./reconcile-fixtures.ts";

const NOW = T0 + 60_000;

describe("eligibility (DESIGN §3 rule 4): no lookup is made for an ineligible effect", () => {
  it("an undeclared tool → ineligible undeclared_tool, zero lookups", async () => {
    const effect = makeEffect({ toolName: "delete_issue" });
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toEqual({ decision: "ineligible", reasonCode: "undeclared_tool" });
    expect(calls).toHaveLength(0);
  });

  it("a binding for another server → ineligible server_mismatch, zero lookups", async () => {
    const effect = makeEffect();
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)));
    const d = await reconcileEffect({ effect, binding: { serverId: "billing", adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toEqual({ decision: "ineligible", reasonCode: "server_mismatch" });
    expect(calls).toHaveLength(0);
  });

  it("no dispatch time → ineligible never_dispatched, zero lookups", async () => {
    const effect = makeEffect({ firstDispatchedAtMs: null, lastDispatchedAtMs: null });
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toEqual({ decision: "ineligible", reasonCode: "never_dispatched" });
    expect(calls).toHaveLength(0);
  });

  const badInputs: Array<[string, Partial<ReconcilableEffect>]> = [
    ["a NaN dispatch time", { firstDispatchedAtMs: Number.NaN, lastDispatchedAtMs: Number.NaN }],
    ["only one dispatch time", { firstDispatchedAtMs: null, lastDispatchedAtMs: T0 }],
    ["first dispatch after the last", { firstDispatchedAtMs: T0 + 1, lastDispatchedAtMs: T0 }],
    ["a key that is not a ULID", { idempotencyKey: "key-1" }],
    ["a malformed fingerprint", { requestFingerprint: "abc" }],
  ];
  it.each(badInputs)("a malformed effect (%s) → ineligible invalid_input, zero lookups", async (_label, overrides) => {
    const effect = makeEffect(overrides);
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toMatchObject({ decision: "ineligible", reasonCode: "invalid_input" });
    expect(calls).toHaveLength(0);
  });

  it.each([
    ["nowMs NaN", Number.NaN, TIMEOUT_MS],
    ["nowMs fractional", NOW + 0.5, TIMEOUT_MS],
    ["timeoutMs 0", NOW, 0],
    ["timeoutMs beyond Node's timer limit", NOW, 2 ** 31],
  ])("%s → ineligible invalid_input, zero lookups (a NaN clock would pass every window check)", async (_label, nowMs, timeoutMs) => {
    const effect = makeEffect();
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs, timeoutMs });
    expect(d).toMatchObject({ decision: "ineligible", reasonCode: "invalid_input" });
    expect(calls).toHaveLength(0);
  });

  it("an adapter whose declaration became invalid → ineligible invalid_declaration, zero lookups", async () => {
    const effect = makeEffect();
    const declaration = makeDeclaration({ retentionWindowMs: Number.NaN });
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)), declaration);
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toMatchObject({ decision: "ineligible", reasonCode: "invalid_declaration" });
    expect(calls).toHaveLength(0);
  });

  it("extra fields of a store row are ignored", async () => {
    const effect = { ...makeEffect(), status: "unknown", version: 3 } as ReconcilableEffect;
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d.decision).toBe("confirmed_not_executed");
    expect(Object.keys(calls[0]?.request ?? {})).not.toContain("status");
  });
});

describe("isEligible / checkEligibility (pure)", () => {
  const declaration = makeDeclaration();
  it("agree with reconcileEffect's eligibility and call nothing", () => {
    expect(isEligible(makeEffect(), declaration, SERVER_ID)).toBe(true);
    expect(checkEligibility(makeEffect(), declaration, SERVER_ID)).toEqual({ eligible: true });
    expect(isEligible(makeEffect({ toolName: "other" }), declaration, SERVER_ID)).toBe(false);
    expect(checkEligibility(makeEffect(), declaration, "billing")).toEqual({ eligible: false, reasonCode: "server_mismatch" });
    expect(checkEligibility(makeEffect({ firstDispatchedAtMs: null, lastDispatchedAtMs: null }), declaration, SERVER_ID)).toEqual({
      eligible: false,
      reasonCode: "never_dispatched",
    });
    const invalid = checkEligibility(makeEffect(), { ...declaration, tools: [] }, SERVER_ID);
    expect(invalid).toMatchObject({ eligible: false, reasonCode: "invalid_declaration" });
  });

  it("judges every call on the values it is given: a parse is reused only for identical field values", () => {
    const effect = makeEffect();
    expect(checkEligibility(effect, declaration, SERVER_ID)).toEqual({ eligible: true });
    // the same effect id with a field that changed since: parsed again, and refused
    expect(checkEligibility({ ...effect, requestFingerprint: "abc" }, declaration, SERVER_ID)).toMatchObject({
      eligible: false,
      reasonCode: "invalid_input",
    });
    expect(checkEligibility({ ...effect, firstDispatchedAtMs: null, lastDispatchedAtMs: null }, declaration, SERVER_ID)).toEqual({
      eligible: false,
      reasonCode: "never_dispatched",
    });
    expect(checkEligibility(effect, declaration, SERVER_ID)).toEqual({ eligible: true });
  });

  it("a declaration that can still change is parsed on every call; a deep-frozen one keeps its verdict", () => {
    const effect = makeEffect();
    const mutable = makeDeclaration();
    expect(checkEligibility(effect, mutable, SERVER_ID)).toEqual({ eligible: true });
    mutable.retentionWindowMs = Number.NaN;
    expect(checkEligibility(effect, mutable, SERVER_ID)).toMatchObject({ eligible: false, reasonCode: "invalid_declaration" });
    const frozen = Object.freeze({ ...makeDeclaration(), tools: Object.freeze([...makeDeclaration().tools]) }) as AdapterDeclaration;
    expect(checkEligibility(effect, frozen, SERVER_ID)).toEqual({ eligible: true });
    expect(checkEligibility(makeEffect({ toolName: "other" }), frozen, SERVER_ID)).toEqual({
      eligible: false,
      reasonCode: "undeclared_tool",
    });
  });
});
