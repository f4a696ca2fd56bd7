// The effect lifecycle machine: pure decisions on claims, attempt reports, missed deadlines, late evidence and settling an effect.
import type { EffectStatus, OperatorAttentionReason } from "@mosoo/contracts";

/**
 * What a claim on an effect does, by the effect's current status (docs/DESIGN.md §3 rules 2–3):
 * - `intent` → `dispatch`: becomes `executing` as attempt n+1; the Driver may call the provider once;
 * - `executing` → `fence`: an earlier attempt's fate is uncertain; becomes `unknown`, never re-executed;
 * - `succeeded` → `return_result`: the stored result, no provider call;
 * - `unknown` → `fenced`: stays `unknown` (rule 3: `unknown` never becomes `executing` again);
 * - `not_executed` → `not_executed`: a provider adapter proved non-execution; no provider call.
 */
export type ClaimAction = "dispatch" | "fence" | "return_result" | "fenced" | "not_executed";

/** Pure: the claim action for an effect in `status`. See {@link ClaimAction}. */
export function decideClaim(status: EffectStatus): ClaimAction {
  switch (status) {
    case "intent":
      return "dispatch";
    case "executing":
      return "fence";
    case "succeeded":
      return "return_result";
    case "unknown":
      return "fenced";
    case "not_executed":
      return "not_executed";
  }
}

/**
 * Decides a Driver's report about attempt `attempt` of an effect (complete with a result, or
 * mark unknown). Only the current attempt of an `executing` effect may change: a report for an
 * older attempt, or for an effect already fenced, is `rejected` and changes nothing, so a zombie
 * Driver can never overwrite a fence. The same report again is a `duplicate`.
 */
export function decideAttemptReport(
  current: { status: EffectStatus; attemptCount: number },
  report: { attempt: number; to: "succeeded" | "unknown" },
): { outcome: "applied" | "duplicate" | "rejected"; reason?: string } {
  if (report.attempt !== current.attemptCount) {
    return { outcome: "rejected", reason: `attempt ${report.attempt} is not the current attempt ${current.attemptCount}` };
  }
  if (current.status === "executing") return { outcome: "applied" };
  if (current.status === report.to) return { outcome: "duplicate" };
  return { outcome: "rejected", reason: `effect is ${current.status}` };
}

/**
 * Decides a Driver's missed send-by deadline report for attempt `attempt` (docs/DESIGN.md §3 rule 12).
 * The report proves that attempt never sent `tools/call`, so the effect may become `not_executed`
 * (resolution `deadline_missed`) from `executing` at that attempt, and from `unknown` when that
 * attempt is the fenced one (the latest). The same report again (`not_executed` by
 * `deadline_missed`) is a `duplicate`; anything else (an older attempt, a report whose `elapsedMs`
 * (ms) is below the claim's recorded `sendWithinMs`, `succeeded`, a `not_executed` reached another
 * way, `intent`) is `rejected` and changes nothing.
 */
export function decideDeadlineMissed(
  current: { status: EffectStatus; attemptCount: number; resolution: string | null; sendWithinMs: number | null },
  report: { attempt: number; elapsedMs: number },
): { outcome: "applied" | "duplicate" | "rejected"; reason?: string } {
  if (report.attempt !== current.attemptCount) {
    return { outcome: "rejected", reason: `attempt ${report.attempt} is not the current attempt ${current.attemptCount}` };
  }
  if (current.status === "executing" || current.status === "unknown") {
    // A report that says the answer came inside the deadline proves nothing: the Driver may have sent.
    if (current.sendWithinMs !== null && report.elapsedMs < current.sendWithinMs) {
      return {
        outcome: "rejected",
        reason: `elapsedMs ${report.elapsedMs} is within the ${current.sendWithinMs} ms send-by deadline: not a missed deadline`,
      };
    }
    return { outcome: "applied" };
  }
  if (current.status === "not_executed" && current.resolution === "deadline_missed") return { outcome: "duplicate" };
  return { outcome: "rejected", reason: `effect is ${current.status}` };
}

/**
 * What late evidence (docs/DESIGN.md §3 rule 13) does, given the effect and whether the evidence
 * matches it (`matches`: same idempotency key, tool and request fingerprint) and, for a
 * `succeeded` effect, whether the reported result equals the stored one (`sameResult`):
 * - `settle`: `unknown` at that attempt → `succeeded` with resolution `reported_late`;
 * - `duplicate`: already `succeeded` with the same result (nothing changes but the evidence kept);
 * - `contradiction`: a different confirmed outcome (`not_executed`, or `succeeded` with another
 *   result): nothing is overridden; the effect is flagged `late_evidence_contradiction`;
 * - `kept`: a tool-error result (`isError`) about a `not_executed` effect: an error answer (e.g. the
 *   provider refused a fenced key) does not contradict non-execution; the evidence is kept, no flag;
 * - `rejected`: the evidence does not match, names an older attempt, or the effect is
 *   `intent`/`executing` (an `executing` effect takes the result through `complete`).
 */
export type LateEvidenceAction = "settle" | "duplicate" | "contradiction" | "kept" | "rejected";

