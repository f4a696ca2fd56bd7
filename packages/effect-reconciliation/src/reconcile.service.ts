import { z } from "zod";
import type { AdapterLogger, ReconciliationAdapter } from "./adapter.contract.js";
import { NOOP_LOGGER, safeLogger } from "./adapter-logger.js";
import { summarizeError } from "./error-message.js";
import { judgeOutcome } from "./fail-closed-checks.js";
import { LookupOutcomeSchema, type LookupOutcome } from "./lookup-outcome.contract.js";
import { runLookup } from "./lookup-runner.js";
import type { AdapterRef, ReconcileDecision, RuntimeReasonCode, RuntimeStillUnknownDecision } from "./reconcile-decision.contract.js";
import { evaluateEligibility } from "./reconcile-eligibility.js";
import type { ReconcilableEffect } from "./reconcilable-effect.contract.js";

/** The largest lookup timeout: 2 147 483 647 ms (Node's timer limit; larger values would fire at once). */
export const MAX_LOOKUP_TIMEOUT_MS = 2_147_483_647;

/** The MCP server an adapter instance is bound to (from the host's config). */
export interface ReconcileBinding {
  serverId: string;
  adapter: ReconciliationAdapter;
}

/**
 * Input of {@link reconcileEffect}.
 * - `effect`: the `unknown` effect ({@link ReconcilableEffect}; extra fields ignored);
 * - `binding`: the adapter bound to the effect's MCP server;
 * - `nowMs`: ms since the epoch, read right before the call (the windows are measured from it);
 * - `timeoutMs`: the lookup timeout, integer 1..{@link MAX_LOOKUP_TIMEOUT_MS} ms;
 * - `logger?`: host logger (pino-compatible), default {@link NOOP_LOGGER};
 * - `signal?`: the host's own cancellation (e.g. shutdown) → `lookup_cancelled`.
 */
export interface ReconcileEffectInput {
  effect: ReconcilableEffect;
  binding: ReconcileBinding;
  nowMs: number;
  timeoutMs: number;
  logger?: AdapterLogger;
  signal?: AbortSignal;
}

const NowMsSchema = z.number().int().nonnegative();
const TimeoutMsSchema = z.number().int().positive().max(MAX_LOOKUP_TIMEOUT_MS);

/**
 * One reconcile step for one `unknown` effect (DESIGN.md §4–§6). Writes nothing; the caller persists
 * a confirmed decision, its receipt and result in one transaction (§3 rule 6) with a
 * compare-and-set (a lost CAS is the caller's `superseded`, §3 rule 7).
 *
 * 1. Eligibility, with no adapter call (`ineligible`, see `checkEligibility`; `invalid_input` also
 *    for a malformed `nowMs`/`timeoutMs`).
 * 2. One `lookup` call with a signal aborting after `timeoutMs` (or on `signal`), raced against it:
 *    an adapter that ignores the signal is not waited for.
 * 3. The answer is validated (`LookupOutcomeSchema`, size limits included) and judged by the
 *    fail-closed checks of §5 (see `judgeOutcome` in `fail-closed-checks.ts`).
 *
 * Never throws and never rejects: every adapter misbehaviour (throw, reject, hang, garbage,
 * oversized or mismatched answers) becomes `still_unknown` with a runtime reason code.
 * @returns a {@link ReconcileDecision}; only `confirmed_*` may change the effect's status.
 */
export async function reconcileEffect(input: ReconcileEffectInput): Promise<ReconcileDecision> {
  try {
    return await reconcileUnsafe(input);
  } catch (error) {
    // Only reachable through a bug of this package: stay fail-closed rather than reject.
    return { decision: "ineligible", reasonCode: "invalid_input", error: `reconcile step failed: ${summarizeError(error)}` };
  }
}

async function reconcileUnsafe(input: ReconcileEffectInput): Promise<ReconcileDecision> {
  const { effect, binding, nowMs, timeoutMs, signal } = input;
  const hostLogger = input.logger ?? NOOP_LOGGER;
  if (!NowMsSchema.safeParse(nowMs).success) return { decision: "ineligible", reasonCode: "invalid_input", error: `nowMs must be a non-negative integer (ms since the epoch)` };
  if (!TimeoutMsSchema.safeParse(timeoutMs).success) {
    return { decision: "ineligible", reasonCode: "invalid_input", error: `timeoutMs must be an integer from 1 to ${MAX_LOOKUP_TIMEOUT_MS}` };
  }
  let adapter: ReconciliationAdapter;
  let declaration: unknown;
  let serverId: unknown;
  try {
    serverId = binding.serverId;
    adapter = binding.adapter;
    declaration = adapter.declaration;
  } catch (error) {
    return { decision: "ineligible", reasonCode: "invalid_declaration", error: `binding: ${summarizeError(error)}` };
  }
  const eligibility = evaluateEligibility(effect, declaration, serverId);
  if (!eligibility.eligible) {
    return eligibility.error === undefined
      ? { decision: "ineligible", reasonCode: eligibility.reasonCode }
      : { decision: "ineligible", reasonCode: eligibility.reasonCode, error: eligibility.error };
  }
  const { request, declaration: parsedDeclaration, sendWithinMs } = eligibility;
  const ref: AdapterRef = { id: parsedDeclaration.id, version: parsedDeclaration.version };
  const logFields = { adapterId: ref.id, adapterVersion: ref.version, effectId: request.effectId };
  const log = safeLogger(hostLogger, logFields);

  const run = await runLookup(adapter, request, log, timeoutMs, signal);
  let decision: ReconcileDecision;
  if (run.kind === "timed_out") decision = refused(ref, "lookup_timeout", `lookup did not settle within ${timeoutMs} ms`);
  else if (run.kind === "cancelled") decision = refused(ref, "lookup_cancelled", "the caller's signal aborted the lookup");
  else if (run.kind === "threw") decision = refused(ref, "adapter_error", summarizeError(run.error));
  else decision = judgeAnswer(run.value, (outcome) => judgeOutcome(outcome, request, parsedDeclaration, nowMs, timeoutMs, sendWithinMs), ref);

  if (decision.decision === "still_unknown" && decision.reasonSource === "runtime") {
    log.warn({ reasonCode: decision.reasonCode, operatorAttention: decision.operatorAttention, error: decision.error }, "reconcile lookup refused");
  } else {
    log.info({ decision: decision.decision, ...(decision.decision === "still_unknown" ? { reasonCode: decision.reasonCode } : {}) }, "reconcile lookup answered");
  }
  return decision;
}

function judgeAnswer(value: unknown, judge: (outcome: LookupOutcome) => ReconcileDecision, ref: AdapterRef): ReconcileDecision {
  try {
    const parsed = LookupOutcomeSchema.safeParse(value);
    return parsed.success ? judge(parsed.data) : refused(ref, "invalid_adapter_output", summarizeError(parsed.error));
  } catch (error) {
    // Hostile values: throwing getters, proxies, recursion deep enough to overflow the stack.
    return refused(ref, "invalid_adapter_output", `answer could not be read: ${summarizeError(error)}`);
  }
}

function refused(adapter: AdapterRef, reasonCode: RuntimeReasonCode, error: string): RuntimeStillUnknownDecision {
  return { decision: "still_unknown", reasonSource: "runtime", reasonCode, adapter, operatorAttention: false, error };
}
