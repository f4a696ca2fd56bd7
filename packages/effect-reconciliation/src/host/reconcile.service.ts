// One reconcile step for an unknown effect: ask the adapter, then judge its answer fail-closed, with the retention canary.
import { z } from "zod";
import type { AdapterDeclaration, AdapterLogger, ReconciliationAdapter } from "../author/adapter.contract.js";
import { AdapterAnswerRefusedError, AdapterCrashedError } from "./adapter-source.contract.js";
import { NOOP_LOGGER, safeLogger } from "./adapter-logger.js";
import { summarizeError } from "./error-message.js";
import { judgeOutcome } from "./fail-closed-checks.js";
import { LookupOutcomeSchema, type LookupOutcome } from "../author/lookup-outcome.contract.js";
import { runLookup } from "./lookup-runner.js";
import type {
  AdapterRef,
  IneligibleDecision,
  ReconcileDecision,
  RuntimeReasonCode,
  RuntimeStillUnknownDecision,
} from "./reconcile-decision.contract.js";
import { evaluateEligibility } from "./reconcile-eligibility.js";
import type { LookupAnswer, ReconcileBinding } from "./lookup-answer.contract.js";
import {
  applyRetentionCanary,
  checkRetentionCanary,
  needsRetentionCanary,
  type RetentionCanaryInput,
  type RetentionCanaryVerdict,
} from "./retention-canary.js";

export type { LookupAnswer, ReconcileBinding } from "./lookup-answer.contract.js";
import type { ReconcilableEffect } from "./reconcilable-effect.contract.js";

/** The largest lookup timeout: 2 147 483 647 ms (Node's timer limit; larger values would fire at once). */
export const MAX_LOOKUP_TIMEOUT_MS = 2_147_483_647;

/**
 * Input of {@link reconcileEffect}.
 * - `effect`: the `unknown` effect ({@link ReconcilableEffect}; extra fields ignored);
 * - `binding`: the adapter bound to the effect's MCP server;
 * - `nowMs`: ms since the epoch, read right before the call (the windows are measured from it);
 * - `timeoutMs`: the lookup timeout, integer 1..{@link MAX_LOOKUP_TIMEOUT_MS} ms;
 * - `logger?`: host logger (pino-compatible), default {@link NOOP_LOGGER};
 * - `signal?`: the host's own cancellation (e.g. shutdown) → `lookup_cancelled`;
 * - `canary?`: for {@link reconcileEffect} only: the retention canary, a `succeeded`
 *   effect of the same server and tool whose first dispatch lies in `retentionCanaryWindow`; null or
 *   absent when the host has none (a fence-less miss is then refused, `retention_unverified`).
 */
export interface ReconcileEffectInput {
  effect: ReconcilableEffect;
  binding: ReconcileBinding;
  nowMs: number;
  timeoutMs: number;
  logger?: AdapterLogger;
  signal?: AbortSignal;
  canary?: ReconcilableEffect | null;
}

const NowMsSchema = z.number().int().nonnegative();
const TimeoutMsSchema = z.number().int().positive().max(MAX_LOOKUP_TIMEOUT_MS);

/**
 * One reconcile step for one `unknown` effect (docs/DESIGN.md §4–§6): {@link askAdapter} then
 * {@link judgeLookupAnswer} against `input.effect`. Writes nothing; the caller persists a confirmed
 * decision, its receipt and result in one transaction (§3 rule 6) with a compare-and-set (a lost
 * CAS is the caller's `superseded`, §3 rule 7). A host that persists outcomes should rather call
 * the two halves itself and judge inside the persisting transaction against the effect read there
 * (the API does; docs/DESIGN.md §4 "the runtime judges every answer against the effect as read from the
 * store in the transaction that persists the outcome").
 *
 * Never throws and never rejects: every adapter misbehaviour (throw, reject, hang, crash, garbage,
 * oversized or mismatched answers, mutating what it was handed) becomes `still_unknown` with a
 * runtime reason code.
 * @returns a {@link ReconcileDecision}; only `confirmed_*` may change the effect's status.
 */
export async function reconcileEffect(input: ReconcileEffectInput): Promise<ReconcileDecision> {
  const answer = await askAdapter(input);
  const unchecked = judgeWithoutCanary(answer, input.effect);
  if (answer.kind !== "answered" || !needsRetentionCanary(answer, unchecked)) return unchecked;
  const verdict = await askRetentionCanary({
    effect: input.effect,
    declaration: answer.declaration,
    canary: input.canary ?? null,
    binding: input.binding,
    nowMs: answer.nowMs,
    timeoutMs: answer.timeoutMs,
    ...(input.logger ? { logger: input.logger } : {}),
    ...(input.signal ? { signal: input.signal } : {}),
  });
  return judgeLookupAnswer(answer, input.effect, verdict);
}

