// The retention canary: a known-committed key asked about before a fence-less "not executed" is believed.
import type { AdapterDeclaration, AdapterLogger } from "../author/adapter.contract.js";
import { summarizeError, toOneLine } from "./error-message.js";
import type { ReconcileDecision, RuntimeStillUnknownDecision } from "./reconcile-decision.contract.js";
import type { ReconcilableEffect } from "./reconcilable-effect.contract.js";
import type { LookupAnswer, ReconcileBinding } from "./lookup-answer.contract.js";

/**
 * What the retention canary found (docs/DESIGN.md §4 "Retention canary", §5):
 * - `confirmed`: the adapter confirmed the canary's key, with every fail-closed check passed: the
 *   provider still remembers a committed key at least as old as the effect's, so its miss is believed;
 * - `contradicted`: the adapter answered about the canary and did not confirm it (it said
 *   `confirmed_not_executed`, or a confirmed answer named another key or tool, or another request
 *   fingerprint): the provider forgot a key it declared to remember, or the adapter misreads it.
 *   The miss is refused (`retention_contradicted`, operator attention);
 * - `unverified`: no canary could be asked (`canaryEffectId` null: no committed key fits the window),
 *   or its lookup proved nothing (timeout, crash, error, invalid output, the adapter's own
 *   `still_unknown`). The miss is refused (`retention_unverified`), no operator flag; the next lookup
 *   is scheduled as usual (`nextLookupNotBeforeMs` when the adapter asked for a later retry).
 * `error` is one line for the lookup record.
 */
export type RetentionCanaryVerdict =
  | { verdict: "confirmed"; canaryEffectId: string }
  | { verdict: "contradicted"; canaryEffectId: string; error: string }
  | { verdict: "unverified"; canaryEffectId: string | null; error: string; nextLookupNotBeforeMs?: number };

/**
 * The dispatch times (ms since the epoch, both inclusive) a canary's FIRST dispatch must lie in, for
 * an `effect` about to be judged with an answer read up to `timeoutMs` after `nowMs`:
 * - `fromMs = nowMs + timeoutMs - retentionWindowMs`: a key first dispatched then or later was
 *   committed (if at all) no earlier, so the provider must still remember it when the answer arrives;
 * - `toMs = effect.firstDispatchedAtMs`: the canary is at least as old as the effect, so a provider
 *   that remembers the canary remembers the effect (a provider forgets by age).
 * Returns null when the effect was never dispatched or the range is empty.
 */
export function retentionCanaryWindow(
  effect: Pick<ReconcilableEffect, "firstDispatchedAtMs">,
  retentionWindowMs: number,
  nowMs: number,
  timeoutMs: number,
): { fromMs: number; toMs: number } | null {
  if (effect.firstDispatchedAtMs === null) return null;
  const fromMs = nowMs + timeoutMs - retentionWindowMs;
  return fromMs > effect.firstDispatchedAtMs ? null : { fromMs, toMs: effect.firstDispatchedAtMs };
}

/**
 * True when `decision` (judged from `answer`) may only stand with a confirmed canary: a
 * `confirmed_not_executed` from an adapter declaring `max_in_flight` (no key fence). A fencing
 * adapter's miss is made final by the provider itself and needs none.
 */
export function needsRetentionCanary(answer: LookupAnswer, decision: ReconcileDecision): boolean {
  return (
    answer.kind === "answered" && decision.decision === "confirmed_not_executed" && answer.declaration.keyFencing.kind === "max_in_flight"
  );
}

/**
 * Input of {@link checkRetentionCanary}: the `effect` whose miss is judged, the validated
 * `declaration` its answer was judged with (the `answered` lookup's, never the adapter's own object),
 * the `canary` (a `succeeded` effect of the same server and tool, or null when the host found none),
 * the same `binding`, and `nowMs` / `timeoutMs` / `logger` / `signal` as for the effect's own lookup.
 */
export interface RetentionCanaryInput {
  effect: ReconcilableEffect;
  declaration: AdapterDeclaration;
  canary: ReconcilableEffect | null;
  binding: ReconcileBinding;
  nowMs: number;
  timeoutMs: number;
  logger?: AdapterLogger;
  signal?: AbortSignal;
}

/** The ask-and-judge pair the canary goes through (the reconcile step's own halves, injected to keep this file free of a cycle). */
export interface CanaryLookupSteps {
  ask(input: {
    effect: ReconcilableEffect;
    binding: ReconcileBinding;
    nowMs: number;
    timeoutMs: number;
    logger?: AdapterLogger;
    signal?: AbortSignal;
  }): Promise<LookupAnswer>;
  judge(answer: LookupAnswer, effect: ReconcilableEffect): ReconcileDecision;
}

