// The fail-closed checks a schema-valid adapter answer must pass before it may confirm anything about an effect.
import type { AdapterDeclaration, LookupRequest } from "../author/adapter.contract.js";
import { toOneLine } from "./error-message.js";
import { jsonClone } from "../author/json-size.js";
import type { LookupOutcome } from "../author/lookup-outcome.contract.js";
import type { AdapterRef, ReconcileDecision, RuntimeReasonCode, RuntimeStillUnknownDecision } from "./reconcile-decision.contract.js";

/**
 * @internal Applies the fail-closed checks of docs/DESIGN.md §5 to a schema-valid adapter answer (only
 * a decision it confirms may change an effect's status: docs/DESIGN.md §3 rule 5). Pure. In order:
 * 1. `still_unknown` passes through (`reasonSource: "adapter"`; `retryAfterMs` →
 *    `nextLookupNotBeforeMs = nowMs + retryAfterMs`).
 *    Refusals below carry the answer's receipt as evidence (never proof).
 * 2. `answer_mismatch` when the echoed `toolName`/`idempotencyKey` is not the effect's (an answer
 *    about a tool it did not declare, or about another effect: §5 "refused").
 * 3. `key_conflict` (operator attention) when `receipt.requestFingerprint` is present and differs
 *    from the effect's, for both confirmed outcomes (§5; Stripe / EC2 parameter-mismatch semantics).
 * 4. For `confirmed_not_executed` only:
 *    - `retention_expired` (operator attention) when `nowMs + timeoutMs - firstDispatchedAtMs >
 *      retentionWindowMs`: the provider may have forgotten the key by the time it answered. This is
 *      stricter than §5's "since the last dispatch" on purpose: a provider remembers a key from its
 *      first commit, which the first dispatch may have made, and the answer may be read up to
 *      `timeoutMs` after `nowMs`.
 *    - `in_flight_window` when `keyFencing` is `max_in_flight` and `nowMs < lastDispatchedAtMs +
 *      sendWithinMs + maxInFlightMs` (a late commit could still land); `nextLookupNotBeforeMs` is
 *      that sum. `sendWithinMs` is the claim's send-by deadline (see `sendDeadlinePassed` in effect-claim.contract.ts): the Driver
 *      may send up to that long after the claim, and the request may commit up to `maxInFlightMs`
 *      after it was sent.
 * 5. Otherwise the confirmed decision, with JSON copies of `result` and `receipt`.
 */
export function judgeOutcome(
  outcome: LookupOutcome,
  request: LookupRequest,
  declaration: AdapterDeclaration,
  nowMs: number,
  timeoutMs: number,
  sendWithinMs = 0,
): ReconcileDecision {
  const adapter: AdapterRef = { id: declaration.id, version: declaration.version };

  if (outcome.outcome === "still_unknown") {
    return {
      decision: "still_unknown",
      reasonSource: "adapter",
      reasonCode: outcome.reasonCode,
      adapter,
      operatorAttention: false,
      ...(outcome.retryAfterMs === undefined ? {} : { nextLookupNotBeforeMs: nowMs + outcome.retryAfterMs }),
    };
  }

  const receipt = jsonClone(outcome.receipt);
  const refuse = (reasonCode: RuntimeReasonCode, error: string, nextLookupNotBeforeMs?: number): RuntimeStillUnknownDecision => {
    const decision: RuntimeStillUnknownDecision = {
      decision: "still_unknown",
      reasonSource: "runtime",
      reasonCode,
      adapter,
      operatorAttention: reasonCode === "key_conflict" || reasonCode === "retention_expired",
      error: toOneLine(error),
      receipt,
    };
    if (nextLookupNotBeforeMs !== undefined) decision.nextLookupNotBeforeMs = nextLookupNotBeforeMs;
    return decision;
  };

  if (outcome.toolName !== request.toolName || outcome.idempotencyKey !== request.idempotencyKey) {
    return refuse(
      "answer_mismatch",
      `the ${outcome.outcome} answer is about tool "${outcome.toolName}" key ${outcome.idempotencyKey}, not tool "${request.toolName}" key ${request.idempotencyKey}`,
    );
  }
  if (receipt.requestFingerprint !== undefined && receipt.requestFingerprint !== request.requestFingerprint) {
    return refuse(
      "key_conflict",
      `the provider recorded request fingerprint ${receipt.requestFingerprint} under key ${request.idempotencyKey}; the effect's is ${request.requestFingerprint}`,
    );
  }

  if (outcome.outcome === "confirmed_succeeded") {
    return { decision: "confirmed_succeeded", result: jsonClone(outcome.result), receipt, adapter };
  }

  const latestAnswerMs = nowMs + timeoutMs;
  if (latestAnswerMs - request.firstDispatchedAtMs > declaration.retentionWindowMs) {
    return refuse(
      "retention_expired",
      `not_executed answered up to ${latestAnswerMs - request.firstDispatchedAtMs} ms after the first dispatch, beyond the ${declaration.retentionWindowMs} ms retention window`,
    );
  }
  if (declaration.keyFencing.kind === "max_in_flight") {
    const inFlightUntilMs = request.lastDispatchedAtMs + sendWithinMs + declaration.keyFencing.maxInFlightMs;
    if (nowMs < inFlightUntilMs) {
      return refuse(
        "in_flight_window",
        `not_executed answered ${nowMs - request.lastDispatchedAtMs} ms after the last dispatch, within its ${sendWithinMs} ms send-by deadline plus the ${declaration.keyFencing.maxInFlightMs} ms maximum in-flight time`,
        inFlightUntilMs,
      );
    }
  }
  return { decision: "confirmed_not_executed", receipt, adapter };
}