/**
 * True when the judged `answer` is a miss that stands only with a confirmed retention canary
 * (see `RetentionCanary` in the API's retention-canary.service.ts): `confirmed_not_executed` from an adapter without a key fence (`max_in_flight`)
 * that passed every other check against `effect`. The host then finds a canary and calls
 * {@link askRetentionCanary} before it judges the answer for good. Pure, never throws.
 */
export function answerNeedsRetentionCanary(answer: LookupAnswer, effect: ReconcilableEffect): boolean {
  // Judging never turns another answer into `confirmed_not_executed`, and the key fence is the declaration's:
  // any other answer is known not to need a canary without judging it (and copying its receipt and result).
  if (answer.kind !== "answered" || answer.outcome.outcome !== "confirmed_not_executed") return false;
  if (answer.declaration.keyFencing.kind !== "max_in_flight") return false;
  return needsRetentionCanary(answer, judgeWithoutCanary(answer, effect));
}

/**
 * Asks the bound adapter about the retention canary's key, as an ordinary lookup ({@link askAdapter}:
 * sandboxed, timed out, schema-checked) judged against the canary with every fail-closed check; see
 * `checkRetentionCanary` in `retention-canary.ts` for the verdicts. Settles nothing about the canary
 * and writes nothing. Never throws.
 */
export async function askRetentionCanary(input: RetentionCanaryInput): Promise<RetentionCanaryVerdict> {
  return checkRetentionCanary(input, { ask: askAdapter, judge: judgeWithoutCanary });
}

/**
 * The adapter-calling half of {@link reconcileEffect}. Never throws and never rejects.
 * 1. Eligibility, with no adapter call (`ineligible`, see `checkEligibility`; `invalid_input` also
 *    for a malformed `nowMs`/`timeoutMs`).
 * 2. One `lookup` call with a **structured copy** of the lookup request (the adapter never holds an
 *    object the runtime reads again) and a signal aborting after `timeoutMs` (or on `signal`), raced
 *    against it: an adapter that ignores the signal is not waited for. A rejection with
 *    `AdapterCrashedError` (an isolating host's worker died) is `adapter_crashed`; an
 *    `AdapterAnswerRefusedError` (the host refused to copy an oversized or non-JSON answer back) is
 *    `invalid_adapter_output` with the host's reason (the size bound), not a schema message.
 * 3. The answer is validated against `LookupOutcomeSchema` (size limits included) and copied.
 */
export async function askAdapter(input: ReconcileEffectInput): Promise<LookupAnswer> {
  try {
    return await askUnsafe(input);
  } catch (error) {
    // Only reachable through a bug of this package: stay fail-closed rather than reject.
    return {
      kind: "ineligible",
      decision: { decision: "ineligible", reasonCode: "invalid_input", error: `reconcile step failed: ${summarizeError(error)}` },
    };
  }
}

/**
 * The judging half of {@link reconcileEffect} (pure, never throws): the fail-closed checks of §5
 * (`judgeOutcome` in `fail-closed-checks.ts`) applied to an `answered` {@link LookupAnswer}, against
 * `effect`, which the caller reads from its store (the lookup request is rebuilt from it; nothing the
 * adapter was handed is read), then the retention canary: a miss of an adapter without a key fence
 * stands only with a `confirmed` `canary` verdict ({@link askRetentionCanary}); otherwise it is
 * `still_unknown` (`retention_contradicted` with operator attention, or `retention_unverified`, also
 * when no verdict is given). An effect that is no longer eligible for the answer's binding is
 * `ineligible`; `ineligible` and `refused` answers pass through.
 */
export function judgeLookupAnswer(answer: LookupAnswer, effect: ReconcilableEffect, canary?: RetentionCanaryVerdict): ReconcileDecision {
  return applyRetentionCanary(answer, judgeWithoutCanary(answer, effect), canary);
}

/** {@link judgeLookupAnswer} before the retention canary is applied. */
function judgeWithoutCanary(answer: LookupAnswer, effect: ReconcilableEffect): ReconcileDecision {
  if (answer.kind !== "answered") return answer.decision;
  const ref: AdapterRef = { id: answer.declaration.id, version: answer.declaration.version };
  try {
    const eligibility = evaluateEligibility(effect, answer.declaration, answer.serverId);
    if (!eligibility.eligible) {
      return eligibility.error === undefined
        ? { decision: "ineligible", reasonCode: eligibility.reasonCode }
        : { decision: "ineligible", reasonCode: eligibility.reasonCode, error: eligibility.error };
    }
    return judgeOutcome(
      answer.outcome,
      eligibility.request,
      eligibility.declaration,
      answer.nowMs,
      answer.timeoutMs,
      eligibility.sendWithinMs,
    );
  } catch (error) {
    return refused(ref, "invalid_adapter_output", `answer could not be judged: ${summarizeError(error)}`);
  }
}

