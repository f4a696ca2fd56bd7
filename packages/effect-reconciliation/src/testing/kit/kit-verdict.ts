// The kit's verdict on one reconcile decision against what the provider really holds under the key.
import type { ReconcileDecision } from "../../host/reconcile-decision.contract.js";
import { equivalentToolResults } from "../../host/tool-result-equivalence.js";

/**
 * One decision to judge: the `decision` the reconcile step reached for (`tool`, `key`) and the
 * request `fingerprint`; `known`, the write the provider holds under the key (from the kit's own
 * writes or the provider's ground truth; undefined: none); `pending`, the provider still holds the
 * key's write in flight.
 */
export interface DecisionToJudge {
  decision: ReconcileDecision;
  tool: string;
  key: string;
  fingerprint: string;
  known: { toolName: string; fingerprint: string; result: unknown } | undefined;
  pending: boolean;
}

/**
 * The failure lines of a decision (empty: it is right): a confirmed success of no write, of another
 * tool's write, of another request (a missed `key_conflict`) or with another result; a confirmed
 * non-execution of a committed or pending write; an answer the runtime had to refuse; a
 * `key_conflict` on exactly the recorded request.
 */
export function wrongDecisionLines({ decision, tool, key, fingerprint, known, pending }: DecisionToJudge): string[] {
  const lines: string[] = [];
  const where = `(${tool}, key ${key})`;
  if (decision.decision === "confirmed_succeeded") {
    if (!known) lines.push(`decided confirmed_succeeded ${where}, but the provider holds no write under that key`);
    else if (known.toolName !== tool) lines.push(`decided confirmed_succeeded ${where}, but the key holds a write of ${known.toolName}`);
    else if (known.fingerprint !== fingerprint)
      lines.push(
        `decided confirmed_succeeded ${where}, but the provider recorded another request (fingerprint ${known.fingerprint.slice(0, 12)}…): a key_conflict was missed`,
      );
    else if (!equivalentToolResults(decision.result, known.result))
      lines.push(`decided confirmed_succeeded ${where} with a result that is not the one the provider returned`);
  } else if (decision.decision === "confirmed_not_executed") {
    if (known) lines.push(`decided confirmed_not_executed ${where}, but the write committed`);
    else if (pending) lines.push(`decided confirmed_not_executed ${where} while the provider still holds it pending`);
  } else if (decision.decision === "still_unknown" && decision.reasonSource === "runtime") {
    if (["invalid_adapter_output", "answer_mismatch", "adapter_error"].includes(decision.reasonCode)) {
      lines.push(
        `the runtime refused the adapter's answer ${where}: ${decision.reasonCode}${decision.error ? ` (${decision.error.slice(0, 160)})` : ""}`,
      );
    }
    if (decision.reasonCode === "key_conflict" && known && known.fingerprint === fingerprint)
      lines.push(`reported key_conflict ${where}, but the provider recorded exactly this request`);
  }
  return lines;
}

/** A decision in a failure line: its name, with the reason code of `still_unknown` and `ineligible`. */
export function describeDecision(d: ReconcileDecision): string {
  return d.decision === "still_unknown" || d.decision === "ineligible" ? `${d.decision} (${d.reasonCode})` : d.decision;
}
