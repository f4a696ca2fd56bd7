// Decides, without calling anything, whether an effect would be looked up with a given adapter, and why not.
import { types } from "node:util";
import { AdapterDeclarationSchema, type AdapterDeclaration, type LookupRequest } from "../author/adapter.contract.js";
import { summarizeError } from "./error-message.js";
import type { IneligibleReasonCode } from "./reconcile-decision.contract.js";
import { ReconcilableEffectSchema, type ReconcilableEffect } from "./reconcilable-effect.contract.js";

/** Whether an effect would be looked up, and if not, why (see `INELIGIBLE_REASON_CODES`). */
export type EligibilityVerdict = { eligible: true } | { eligible: false; reasonCode: IneligibleReasonCode; error?: string };

/** @internal The verdict plus the parsed inputs the reconcile step goes on with. */
export type EligibilityEvaluation =
  | { eligible: true; request: LookupRequest; declaration: AdapterDeclaration; sendWithinMs: number }
  | { eligible: false; reasonCode: IneligibleReasonCode; error?: string };

/**
 * Would `reconcileEffect` look this effect up with an adapter declaring `declaration`, bound to MCP
 * server `serverId`? Pure: calls nothing, never throws. Checks, in order (docs/DESIGN.md §3 rule 4):
 * the effect is well-formed (`invalid_input`), the declaration validates (`invalid_declaration`),
 * `effect.serverId === serverId` (`server_mismatch`), `declaration.tools` includes
 * `effect.toolName` (`undeclared_tool`), the effect was dispatched (`never_dispatched`).
 * The feature flag is the host's business, not checked here.
 */
export function checkEligibility(effect: ReconcilableEffect, declaration: AdapterDeclaration, serverId: string): EligibilityVerdict {
  const evaluation = evaluateEligibility(effect, declaration, serverId);
  if (evaluation.eligible) return { eligible: true };
  return evaluation.error === undefined
    ? { eligible: false, reasonCode: evaluation.reasonCode }
    : { eligible: false, reasonCode: evaluation.reasonCode, error: evaluation.error };
}

/** `checkEligibility(effect, declaration, serverId).eligible`: true when a lookup would be made. */
export function isEligible(effect: ReconcilableEffect, declaration: AdapterDeclaration, serverId: string): boolean {
  return evaluateEligibility(effect, declaration, serverId).eligible;
}

/**
 * @internal See {@link checkEligibility}; also returns the parsed effect (as a lookup request; the
 * adapter never sees `sendWithinMs`), the declaration, and the send-by deadline (ms, 0 when none).
 * Every check runs on every call; only the schema parses are memoized ({@link parseEffect},
 * {@link parseDeclaration}), so the several judgements of one outcome (admission, the lookup, the
 * retention canary, the judgement in the outcome's transaction) parse the effect and declaration once.
 */
export function evaluateEligibility(effect: unknown, declaration: unknown, serverId: unknown): EligibilityEvaluation {
  const parsedEffect = parseEffect(effect);
  if (!parsedEffect.ok) return { eligible: false, reasonCode: "invalid_input", error: `effect: ${parsedEffect.error}` };
  const parsedDeclaration = parseDeclaration(declaration);
  if (!parsedDeclaration.ok) return { eligible: false, reasonCode: "invalid_declaration", error: parsedDeclaration.error };

  const e = parsedEffect.effect;
  const d = parsedDeclaration.declaration;
  if (e.serverId !== serverId) return { eligible: false, reasonCode: "server_mismatch" };
  if (!d.tools.includes(e.toolName)) return { eligible: false, reasonCode: "undeclared_tool" };
  if (e.firstDispatchedAtMs === null || e.lastDispatchedAtMs === null) return { eligible: false, reasonCode: "never_dispatched" };
  return {
    eligible: true,
    declaration: d,
    sendWithinMs: e.sendWithinMs ?? 0,
    request: {
      effectId: e.effectId,
      serverId: e.serverId,
      toolName: e.toolName,
      idempotencyKey: e.idempotencyKey,
      requestFingerprint: e.requestFingerprint,
      firstDispatchedAtMs: e.firstDispatchedAtMs,
      lastDispatchedAtMs: e.lastDispatchedAtMs,
      ...(e.taskId ? { taskId: e.taskId } : {}),
    },
  };
}