async function askUnsafe(input: ReconcileEffectInput): Promise<LookupAnswer> {
  const { effect, binding, nowMs, timeoutMs, signal } = input;
  const hostLogger = input.logger ?? NOOP_LOGGER;
  const ineligible = (decision: IneligibleDecision): LookupAnswer => ({ kind: "ineligible", decision });
  if (!NowMsSchema.safeParse(nowMs).success)
    return ineligible({
      decision: "ineligible",
      reasonCode: "invalid_input",
      error: `nowMs must be a non-negative integer (ms since the epoch)`,
    });
  if (!TimeoutMsSchema.safeParse(timeoutMs).success) {
    return ineligible({
      decision: "ineligible",
      reasonCode: "invalid_input",
      error: `timeoutMs must be an integer from 1 to ${MAX_LOOKUP_TIMEOUT_MS}`,
    });
  }
  let adapter: ReconciliationAdapter;
  let declaration: unknown;
  let serverId: unknown;
  try {
    serverId = binding.serverId;
    adapter = binding.adapter;
    declaration = adapter.declaration;
  } catch (error) {
    return ineligible({ decision: "ineligible", reasonCode: "invalid_declaration", error: `binding: ${summarizeError(error)}` });
  }
  const eligibility = evaluateEligibility(effect, declaration, serverId);
  if (!eligibility.eligible) {
    return ineligible(
      eligibility.error === undefined
        ? { decision: "ineligible", reasonCode: eligibility.reasonCode }
        : { decision: "ineligible", reasonCode: eligibility.reasonCode, error: eligibility.error },
    );
  }
  const { request, declaration: parsedDeclaration } = eligibility;
  const ref: AdapterRef = { id: parsedDeclaration.id, version: parsedDeclaration.version };
  const logFields = { adapterId: ref.id, adapterVersion: ref.version, effectId: request.effectId };
  const log = safeLogger(hostLogger, logFields);

  const run = await runLookup(adapter, structuredClone(request), log, timeoutMs, signal);
  let answer: LookupAnswer;
  if (run.kind === "timed_out")
    answer = { kind: "refused", decision: refused(ref, "lookup_timeout", `lookup did not settle within ${timeoutMs} ms`) };
  else if (run.kind === "cancelled")
    answer = { kind: "refused", decision: refused(ref, "lookup_cancelled", "the caller's signal aborted the lookup") };
  else if (run.kind === "threw") {
    answer = AdapterCrashedError.is(run.error)
      ? { kind: "refused", decision: refused(ref, "adapter_crashed", `${run.error.reason}: ${summarizeError(run.error)}`) }
      : AdapterAnswerRefusedError.is(run.error)
        ? { kind: "refused", decision: refused(ref, "invalid_adapter_output", summarizeError(run.error)) }
        : { kind: "refused", decision: refused(ref, "adapter_error", summarizeError(run.error)) };
  } else {
    const parsed = parseAnswer(run.value, ref);
    answer =
      "outcome" in parsed
        ? { kind: "answered", outcome: parsed.outcome, serverId: String(serverId), declaration: parsedDeclaration, nowMs, timeoutMs }
        : { kind: "refused", decision: parsed };
  }

  if (answer.kind === "refused") {
    log.warn({ reasonCode: answer.decision.reasonCode, error: answer.decision.error }, "reconcile lookup refused");
  } else if (answer.kind === "answered") {
    log.info(
      { outcome: answer.outcome.outcome, ...(answer.outcome.outcome === "still_unknown" ? { reasonCode: answer.outcome.reasonCode } : {}) },
      "reconcile lookup answered",
    );
  }
  return answer;
}

function parseAnswer(value: unknown, ref: AdapterRef): { outcome: LookupOutcome } | RuntimeStillUnknownDecision {
  try {
    const parsed = LookupOutcomeSchema.safeParse(value);
    // zod returns new objects for parsed values: the outcome is detached from the adapter's.
    return parsed.success
      ? { outcome: structuredClone(parsed.data) }
      : refused(ref, "invalid_adapter_output", summarizeError(parsed.error));
  } catch (error) {
    // Hostile values: throwing getters, proxies, recursion deep enough to overflow the stack.
    return refused(ref, "invalid_adapter_output", `answer could not be read: ${summarizeError(error)}`);
  }
}

function refused(adapter: AdapterRef, reasonCode: RuntimeReasonCode, error: string): RuntimeStillUnknownDecision {
  return { decision: "still_unknown", reasonSource: "runtime", reasonCode, adapter, operatorAttention: false, error };
}
