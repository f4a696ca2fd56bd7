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
import { CANARY_PAGE_SIZE, retentionCanaryRepository } from "../infrastructure/retention-canary.repository.js";
import { storedResultIsToolError } from "../../ledger/domain/stored-result.js";
import { toReconcilable } from "./reconciliation-admission.policy.js";
import { leaseOutlastsLookup } from "./reconciliation-lease-batch.service.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";

/** How many pages of candidates a canary search reads at most (tool errors skipped); then there is no canary (fail closed). */
const MAX_CANARY_PAGES = 8;

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
   * needs none (not a fence-less miss, or already refused by another check). The canary is asked only
   * while the effect's lease (`leaseExpiresAtMs`, ms since the epoch) still outlasts a whole lookup,
   * like the first lookup (see `lookUpAndCommit` in effect-reconciler.service.ts); otherwise it is `unverified` without an adapter call.
   * Never throws for adapter misbehaviour (a failed canary lookup is `unverified`); a database error
   * propagates.
   */
  async check(
    effect: EffectRow,
    answer: LookupAnswer,
    adapter: ReconciliationAdapter,
    logger: AdapterLogger,
    leaseExpiresAtMs: number,
  ): Promise<RetentionCanaryVerdict | undefined> {
    const reconcilable = toReconcilable(effect);
    if (answer.kind !== "answered" || !answerNeedsRetentionCanary(answer, reconcilable)) return undefined;
    const nowMs = this.ctx.clock.nowMs();
    const timeoutMs = this.settings.lookupTimeoutMs;
    const canary = await this.findCanary(effect, answer.declaration.retentionWindowMs, nowMs, timeoutMs);
    if (canary !== null && !leaseOutlastsLookup(this.ctx.clock.nowMs(), timeoutMs, leaseExpiresAtMs)) {
      const lapsed = {
        verdict: "unverified",
        canaryEffectId: canary.effectId,
        error: "the lease no longer outlasts a canary lookup",
      } as const;
      this.metrics.recordCanary(answer.declaration.id, lapsed.verdict);
      this.ctx.logger.info({ effectId: effect.id, adapterId: answer.declaration.id, ...lapsed }, "reconciliation.retention_canary");
      return lapsed;
    }
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
   * The canary of `effect`: the oldest candidate ({@link retentionCanaryRepository.listCandidates}: a
   * success the provider itself showed, not undone) first dispatched inside `retentionCanaryWindow` whose
   * stored result is a plain tool result (a tool error may have committed nothing). Reads page after
   * page, at most {@link MAX_CANARY_PAGES}; null when none serves.
   */
  private async findCanary(
    effect: EffectRow,
    retentionWindowMs: number,
    nowMs: number,
    timeoutMs: number,
  ): Promise<ReconcilableEffect | null> {
    const window = retentionCanaryWindow({ firstDispatchedAtMs: effect.firstDispatchedAtMs }, retentionWindowMs, nowMs, timeoutMs);
    if (window === null) return null;
    let after: { firstDispatchedAtMs: number; id: string } | undefined;
    for (let page = 0; page < MAX_CANARY_PAGES; page++) {
      const rows = await this.ctx.store.read((tx) =>
        retentionCanaryRepository.listCandidates(tx, effect.serverId, effect.toolName, window.fromMs, window.toMs, after),
      );
      const row = rows.find((r) => r.id !== effect.id && storedResultIsToolError(r.resultJson) === false);
      if (row) return toReconcilable(row);
      const last = rows.at(-1);
      if (rows.length < CANARY_PAGE_SIZE || last?.firstDispatchedAtMs == null) return null;
      after = { firstDispatchedAtMs: last.firstDispatchedAtMs, id: last.id };
    }
    return null;
  }
}