/** The fields of a {@link ReconcilableEffect} its schema reads, in a fixed order (the memo's key). */
const EFFECT_FIELDS = [
  "effectId",
  "serverId",
  "toolName",
  "idempotencyKey",
  "requestFingerprint",
  "firstDispatchedAtMs",
  "lastDispatchedAtMs",
  "sendWithinMs",
  "taskId",
] as const;

/** Effects parsed successfully, by effect id: the raw field values read and the parse's output. At most {@link EFFECT_MEMO_SIZE}. */
const parsedEffects = new Map<unknown, { raw: unknown[]; effect: ReconcilableEffect }>();
/** Entries of {@link parsedEffects} at most (the oldest is dropped first): a few times the largest lookup concurrency. */
const EFFECT_MEMO_SIZE = 4_096;

/**
 * `ReconcilableEffectSchema.safeParse(effect)`, memoized: the schema is a pure function of the
 * {@link EFFECT_FIELDS} (unknown keys are ignored), so an effect whose field values are strictly equal
 * (`===`) to those of an effect parsed successfully before gets that parse's output without parsing
 * again. Each field is read once (a getter cannot answer the comparison one value and the parse
 * another). Never throws: a throwing value is `ok: false` with its message.
 */
function parseEffect(effect: unknown): { ok: true; effect: ReconcilableEffect } | { ok: false; error: string } {
  try {
    const record = typeof effect === "object" && effect !== null ? (effect as Record<string, unknown>) : undefined;
    const raw = record === undefined ? undefined : EFFECT_FIELDS.map((field) => record[field]);
    const memo = raw === undefined ? undefined : parsedEffects.get(raw[0]);
    if (memo !== undefined && raw !== undefined && memo.raw.every((value, i) => value === raw[i])) return { ok: true, effect: memo.effect };
    const source = raw === undefined ? effect : Object.fromEntries(EFFECT_FIELDS.map((field, i) => [field, raw[i]]));
    const parsed = ReconcilableEffectSchema.safeParse(source);
    if (!parsed.success) return { ok: false, error: summarizeError(parsed.error) };
    if (raw !== undefined) {
      parsedEffects.delete(raw[0]);
      parsedEffects.set(raw[0], { raw, effect: parsed.data });
      if (parsedEffects.size > EFFECT_MEMO_SIZE) parsedEffects.delete(parsedEffects.keys().next().value);
    }
    return { ok: true, effect: parsed.data };
  } catch (error) {
    return { ok: false, error: summarizeError(error) };
  }
}

/**
 * Declarations parsed before, by the object passed in: only objects that cannot change any more are
 * kept (deep-frozen plain data, no accessors, no proxies; see {@link isImmutableData}), so a hit is the
 * parse of the same content. The parse's own output is deep-frozen and kept as its own entry.
 */
const parsedDeclarations = new WeakMap<object, AdapterDeclaration>();

/** `AdapterDeclarationSchema.safeParse(declaration)`, memoized for immutable declarations ({@link parsedDeclarations}). Never throws. */
function parseDeclaration(declaration: unknown): { ok: true; declaration: AdapterDeclaration } | { ok: false; error: string } {
  try {
    const known = typeof declaration === "object" && declaration !== null ? parsedDeclarations.get(declaration) : undefined;
    if (known !== undefined) return { ok: true, declaration: known };
    const parsed = AdapterDeclarationSchema.safeParse(declaration);
    if (!parsed.success) return { ok: false, error: summarizeError(parsed.error) };
    const frozen = deepFreeze(parsed.data);
    parsedDeclarations.set(frozen, frozen);
    if (typeof declaration === "object" && declaration !== null && isImmutableData(declaration))
      parsedDeclarations.set(declaration, frozen);
    return { ok: true, declaration: frozen };
  } catch (error) {
    return { ok: false, error: summarizeError(error) };
  }
}

/** Freezes `value` and everything reachable from it (plain data as a schema parse returns it). */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * True when `value` can never change: frozen, not a proxy, a plain object or array whose own
 * properties are all data properties (no getters), and the same for everything reachable from it.
 */
function isImmutableData(value: unknown, depth = 0): boolean {
  if (typeof value !== "object" || value === null) return typeof value !== "function";
  if (depth > 32 || types.isProxy(value) || !Object.isFrozen(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return false;
  for (const descriptor of Object.values(Object.getOwnPropertyDescriptors(value)))
    if (!("value" in descriptor) || !isImmutableData(descriptor.value, depth + 1)) return false;
  return true;
}