/**
 * Asks the bound adapter about the canary's key (one ordinary lookup through `steps.ask`: sandboxed,
 * timed out, schema-checked) and judges the answer against the canary with every fail-closed check
 * (`steps.judge`). Settles nothing about the canary: the verdict only decides whether the effect's
 * miss may stand. Checks first that the canary fits: same server and tool, another effect, its first
 * dispatch inside {@link retentionCanaryWindow} (else `unverified`, no adapter call). Never throws.
 */
export async function checkRetentionCanary(input: RetentionCanaryInput, steps: CanaryLookupSteps): Promise<RetentionCanaryVerdict> {
  const { effect, canary, binding, nowMs, timeoutMs } = input;
  if (canary === null)
    return {
      verdict: "unverified",
      canaryEffectId: null,
      error:
        "no retention canary: no succeeded effect of this server and tool was first dispatched inside the declared retention window and no later than this one",
    };
  try {
    const retentionWindowMs = input.declaration.retentionWindowMs;
    const window = retentionCanaryWindow(effect, retentionWindowMs, nowMs, timeoutMs);
    const fits =
      canary.effectId !== effect.effectId &&
      canary.serverId === effect.serverId &&
      canary.toolName === effect.toolName &&
      window !== null &&
      canary.firstDispatchedAtMs !== null &&
      canary.firstDispatchedAtMs >= window.fromMs &&
      canary.firstDispatchedAtMs <= window.toMs;
    if (!fits)
      return {
        verdict: "unverified",
        canaryEffectId: canary.effectId,
        error: `canary effect ${canary.effectId} does not fit the canary window`,
      };
    const answer = await steps.ask({
      effect: canary,
      binding,
      nowMs,
      timeoutMs,
      ...(input.logger ? { logger: input.logger } : {}),
      ...(input.signal ? { signal: input.signal } : {}),
    });
    const judged = steps.judge(answer, canary);
    const about = `canary effect ${canary.effectId} (key ${canary.idempotencyKey}, committed)`;
    if (judged.decision === "confirmed_succeeded") return { verdict: "confirmed", canaryEffectId: canary.effectId };
    if (answer.kind === "answered" && answer.outcome.outcome === "confirmed_not_executed")
      return {
        verdict: "contradicted",
        canaryEffectId: canary.effectId,
        error: `the adapter answered confirmed_not_executed for ${about}: the provider forgot a key inside its declared ${retentionWindowMs} ms retention`,
      };
    if (
      judged.decision === "still_unknown" &&
      judged.reasonSource === "runtime" &&
      ["answer_mismatch", "key_conflict"].includes(judged.reasonCode)
    )
      return {
        verdict: "contradicted",
        canaryEffectId: canary.effectId,
        error: `the adapter's answer for ${about} was refused: ${judged.reasonCode}`,
      };
    const reason =
      judged.decision === "still_unknown" || judged.decision === "ineligible"
        ? `${judged.decision} (${judged.reasonCode})`
        : judged.decision;
    return {
      verdict: "unverified",
      canaryEffectId: canary.effectId,
      error: toOneLine(`the lookup of ${about} proved nothing: ${reason}`),
      ...(judged.decision === "still_unknown" && judged.nextLookupNotBeforeMs !== undefined
        ? { nextLookupNotBeforeMs: judged.nextLookupNotBeforeMs }
        : {}),
    };
  } catch (error) {
    // Only reachable through a bug of this package: fail closed.
    return { verdict: "unverified", canaryEffectId: canary.effectId, error: `canary check failed: ${summarizeError(error)}` };
  }
}

/**
 * Applies a canary verdict to a judged decision (pure, never throws). A decision that
 * {@link needsRetentionCanary} stands only with a `confirmed` verdict; otherwise it becomes
 * `still_unknown` with the answer's receipt as evidence: `retention_contradicted` (operator attention)
 * for a `contradicted` verdict, `retention_unverified` for an `unverified` one or none at all (a host
 * that never asked the canary gets its miss refused: fail closed). Any other decision passes through.
 */
export function applyRetentionCanary(
  answer: LookupAnswer,
  decision: ReconcileDecision,
  verdict: RetentionCanaryVerdict | undefined,
): ReconcileDecision {
  if (!needsRetentionCanary(answer, decision) || decision.decision !== "confirmed_not_executed") return decision;
  if (verdict?.verdict === "confirmed") return decision;
  const refusal: RuntimeStillUnknownDecision = {
    decision: "still_unknown",
    reasonSource: "runtime",
    reasonCode: verdict?.verdict === "contradicted" ? "retention_contradicted" : "retention_unverified",
    adapter: decision.adapter,
    operatorAttention: verdict?.verdict === "contradicted",
    error: toOneLine(verdict?.error ?? "no retention canary was asked: a miss without a key fence is not believed without one"),
    receipt: decision.receipt,
  };
  if (verdict?.verdict === "unverified" && verdict.nextLookupNotBeforeMs !== undefined)
    refusal.nextLookupNotBeforeMs = verdict.nextLookupNotBeforeMs;
  return refusal;
}
