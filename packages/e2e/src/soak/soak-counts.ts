/**
 * Classification of the kill soak: per effect, the ledger (the API's SQLite file)
 * against the provider's ground truth (the fixture provider's SQLite file: its `issues`/`operations`
 * rows and its durable per-key `create` call counter).
 */

/** One effect as the ledger holds it (columns of `external_tool_effects`). */
export interface LedgerEffect {
  id: string;
  idempotencyKey: string;
  status: string;
  resolution: string | null;
  /** The stored `McpExecuteCommandResult` JSON (`outputText`), or null. */
  resultJson: string | null;
}

/** The provider's ground truth for one idempotency key. */
export interface ProviderTruth {
  /** Committed writes (issues) under the key: 0 or 1 (the provider dedupes on the key). */
  commits: number;
  /** `createIssue` calls that carried the key (first calls, replays, refusals). */
  createCalls: number;
  /** The output text of the committed tool result (text blocks joined by newlines), when committed. */
  outputText: string | null;
}

/**
 * Per-run counts. Every effect lands in exactly one of `exactlyOnce`, `notExecuted`,
 * `neverDispatched`, `unknown`, `stuck`, `lost`, `duplicated`, `phantom` (checked in that order:
 * the failure classes first); `reconciled` counts, across them, the effects whose resolution is
 * `reconciled` (a lookup by key settled them).
 * - `exactlyOnce`: the provider committed once (one create call) and the ledger says `succeeded`
 *   with that commit's output;
 * - `notExecuted`: the ledger says `not_executed` and the provider has no commit;
 * - `neverDispatched`: the ledger effect is still `intent` (its command ended before any claim,
 *   e.g. the Driver died first) and the provider never saw the key;
 * - `unknown`: still fenced `unknown` (allowed: waits for an operator);
 * - `stuck`: still `executing` after recovery (a failure: finalization repair must end it);
 * - `lost`: the provider committed but the ledger says `not_executed` (or `intent`), or a
 *   `succeeded` result differs from the provider's;
 * - `duplicated`: more than one commit, or more than one create call, for one key (the runtime sent
 *   the write again; the fixture provider dedupes, so a second CALL is the re-execution we forbid);
 * - `phantom`: the ledger says `succeeded` but the provider has no commit for the key.
 */
export interface SoakCounts {
  effects: number;
  exactlyOnce: number;
  reconciled: number;
  notExecuted: number;
  neverDispatched: number;
  unknown: number;
  stuck: number;
  lost: number;
  duplicated: number;
  phantom: number;
}

/** The class of one effect (see {@link SoakCounts}). */
export type SoakClass = "exactlyOnce" | "notExecuted" | "neverDispatched" | "unknown" | "stuck" | "lost" | "duplicated" | "phantom";

/** Classifies one effect against the provider's truth for its key. Pure. */
export function classifyEffect(e: LedgerEffect, p: ProviderTruth): SoakClass {
  if (p.commits > 1 || p.createCalls > 1) return "duplicated";
  const output = e.resultJson ? ((JSON.parse(e.resultJson) as { outputText?: string }).outputText ?? null) : null;
  if (e.status === "succeeded") {
    if (p.commits === 0) return "phantom";
    return output === p.outputText ? "exactlyOnce" : "lost";
  }
  if (e.status === "not_executed") return p.commits === 0 ? "notExecuted" : "lost";
  if (e.status === "intent") return p.commits === 0 && p.createCalls === 0 ? "neverDispatched" : "lost";
  if (e.status === "unknown") return "unknown";
  return "stuck";
}

/** Counts a run's effects. Pure. */
export function countSoak(effects: LedgerEffect[], truth: (key: string) => ProviderTruth): SoakCounts {
  const counts: SoakCounts = {
    effects: 0,
    exactlyOnce: 0,
    reconciled: 0,
    notExecuted: 0,
    neverDispatched: 0,
    unknown: 0,
    stuck: 0,
    lost: 0,
    duplicated: 0,
    phantom: 0,
  };
  for (const e of effects) {
    counts.effects += 1;
    counts[classifyEffect(e, truth(e.idempotencyKey))] += 1;
    if (e.resolution === "reconciled") counts.reconciled += 1;
  }
  return counts;
}

/** True when the run must fail: any lost, duplicated, phantom or stuck effect. */
export function soakFailed(c: SoakCounts): boolean {
  return c.lost + c.duplicated + c.phantom + c.stuck > 0;
}
