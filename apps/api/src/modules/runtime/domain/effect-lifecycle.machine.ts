import type { EffectStatus } from "@mosoo/contracts";

/**
 * What a claim on an effect does, by the effect's current status (DESIGN.md §3 rules 2–3):
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

/** True while an effect holds a fence: `executing` or `unknown` effects (and their rows) must never be deleted (DESIGN.md §3 rule 9). */
export function isFenceRetaining(status: EffectStatus): boolean {
  return status === "executing" || status === "unknown";
}
