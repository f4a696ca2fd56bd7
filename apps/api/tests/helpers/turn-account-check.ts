/**
 * The turn's account checked against the ledger (docs/DESIGN.md §3 rules 14 and 16), shared by the
 * crash-point matrix and the ledger model: every failed run's error lists every effect of its turn
 * with the status the ledger gives it (or a later status the lifecycle allows: an `unknown` one settled
 * since, a `succeeded` one compensated since), counts them all, and is retryable only when no effect of
 * the turn is succeeded, unknown or compensated — judged here from the rows, independently of the builder.
 */

/** A failed run as read from the store: its id, when it was last updated (its end, ms) and its error JSON. */
export interface FailedRunFacts {
  id: string;
  updatedAtMs: number;
  errorJson: string | null;
}

/** An effect as read from the store, with its command's status and error JSON. */
export interface EffectFacts {
  id: string;
  runId: string;
  status: string;
  toolCallId: string;
  createdAtMs: number;
  compensatesEffectId: string | null;
  commandStatus: string;
  commandErrorJson: string | null;
}

const WRITTEN = new Set(["succeeded", "unknown", "compensated"]);
/** account status → the statuses the effect may have now (it may have moved on since the run ended). */
const MAY_BECOME: Record<string, string[]> = {
  unknown: ["unknown", "succeeded", "not_executed", "compensated"],
  succeeded: ["succeeded", "compensated"],
};

/** The status the ledger gives an effect now, derived from the rows alone. */
function statusNow(e: EffectFacts, all: readonly EffectFacts[]): string {
  if (e.status === "executing" || e.status === "unknown") return "unknown";
  if (e.status === "succeeded")
    return all.some((c) => c.compensatesEffectId === e.id && c.status === "succeeded") ? "compensated" : "succeeded";
  if (e.status === "not_executed") return "not_executed";
  const code = e.commandErrorJson ? (JSON.parse(e.commandErrorJson) as { code?: string }).code : undefined;
  return e.commandStatus === "failed" && code && code !== "driver.command_driver_terminal" ? "failed" : "never_sent";
}

/** Violations (empty: a pass) of the turn's account of every run in `runs` against `effects` (all effects of the store, or at least theirs). */
export function checkTurnAccounts(runs: readonly FailedRunFacts[], effects: readonly EffectFacts[]): string[] {
  const v: string[] = [];
  for (const run of runs) {
    const err = run.errorJson
      ? (JSON.parse(run.errorJson) as {
          code?: string;
          retryable?: boolean;
          details?: {
            account?: { total?: number; omitted?: number; toolCalls?: Array<{ effectId: string; status: string; toolCallId: string }> };
          };
        })
      : null;
    const account = err?.details?.account;
    // effects queued after the run ended (an operator's compensation) are not of the interrupted turn
    const turn = effects.filter((e) => e.runId === run.id && e.createdAtMs <= run.updatedAtMs);
    if (!account || !Array.isArray(account.toolCalls)) {
      v.push(`run ${run.id} failed ${err?.code} without the turn's account (rule 16)`);
      continue;
    }
    if (account.total !== turn.length)
      v.push(`run ${run.id}: the account counts ${account.total} tool calls, the ledger holds ${turn.length} (rule 16)`);
    const listed = new Map(account.toolCalls.map((c) => [c.effectId, c]));
    const missing = turn.filter((e) => !listed.has(e.id));
    if (missing.length > (account.omitted ?? 0))
      v.push(`run ${run.id}: effects ${missing.map((e) => e.id).join(", ")} missing from the account (rule 16)`);
    let written = false;
    for (const e of turn) {
      const now = statusNow(e, effects);
      const said = listed.get(e.id);
      if (WRITTEN.has(now)) written = true;
      if (!said) continue;
      if (WRITTEN.has(said.status)) written = true;
      if (said.toolCallId !== e.toolCallId)
        v.push(`run ${run.id}: effect ${e.id} listed as tool call ${said.toolCallId}, ledger ${e.toolCallId}`);
      if (said.status !== now && !(MAY_BECOME[said.status] ?? []).includes(now))
        v.push(`run ${run.id}: effect ${e.id} listed ${said.status}, the ledger says ${now} (rule 16)`);
    }
    if (err?.retryable && written)
      v.push(`run ${run.id} failed retryable (${err.code}) while a write of its turn is succeeded/unknown/compensated (rule 16)`);
    const saidUnknown = account.toolCalls.some((c) => c.status === "unknown");
    if (saidUnknown && err?.code !== "external_effect.unknown") v.push(`run ${run.id}: an unknown effect but code ${err?.code} (rule 14)`);
    if (!written && !err?.retryable) v.push(`run ${run.id}: nothing of the turn written but not retryable (${err?.code})`);
    if (!written && err?.code !== "runtime.turn_interrupted") v.push(`run ${run.id}: nothing written but code ${err?.code}`);
    if (written && !saidUnknown && err?.code !== "runtime.turn_interrupted_after_writes" && err?.code !== "external_effect.unknown")
      v.push(`run ${run.id}: a completed write but code ${err?.code} (rule 16)`);
  }
  return v;
}
