import { writeTransaction } from "../../../platform/db/database.js";
import { McpToolResultSchema, newUlid, toMcpExecuteCommandResult } from "@mosoo/contracts";
import { checkEligibility, reconcileEffect, type ReconcileDecision, type ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import type { RuntimeContext } from "../../runtime/application/runtime-context.js";
import { effectRepository, type EffectRow } from "../../runtime/infrastructure/effect.repository.js";
import { runRepository } from "../../runtime/infrastructure/run.repository.js";
import type { DbHandle } from "../../runtime/infrastructure/db-handle.js";
import { scheduleNextLookup } from "../domain/lookup-schedule.js";
import type { OperatorAttentionReason, ReconciliationTrigger } from "../domain/reconciliation.types.js";
import { reconciliationRepository } from "../infrastructure/reconciliation.repository.js";
import type { ReconciliationMetrics } from "../infrastructure/reconciliation-metrics.js";
import type { ReconciliationSettings } from "./reconciliation-settings.js";

/**
 * What one call of {@link EffectReconciler.reconcile} did:
 * - `ineligible`: no lookup was made (flag off, no binding, undeclared tool, not `unknown`, bound reached…);
 * - `superseded`: another reconciler held the lease or won the compare-and-set; nothing changed but a `superseded` record;
 * - `confirmed_succeeded` / `confirmed_not_executed` / `still_unknown`: the outcome committed.
 * `effect` is the row after the call.
 */
export type ReconcileResult =
  | { kind: "ineligible"; reasonCode: string; effect: EffectRow | undefined }
  | { kind: "superseded"; effect: EffectRow | undefined }
  | { kind: "confirmed_succeeded" | "confirmed_not_executed" | "still_unknown"; reasonCode: string | null; effect: EffectRow };

/**
 * Called inside the outcome's transaction with the effect as committed: the place where a caller
 * (finalization repair) writes the command's terminal state, so that outcome, receipt, result,
 * record, command and run event commit together (DESIGN.md §3 rule 6).
 */
export type SettleInTransaction = (tx: DbHandle, effect: EffectRow) => void;

/**
 * Reconciles `unknown` effects through their server's adapter (DESIGN.md §3 rules 4–7, §5, §6).
 * It holds the effect's lease while the adapter is asked, then writes the validated outcome,
 * the receipt, the result, the reconciliation record and the run event in one transaction, as a
 * compare-and-set on (status, version, lease). A loser records `superseded` and changes nothing.
 */
export class EffectReconciler {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly settings: ReconciliationSettings,
    private readonly metrics: ReconciliationMetrics,
  ) {}

  /** The adapter bound to the effect's server when reconciliation is on and the adapter declares the tool; else null. */
  adapterFor(effect: Pick<EffectRow, "serverId" | "toolName">): ReconciliationAdapter | null {
    if (!this.settings.enabled) return null;
    const adapter = this.settings.bindings.get(effect.serverId);
    if (!adapter || !adapter.declaration.tools.includes(effect.toolName)) return null;
    return adapter;
  }

  /** True when an automatic lookup may run now: `unknown`, bound, and not held back by {@link scheduleBlocker}. */
  isDue(effect: EffectRow, nowMs: number): boolean {
    return effect.status === "unknown" && this.adapterFor(effect) !== null && this.scheduleBlocker(effect, nowMs) === null;
  }

  /**
   * Why an automatic trigger must not look the effect up now, or null: it waits for an operator
   * (`operator_attention`; an automatic lookup never clears that flag), it reached the lookup bound
   * (`lookup_bound_reached`), or its next lookup is not due yet (`not_due`).
   */
  private scheduleBlocker(effect: EffectRow, nowMs: number): "operator_attention" | "lookup_bound_reached" | "not_due" | null {
    if (effect.operatorAttention !== null) return "operator_attention";
    if (effect.lookupCount >= this.settings.maxLookups) return "lookup_bound_reached";
    if (effect.nextLookupAtMs !== null && effect.nextLookupAtMs > nowMs) return "not_due";
    return null;
  }

  /**
   * One lookup of effect `effectId` for `trigger`, with the outcome committed as described on the
   * class. `settle` runs inside the outcome's transaction. Never throws for adapter misbehaviour
   * (the reconcile step turns it into `still_unknown`); a database error propagates.
   */
  async reconcile(effectId: string, trigger: ReconciliationTrigger, settle?: SettleInTransaction): Promise<ReconcileResult> {
    const effect = effectRepository.findById(this.ctx.db, effectId);
    if (!effect || effect.status !== "unknown") return { kind: "ineligible", reasonCode: "not_unknown", effect };
    const adapter = this.adapterFor(effect);
    if (!adapter) return { kind: "ineligible", reasonCode: this.settings.enabled ? "no_binding" : "flag_off", effect };
    const verdict = checkEligibility(toReconcilable(effect), adapter.declaration, effect.serverId);
    if (!verdict.eligible) return { kind: "ineligible", reasonCode: verdict.reasonCode, effect };
    const blocker = trigger === "operator" ? null : this.scheduleBlocker(effect, this.ctx.clock.nowMs());
    if (blocker) return { kind: "ineligible", reasonCode: blocker, effect };

    const adapterRef = { id: adapter.declaration.id, version: adapter.declaration.version };
    const owner = newUlid();
    const startedAtMs = this.ctx.clock.nowMs();
    if (!reconciliationRepository.acquireLease(this.ctx.db, effect.id, effect.version, owner, startedAtMs, startedAtMs + this.settings.leaseMs)) {
      this.recordSuperseded(effect, adapterRef, trigger, startedAtMs, "lease_held");
      return { kind: "superseded", effect: effectRepository.findById(this.ctx.db, effect.id) };
    }
    const leasedVersion = effect.version + 1;
    const logger = this.ctx.logger.child({ effectId: effect.id, commandId: effect.commandId, driverInstanceId: effect.driverInstanceId, adapterId: adapterRef.id });
    const decision = await reconcileEffect({
      effect: toReconcilable(effect),
      binding: { serverId: effect.serverId, adapter },
      nowMs: this.ctx.clock.nowMs(),
      timeoutMs: this.settings.lookupTimeoutMs,
      logger,
    });
    try {
      return this.commit(effect, leasedVersion, owner, adapterRef, trigger, startedAtMs, decision, settle);
    } catch (err) {
      // The outcome's transaction rolled back (nothing of it was written): give the lease back.
      reconciliationRepository.releaseLease(this.ctx.db, effect.id, owner);
      throw err;
    }
  }

  /**
   * Waits until no live lease is held on the effect (another reconciler's outcome has committed or
   * its lease expired), polling every 25 ms, at most `maxWaitMs` (ms). Returns the effect as it is then.
   */
  async awaitLease(effectId: string, maxWaitMs: number): Promise<EffectRow | undefined> {
    const deadline = Date.now() + maxWaitMs;
    for (;;) {
      const effect = effectRepository.findById(this.ctx.db, effectId);
      const held = effect?.leaseOwner != null && (effect.leaseExpiresAtMs ?? 0) > this.ctx.clock.nowMs();
      if (!held || Date.now() >= deadline) return effect;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Releases leases left by a dead API process (call once at startup; one API process per store). */
  releaseStaleLeases(): number {
    const n = reconciliationRepository.releaseAllLeases(this.ctx.db);
    if (n > 0) this.ctx.logger.warn({ released: n }, "reconciliation.stale_leases_released");
    return n;
  }

  private commit(
    effect: EffectRow,
    leasedVersion: number,
    owner: string,
    adapterRef: { id: string; version: string },
    trigger: ReconciliationTrigger,
    startedAtMs: number,
    decision: ReconcileDecision,
    settle: SettleInTransaction | undefined,
  ): ReconcileResult {
    const now = this.ctx.clock.nowMs();
    if (decision.decision === "ineligible") {
      // The reconcile step made no lookup (e.g. invalid input): release the lease, count nothing.
      reconciliationRepository.releaseLease(this.ctx.db, effect.id, owner);
      return { kind: "ineligible", reasonCode: decision.reasonCode, effect: effectRepository.findById(this.ctx.db, effect.id) };
    }
    const outcome = decision.decision;
    const reasonCode = decision.decision === "still_unknown" ? decision.reasonCode : null;
    const committed = writeTransaction(this.ctx.db, (tx) => {
      const set = this.outcomeColumns(effect, decision, now);
      if (!reconciliationRepository.commitOutcome(tx, effect.id, leasedVersion, owner, set)) return null;
      const after = effectRepository.findById(tx, effect.id)!;
      reconciliationRepository.insertRecord(tx, {
        id: newUlid(now),
        effectId: effect.id,
        adapterId: adapterRef.id,
        adapterVersion: adapterRef.version,
        trigger,
        outcome,
        reasonCode,
        receiptJson: "receipt" in decision && decision.receipt ? JSON.stringify(decision.receipt) : null,
        resultJson: decision.decision === "confirmed_succeeded" ? JSON.stringify(decision.result) : null,
        error: decision.decision === "still_unknown" ? (decision.error ?? null) : null,
        startedAtMs,
        finishedAtMs: now,
        nextLookupAtMs: after.nextLookupAtMs,
      });
      runRepository.appendEvent(
        tx,
        effect.runId,
        "effect.reconciled",
        { effectId: effect.id, commandId: effect.commandId, outcome, reasonCode, trigger, adapter: adapterRef, effectStatus: after.status },
        now,
      );
      settle?.(tx, after);
      return after;
    });
    if (!committed) {
      reconciliationRepository.releaseLease(this.ctx.db, effect.id, owner);
      this.recordSuperseded(effect, adapterRef, trigger, startedAtMs, "cas_lost");
      return { kind: "superseded", effect: effectRepository.findById(this.ctx.db, effect.id) };
    }
    this.metrics.record(adapterRef.id, outcome, reasonCode);
    const fields = {
      effectId: effect.id,
      commandId: effect.commandId,
      driverInstanceId: effect.driverInstanceId,
      adapterId: adapterRef.id,
      adapterVersion: adapterRef.version,
      trigger,
      outcome,
      reasonCode,
      effectStatus: committed.status,
      nextLookupAtMs: committed.nextLookupAtMs,
      operatorAttention: committed.operatorAttention,
      durationMs: now - startedAtMs,
    };
    if (outcome === "still_unknown") this.ctx.logger.warn(fields, "reconciliation.decision");
    else this.ctx.logger.info(fields, "reconciliation.decision");
    return { kind: outcome, reasonCode, effect: committed };
  }

  private outcomeColumns(effect: EffectRow, decision: Exclude<ReconcileDecision, { decision: "ineligible" }>, now: number) {
    switch (decision.decision) {
      case "confirmed_succeeded": {
        const result = toMcpExecuteCommandResult(McpToolResultSchema.parse(decision.result), effect);
        return {
          status: "succeeded" as const,
          resolution: "reconciled" as const,
          resultJson: JSON.stringify(result),
          reconciliationReceiptJson: JSON.stringify(decision.receipt),
          nextLookupAtMs: null,
          operatorAttention: null,
          updatedAtMs: now,
        };
      }
      case "confirmed_not_executed":
        return {
          status: "not_executed" as const,
          resolution: "reconciled" as const,
          reconciliationReceiptJson: JSON.stringify(decision.receipt),
          nextLookupAtMs: null,
          operatorAttention: null,
          updatedAtMs: now,
        };
      case "still_unknown": {
        const attention: OperatorAttentionReason | null =
          decision.reasonSource === "runtime" && (decision.reasonCode === "key_conflict" || decision.reasonCode === "retention_expired") ? decision.reasonCode : null;
        const schedule = scheduleNextLookup({
          lookupCount: effect.lookupCount + 1,
          maxLookups: this.settings.maxLookups,
          nowMs: now,
          backoff: this.settings.backoff,
          notBeforeMs: decision.nextLookupNotBeforeMs,
          attention,
        });
        return { ...schedule, updatedAtMs: now };
      }
    }
  }

  private recordSuperseded(effect: EffectRow, adapterRef: { id: string; version: string }, trigger: ReconciliationTrigger, startedAtMs: number, reasonCode: string): void {
    const now = this.ctx.clock.nowMs();
    reconciliationRepository.insertRecord(this.ctx.db, {
      id: newUlid(now),
      effectId: effect.id,
      adapterId: adapterRef.id,
      adapterVersion: adapterRef.version,
      trigger,
      outcome: "superseded",
      reasonCode,
      startedAtMs,
      finishedAtMs: now,
    });
    this.metrics.recordSuperseded(adapterRef.id, reasonCode);
    this.ctx.logger.info({ effectId: effect.id, commandId: effect.commandId, driverInstanceId: effect.driverInstanceId, adapterId: adapterRef.id, trigger, reasonCode }, "reconciliation.superseded");
  }
}

/** The effect as the reconcile step reads it. */
function toReconcilable(effect: EffectRow) {
  return {
    effectId: effect.id,
    serverId: effect.serverId,
    toolName: effect.toolName,
    idempotencyKey: effect.idempotencyKey,
    requestFingerprint: effect.requestFingerprint,
    firstDispatchedAtMs: effect.firstDispatchedAtMs,
    lastDispatchedAtMs: effect.lastDispatchedAtMs,
  };
}
