// The retention canary step of a lookup: find a known-committed key and ask the same adapter about it.
import type { ReconciliationAdapter, AdapterLogger } from "@mosoo/effect-reconciliation";
import {
  answerNeedsRetentionCanary,
  askRetentionCanary,
  retentionCanaryWindow,
  type LookupAnswer,
  type ReconcilableEffect,
  type RetentionCanaryVerdict,
} from "@mosoo/effect-reconciliation/host";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import type { EffectRow } from "../../ledger/application/effect-rows.service.js";
import type { ReconciliationMetrics } from "../infrastructure/reconciliation.metrics.js";
import { retentionCanaryRepository } from "../infrastructure/retention-canary.repository.js";
import { toReconcilable } from "./reconciliation-admission.policy.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";

/**
 * The retention canary (docs/DESIGN.md §4 "Retention canary", §5): before a `confirmed_not_executed`
 * from an adapter without a key fence is judged for good, the same adapter is asked about the canary,
 * the oldest `succeeded` effect of the same server and tool whose first dispatch lies in the declared
 * retention window and no later than the effect's own. Reads the store, calls the adapter (through the
 * same sandboxed handle, with the same timeout and fail-closed checks) and writes NOTHING: the canary
 * effect is never settled, flagged or counted; its verdict only decides whether the miss may stand.
 */
export class RetentionCanary {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly settings: ReconciliationSettings,
    private readonly metrics: ReconciliationMetrics,
  ) {}

  /**
   * The canary verdict for `answer` about `effect` (the row as leased), or undefined when the answer
   * needs none (not a fence-less miss, or already refused by another check). Never throws for adapter
   * misbehaviour (a failed canary lookup is `unverified`); a database error propagates.
   */
  async check(
    effect: EffectRow,
    answer: LookupAnswer,
    adapter: ReconciliationAdapter,
    logger: AdapterLogger,
  ): Promise<RetentionCanaryVerdict | undefined> {
    const reconcilable = toReconcilable(effect);
    if (answer.kind !== "answered" || !answerNeedsRetentionCanary(answer, reconcilable)) return undefined;
    const nowMs = this.ctx.clock.nowMs();
    const timeoutMs = this.settings.lookupTimeoutMs;
    const canary = await this.findCanary(effect, answer.declaration.retentionWindowMs, nowMs, timeoutMs);
    const verdict = await askRetentionCanary({
      effect: reconcilable,
      declaration: answer.declaration,
      canary,
      binding: { serverId: effect.serverId, adapter },
      nowMs,
      timeoutMs,
      logger,
    });
    this.metrics.recordCanary(answer.declaration.id, canary === null ? "none" : verdict.verdict);
    const fields = {
      effectId: effect.id,
      adapterId: answer.declaration.id,
      canaryEffectId: verdict.canaryEffectId,
      verdict: verdict.verdict,
    };
    if (verdict.verdict === "contradicted")
      this.ctx.logger.warn({ ...fields, error: verdict.error }, "reconciliation.retention_contradicted");
    else this.ctx.logger.info(fields, "reconciliation.retention_canary");
    return verdict;
  }

  /**
   * The canary of `effect`: among the oldest `succeeded` effects of its server and tool first dispatched
   * inside `retentionCanaryWindow`, the first one whose success the provider itself reported or
   * confirmed (resolution `provider_result`, `reconciled` or `reported_late`; an operator's word is not
   * the provider's) with a result that is not a tool error (a tool error may have committed nothing).
   * Null when none of the candidates serves.
   */
  private async findCanary(
    effect: EffectRow,
    retentionWindowMs: number,
    nowMs: number,
    timeoutMs: number,
  ): Promise<ReconcilableEffect | null> {
    const window = retentionCanaryWindow({ firstDispatchedAtMs: effect.firstDispatchedAtMs }, retentionWindowMs, nowMs, timeoutMs);
    if (window === null) return null;
    const rows = await this.ctx.store.read((tx) =>
      retentionCanaryRepository.listCandidates(tx, effect.serverId, effect.toolName, window.fromMs, window.toMs),
    );
    const row = rows.find((r) => r.id !== effect.id && r.resolution !== "operator" && r.resolution !== null && !isToolError(r.resultJson));
    return row ? toReconcilable(row) : null;
  }
}

/** True when a stored result says `isError` (or cannot be read: then it serves as no canary either). */
function isToolError(resultJson: string | null): boolean {
  if (resultJson === null) return true;
  try {
    return (JSON.parse(resultJson) as { isError?: unknown }).isError === true;
  } catch {
    return true;
  }
}