/** Pure: the {@link LateEvidenceAction} for late evidence about attempt `attempt`, and why when `rejected`/`contradiction`. */
export function decideLateEvidence(
  current: { status: EffectStatus; attemptCount: number },
  report: { attempt: number; matches: boolean; sameResult: boolean; isError: boolean },
): { action: LateEvidenceAction; reason?: string } {
  if (!report.matches)
    return { action: "rejected", reason: "the evidence's idempotency key, tool or request fingerprint is not the effect's" };
  if (report.attempt !== current.attemptCount) {
    return { action: "rejected", reason: `attempt ${report.attempt} is not the current attempt ${current.attemptCount}` };
  }
  switch (current.status) {
    case "unknown":
      return { action: "settle" };
    case "succeeded":
      return report.sameResult ? { action: "duplicate" } : { action: "contradiction", reason: "the effect succeeded with another result" };
    case "not_executed":
      return report.isError
        ? { action: "kept", reason: "a tool-error result does not contradict not_executed" }
        : { action: "contradiction", reason: "the effect was settled not_executed" };
    default:
      return { action: "rejected", reason: `effect is ${current.status}` };
  }
}

/**
 * How an effect leaves `executing`/`unknown` for a settled status (docs/DESIGN.md §3 rule 15: one
 * machine owns every effect transition), by who settles it:
 * - `reconciled`: a provider lookup confirmed it (`unknown` → `succeeded` | `not_executed`);
 * - `operator`: an operator resolved it by hand (`unknown` → `succeeded` | `not_executed`);
 * - `reported_late`: the Driver's late evidence (`unknown` → `succeeded`; rule 13);
 * - `deadline_missed`: the Driver proved it never sent (`executing` | `unknown` → `not_executed`; rule 12).
 * The DB CHECK `external_tool_effects_resolution_status_check` keeps the last two to their status.
 */
export type SettleResolution = "reconciled" | "operator" | "reported_late" | "deadline_missed";

/** The settled statuses (a settled effect lifts its fence; see `refuseIfFenced` in run.service.ts). */
export type SettledStatus = "succeeded" | "not_executed";

/** Which (from, to) pairs each {@link SettleResolution} may write. */
const SETTLE_TRANSITIONS: Record<SettleResolution, { from: readonly EffectStatus[]; to: readonly SettledStatus[] }> = {
  reconciled: { from: ["unknown"], to: ["succeeded", "not_executed"] },
  operator: { from: ["unknown"], to: ["succeeded", "not_executed"] },
  reported_late: { from: ["unknown"], to: ["succeeded"] },
  deadline_missed: { from: ["executing", "unknown"], to: ["not_executed"] },
};

/**
 * Pure: the lifecycle columns of a settling transition of `current` to `to` by `resolution`
 * (see {@link SettleResolution}): the status, the resolution, no next lookup, and the operator
 * attention that survives it. A provider lookup or an operator settles every question, so the
 * attention is cleared; a Driver's evidence (`reported_late`, `deadline_missed`) settles only the
 * lookups, so only `lookup_bound_reached` is cleared and any other flag (a key conflict, a crash
 * loop, a contradiction) stays for the operator. The caller adds its own columns (result, receipts,
 * lease) and writes them with a compare-and-set on status and version.
 * @throws Error when the transition is not allowed (a caller's bug: every caller decides first,
 *   e.g. with {@link decideDeadlineMissed} or {@link decideLateEvidence}, or checks `unknown`).
 */
export function settleTransition(
  current: { status: EffectStatus; operatorAttention: OperatorAttentionReason | null },
  to: SettledStatus,
  resolution: SettleResolution,
): { status: SettledStatus; resolution: SettleResolution; nextLookupAtMs: null; operatorAttention: OperatorAttentionReason | null } {
  const allowed = SETTLE_TRANSITIONS[resolution];
  if (!allowed.from.includes(current.status) || !allowed.to.includes(to)) {
    throw new Error(`effect lifecycle: ${current.status} -> ${to} by ${resolution} is not a transition of the machine`);
  }
  const byEvidence = resolution === "reported_late" || resolution === "deadline_missed";
  const operatorAttention = byEvidence && current.operatorAttention !== "lookup_bound_reached" ? current.operatorAttention : null;
  return { status: to, resolution, nextLookupAtMs: null, operatorAttention };
}

/**
 * Decides a Driver's report that attempt `attempt` became the provider's MCP task `taskId`
 * (docs/DESIGN.md §4 "Tasks"). The task id is a set-once handle, not a status change:
 * - an older attempt, or an effect that is neither `executing` nor `unknown` without a stored id, is
 *   `rejected` (nothing changes);
 * - the same id already stored is a `duplicate` (a retried report);
 * - another id already stored is a `conflict`: the handle never changes (the caller refuses it 409);
 * - otherwise `applied`: the id is stored, whether the effect is still `executing` or was fenced
 *   `unknown` meanwhile (the handle is as true after a fence, and it is what recovery asks about).
 */
export function decideTaskHandle(
  current: { status: EffectStatus; attemptCount: number; taskId: string | null },
  report: { attempt: number; taskId: string },
): { outcome: "applied" | "duplicate" | "rejected" | "conflict"; reason?: string } {
  if (report.attempt !== current.attemptCount) {
    return { outcome: "rejected", reason: `attempt ${report.attempt} is not the current attempt ${current.attemptCount}` };
  }
  if (current.taskId !== null) {
    return current.taskId === report.taskId
      ? { outcome: "duplicate" }
      : { outcome: "conflict", reason: `the effect already holds another task id; a task id never changes` };
  }
  if (current.status === "executing" || current.status === "unknown") return { outcome: "applied" };
  return { outcome: "rejected", reason: `effect is ${current.status}` };
}
