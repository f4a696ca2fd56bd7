import PQueue from "p-queue";
import { writeTransaction } from "../../../platform/db/database.js";
import { BACKGROUND_BUSY_RETRY, isStoreBusy, retryWhenBusy } from "../../../platform/db/store-busy.js";
import { McpToolResultSchema, newUlid, toMcpExecuteCommandResult } from "@mosoo/contracts";
import { askAdapter, checkEligibility, judgeLookupAnswer, type LookupAnswer, type ReconcileDecision, type ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import type { RuntimeContext } from "../../runtime/application/runtime-context.js";
import { effectRepository, type EffectRow } from "../../runtime/infrastructure/effect.repository.js";
import { runRepository } from "../../runtime/infrastructure/run.repository.js";
import type { DbHandle } from "../../runtime/infrastructure/db-handle.js";
import { scheduleNextLookup } from "../domain/lookup-schedule.js";
import type { OperatorAttentionReason, ReconciliationTrigger } from "../domain/reconciliation.types.js";
import { reconciliationRepository } from "../infrastructure/reconciliation.repository.js";
import type { ReconciliationMetrics } from "../infrastructure/reconciliation-metrics.js";
import type { ReconciliationSettings } from "./reconciliation-settings.js";
import { recordInterruptedLookups } from "./interrupted-lookups.js";
import { noLookupReason } from "./binding-report.js";
import { DEFAULT_GROUP_COMMIT, OutcomeGroupCommit } from "./outcome-group-commit.js";

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

/** True when the lookup confirmed an outcome (`confirmed_succeeded` or `confirmed_not_executed`) and committed it. */
export function isConfirmed(result: ReconcileResult): boolean {
  return result.kind === "confirmed_succeeded" || result.kind === "confirmed_not_executed";
}

/**
 * An effect whose lease a reconciler holds: the row as read before the lease (`effect`), its bound
 * `adapter`, the lease `owner` token, the version the lease set (`leasedVersion`, the outcome's
 * compare-and-set), and when the lease was taken (`startedAtMs`, ms).
 */
export interface LeasedEffect {
  effect: EffectRow;
  adapter: ReconciliationAdapter;
  owner: string;
  leasedVersion: number;
  startedAtMs: number;
}

/**
 * Options of {@link EffectReconciler.reconcileMany}: the `trigger` recorded with each outcome,
 * `concurrency` (lookups at once), `settle` (runs in each outcome's transaction),
 * `onResult(result, effectId)` after each effect, `shouldStart()` (false: start no more lookups),
 * `onError(err, effectId)` (an effect's database error; without it the error rejects).
 */
export interface ReconcileManyOptions {
  trigger: ReconciliationTrigger;
  concurrency: number;
  settle?: SettleInTransaction;
  onResult: (result: ReconcileResult, effectId: string | undefined) => void | Promise<void>;
  shouldStart?: () => boolean;
  onError?: (err: unknown, effectId: string | undefined) => void;
}

/**
 * Called inside the outcome's transaction with the effect as committed: the place where a caller
 * (finalization repair) writes the command's terminal state, so that outcome, receipt, result,
 * record, command and run event commit together (docs/DESIGN.md §3 rule 6).
 */
export type SettleInTransaction = (tx: DbHandle, effect: EffectRow) => void;

/**
 * Reconciles `unknown` effects through their server's adapter (docs/DESIGN.md §3 rules 4–7, §5, §6).
 * It holds the effect's lease while the adapter is asked, then writes the validated outcome,
 * the receipt, the result, the reconciliation record and the run event in one transaction, as a
 * compare-and-set on (status, version, lease). A loser records `superseded` and changes nothing.
 */
export class EffectReconciler {
  /** Outcomes are committed in groups (issue 13, docs/DESIGN.md §3 rule 6): see {@link OutcomeGroupCommit}. */
  private readonly outcomes: OutcomeGroupCommit;

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly settings: ReconciliationSettings,
    private readonly metrics: ReconciliationMetrics,
  ) {
    this.outcomes = new OutcomeGroupCommit(ctx.db, settings.groupCommit ?? DEFAULT_GROUP_COMMIT);
  }

  /** Commits every outcome waiting for its group commit's window now (call before closing the store). */
  flushOutcomes(): void {
    this.outcomes.flush();
  }

  /** The adapter bound to the effect's server when reconciliation is on and the adapter declares the tool; else null. */
  adapterFor(effect: Pick<EffectRow, "serverId" | "toolName">): ReconciliationAdapter | null {
    if (!this.settings.enabled) return null;
    const adapter = this.settings.bindings.get(effect.serverId);
    if (!adapter || !adapter.declaration.tools.includes(effect.toolName)) return null;
    return adapter;
  }

  /**
   * Why effects of this server and tool get no lookup ("flag off", "no binding for server S",
   * "no lookup: tool X not declared by adapter Y"), or null when its adapter covers it or the effect is
   * already settled (`succeeded` / `not_executed`; see `noLookupReason`).
   */
  noLookupReason(effect: Pick<EffectRow, "serverId" | "toolName" | "status">): string | null {
    // a settled effect needs no lookup: saying why it "gets none" would contradict its lookup history
    if (effect.status === "succeeded" || effect.status === "not_executed") return null;
    return noLookupReason(this.settings, effect.serverId, effect.toolName);
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

  /** Why `effect` may not be looked up now for `trigger` (an `ineligible` result), or its adapter. */
  private admit(effect: EffectRow | undefined, trigger: ReconciliationTrigger): { adapter: ReconciliationAdapter; effect: EffectRow } | Extract<ReconcileResult, { kind: "ineligible" }> {
    if (!effect || effect.status !== "unknown") return { kind: "ineligible", reasonCode: "not_unknown", effect };
    const adapter = this.adapterFor(effect);
    if (!adapter) return { kind: "ineligible", reasonCode: this.settings.enabled ? "no_binding" : "flag_off", effect };
    const verdict = checkEligibility(toReconcilable(effect), adapter.declaration, effect.serverId);
    if (!verdict.eligible) return { kind: "ineligible", reasonCode: verdict.reasonCode, effect };
    const blocker = trigger === "operator" ? null : this.scheduleBlocker(effect, this.ctx.clock.nowMs());
    if (blocker) return { kind: "ineligible", reasonCode: blocker, effect };
    return { adapter, effect };
  }

  /**
   * One lookup of effect `effectId` for `trigger`, with the outcome committed as described on the
   * class. `settle` runs inside the outcome's transaction. Never throws for adapter misbehaviour
   * (the reconcile step turns it into `still_unknown`); a database error propagates.
   */
  async reconcile(effectId: string, trigger: ReconciliationTrigger, settle?: SettleInTransaction): Promise<ReconcileResult> {
    const admitted = this.admit(effectRepository.findById(this.ctx.db, effectId), trigger);
    if ("kind" in admitted) return admitted;
    const { adapter, effect } = admitted;
    const owner = newUlid();
    const startedAtMs = this.ctx.clock.nowMs();
    if (!reconciliationRepository.acquireLease(this.ctx.db, effect.id, effect.version, owner, startedAtMs, startedAtMs + this.settings.leaseMs)) {
      this.recordSuperseded(effect, adapterRefOf(adapter), trigger, startedAtMs, "lease_held");
      return { kind: "superseded", effect: effectRepository.findById(this.ctx.db, effect.id) };
    }
    return this.reconcileLeased({ effect, adapter, owner, leasedVersion: effect.version + 1, startedAtMs }, trigger, settle);
  }

  /**
   * Takes the leases of `effects` (rows as read by the caller) in ONE transaction, each a
   * compare-and-set on (status `unknown`, the row's `version`) as {@link reconcile} takes one.
   * Returns, per input in order, the {@link LeasedEffect} or why no lookup will be made: `ineligible`
   * (checked on the row, as {@link reconcile} does, and again on the current row when the row
   * changed since the caller read it) or `superseded` (another reconciler holds it: a `superseded`
   * record is written, as for a single lease). Only leases are
   * batched: every outcome still commits in its own transaction ({@link reconcileLeased}).
   */
  leaseBatch(effects: readonly EffectRow[], trigger: ReconciliationTrigger): Array<LeasedEffect | Exclude<ReconcileResult, { kind: "confirmed_succeeded" | "confirmed_not_executed" | "still_unknown" }>> {
    const startedAtMs = this.ctx.clock.nowMs();
    const lost: Array<{ effect: EffectRow; adapter: ReconciliationAdapter }> = [];
    const out = writeTransaction(this.ctx.db, (tx) =>
      effects.map((row) => {
        const admitted = this.admit(row, trigger);
        if ("kind" in admitted) return admitted;
        const { adapter, effect } = admitted;
        const owner = newUlid(startedAtMs);
        if (!reconciliationRepository.acquireLease(tx, effect.id, effect.version, owner, startedAtMs, startedAtMs + this.settings.leaseMs)) {
          // The row changed since the caller read it: if it may no longer be looked up (resolved,
          // rescheduled, flagged), say why, as reconcile would on a fresh read; else another reconciler holds it.
          const current = this.admit(effectRepository.findById(tx, effect.id), trigger);
          if ("kind" in current) return current;
          lost.push(admitted);
          return { kind: "superseded" as const, effect };
        }
        return { effect, adapter, owner, leasedVersion: effect.version + 1, startedAtMs } satisfies LeasedEffect;
      }),
    );
    for (const { effect, adapter } of lost) this.recordSuperseded(effect, adapterRefOf(adapter), trigger, startedAtMs, "lease_held");
    // a lost lease answers with the effect as it is now, as reconcile does
    return out.map((r) => ("kind" in r && r.kind === "superseded" ? { kind: "superseded" as const, effect: effectRepository.findById(this.ctx.db, r.effect.id) } : r));
  }

  /** Gives back leases taken by {@link leaseBatch} that will not be used, and their counted lookups (one transaction; nothing else changes). */
  releaseLeases(leased: readonly LeasedEffect[]): void {
    if (leased.length === 0) return;
    writeTransaction(this.ctx.db, (tx) => {
      for (const l of leased) reconciliationRepository.releaseLease(tx, l.effect.id, l.owner, true);
    });
  }

  /**
   * The lookup of an effect whose lease this reconciler holds (the lease took count of it before
   * the adapter runs), and the outcome's commit (one transaction, compare-and-set on the leased
   * version and owner; `settle` runs inside it). The adapter's answer is judged inside that
   * transaction against the effect as read there (docs/DESIGN.md §4): nothing the adapter was handed is
   * ever read back. A busy store is waited for asynchronously (`retryWhenBusy`, background policy)
   * before the commit gives up; if the commit throws, the lease is given back with its count (or
   * left to expire while the store is locked) and the error propagates.
   */
  async reconcileLeased(leased: LeasedEffect, trigger: ReconciliationTrigger, settle?: SettleInTransaction): Promise<ReconcileResult> {
    const { effect, adapter, owner, leasedVersion, startedAtMs } = leased;
    const adapterRef = adapterRefOf(adapter);
    const logger = this.ctx.logger.child({ effectId: effect.id, commandId: effect.commandId, driverInstanceId: effect.driverInstanceId, adapterId: adapterRef.id });
    const answer = await askAdapter({
      effect: toReconcilable(effect),
      binding: { serverId: effect.serverId, adapter },
      nowMs: this.ctx.clock.nowMs(),
      timeoutMs: this.settings.lookupTimeoutMs,
      logger,
    });
    try {
      // The adapter's answer is in memory: a store locked by another connection is waited for
      // asynchronously (the event loop stays free) rather than losing the answer to `store.busy`.
      return await retryWhenBusy(() => this.commit(effect, leasedVersion, owner, adapterRef, trigger, startedAtMs, answer, settle), BACKGROUND_BUSY_RETRY);
    } catch (err) {
      // The outcome's transaction rolled back (nothing of it was written): give the lease back, and
      // its count, so the effect is due again as before (a counted lookup with no schedule would
      // never be due to the sweep). If the store is still locked, the lease expires by itself and
      // the sweep looks the effect up again.
      try {
        reconciliationRepository.releaseLease(this.ctx.db, effect.id, owner, true);
      } catch (releaseErr) {
        if (!isStoreBusy(releaseErr)) throw releaseErr;
      }
      throw err;
    }
  }

  /**
   * Reconciles every effect `source` yields (rows; pulled lazily, so a caller can stream pages),
   * `opts.concurrency` lookups at a time (p-queue), as {@link reconcileLeased}: leases are taken in batches
   * ({@link leaseBatch}, a quarter of the concurrency per transaction) and each outcome commits in
   * its own transaction. `onResult` runs after each effect (its outcome already committed);
   * `shouldStart` returning false stops starting new lookups (leases taken but unused are released).
   * An error of one effect goes to `onError` (then the others continue), or, without `onError`,
   * rejects the returned promise.
   */
  async reconcileMany(source: Iterator<EffectRow>, opts: ReconcileManyOptions): Promise<void> {
    const batchSize = Math.max(1, Math.ceil(opts.concurrency / 4));
    const buffer: ReturnType<EffectReconciler["leaseBatch"]> = [];
    const shouldStart = opts.shouldStart ?? (() => true);
    const leaseBatch = (rows: EffectRow[]) => this.leaseBatch(rows, opts.trigger);
    // Pulled lazily, one item whenever a lookup slot is free: the next page of rows is read
    // and leased (one transaction per batch) only when the buffered leases are used up.
    function* leased(): Generator<(typeof buffer)[number]> {
      while (shouldStart()) {
        if (buffer.length === 0) {
          const rows: EffectRow[] = [];
          for (let next = source.next(); !next.done; next = source.next()) {
            rows.push(next.value);
            if (rows.length >= batchSize) break;
          }
          if (rows.length === 0) return;
          buffer.push(...leaseBatch(rows));
        }
        const item = buffer.shift();
        if (item) yield item;
      }
    }
    // Backpressure: the next item is pulled only once the queue has started the previous one, so at
    // most `concurrency` lookups run and one waits; rows stream through in pages, never all at once.
    const queue = new PQueue({ concurrency: Math.max(1, opts.concurrency) });
    let failure: { error: unknown } | undefined;
    const run = async (item: (typeof buffer)[number]): Promise<void> => {
      const isLeased = "owner" in item;
      const effectId = isLeased ? item.effect.id : item.effect?.id;
      try {
        const result = isLeased ? await this.reconcileLeased(item, opts.trigger, opts.settle) : item;
        await opts.onResult(result, effectId);
      } catch (err) {
        if (!opts.onError) throw err;
        opts.onError(err, effectId);
      }
    };
    try {
      for (const item of leased()) {
        queue.add(() => run(item)).catch((error: unknown) => {
          failure ??= { error };
        });
        await queue.onSizeLessThan(1);
        if (failure) break;
      }
      await queue.onIdle();
    } finally {
      this.releaseLeases(buffer.splice(0).filter((b): b is LeasedEffect => "owner" in b));
    }
    if (failure) throw failure.error;
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

  /**
   * Releases leases left by a dead API process (call once at startup; one API process per store) and
   * records each such lookup as `lookup_interrupted` (see {@link recordInterruptedLookups}).
   * Returns how many leases were released.
   */
  releaseStaleLeases(): number {
    const n = recordInterruptedLookups(this.ctx, this.settings, this.metrics);
    if (n > 0) this.ctx.logger.warn({ released: n }, "reconciliation.stale_leases_released");
    return n;
  }

  private async commit(
    effect: EffectRow,
    leasedVersion: number,
    owner: string,
    adapterRef: { id: string; version: string },
    trigger: ReconciliationTrigger,
    startedAtMs: number,
    answer: LookupAnswer,
    settle: SettleInTransaction | undefined,
  ): Promise<ReconcileResult> {
    const now = this.ctx.clock.nowMs();
    if (answer.kind === "ineligible") {
      // The reconcile step made no lookup (e.g. invalid input): release the lease and its count.
      reconciliationRepository.releaseLease(this.ctx.db, effect.id, owner, true);
      return { kind: "ineligible", reasonCode: answer.decision.reasonCode, effect: effectRepository.findById(this.ctx.db, effect.id) };
    }
    let decision: Exclude<ReconcileDecision, { decision: "ineligible" }> | undefined;
    // Group commit: this outcome's writes run whole inside a batch's transaction (or alone, if the
    // batch failed); the promise settles after that commit, so nothing below runs before it.
    const committed = await this.outcomes.submit((tx) => {
      decision = undefined;
      // Judged here, against the effect as stored now, inside the transaction that persists the
      // outcome (docs/DESIGN.md §4): the adapter never held this row, only a copy of its lookup request.
      const current = effectRepository.findById(tx, effect.id);
      if (!current || current.status !== "unknown" || current.version !== leasedVersion || current.leaseOwner !== owner) return null;
      decision = judgedAgainst(answer, current);
      const outcome = decision.decision;
      const reasonCode = decision.decision === "still_unknown" ? decision.reasonCode : null;
      const set = this.outcomeColumns(current, decision, now);
      const after = reconciliationRepository.commitOutcome(tx, effect.id, leasedVersion, owner, set);
      if (!after) return null;
      reconciliationRepository.insertRecord(tx, {
        id: newUlid(now),
        effectId: effect.id,
        adapterId: adapterRef.id,
        adapterVersion: adapterRef.version,
        ...this.provenanceColumns(effect.serverId),
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
    if (!committed || !decision) {
      reconciliationRepository.releaseLease(this.ctx.db, effect.id, owner);
      // Evidence only (never written to the effect): the answer judged against the row as leased.
      this.recordSuperseded(effect, adapterRef, trigger, startedAtMs, "cas_lost", judgedAgainst(answer, effect));
      return { kind: "superseded", effect: effectRepository.findById(this.ctx.db, effect.id) };
    }
    const outcome = (decision as Exclude<ReconcileDecision, { decision: "ineligible" }>).decision;
    const reasonCode = outcome === "still_unknown" ? (decision as Extract<ReconcileDecision, { decision: "still_unknown" }>).reasonCode : null;
    this.metrics.record(adapterRef.id, outcome, reasonCode);
    const fields = {
      effectId: effect.id,
      commandId: effect.commandId,
      driverInstanceId: effect.driverInstanceId,
      adapterId: adapterRef.id,
      adapterVersion: adapterRef.version,
      ...this.provenanceColumns(effect.serverId),
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

  /** The bound adapter's package, package version and declaration hash (docs/DESIGN.md §4), recorded with every lookup. */
  private provenanceColumns(serverId: string) {
    const p = this.settings.boundAdapters?.get(serverId)?.provenance;
    return { adapterPackage: p?.packageName ?? null, adapterPackageVersion: p?.packageVersion ?? null, adapterDeclarationHash: p?.declarationHash ?? null };
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
        // `effect` is the row read in the outcome's transaction: its lookup_count already counts this lookup.
        const crashedAtBound = decision.reasonSource === "runtime" && decision.reasonCode === "adapter_crashed" && effect.lookupCount >= this.settings.maxLookups;
        const attention: OperatorAttentionReason | null =
          decision.reasonSource === "runtime" && (decision.reasonCode === "key_conflict" || decision.reasonCode === "retention_expired")
            ? decision.reasonCode
            : crashedAtBound
              ? "adapter_crashed"
              : null;
        const schedule = scheduleNextLookup({
          lookupCount: effect.lookupCount,
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

  /**
   * Records a reconciler that changed nothing (`superseded`). When it lost the compare-and-set after
   * a lookup (`cas_lost`), the lookup's answer is kept as evidence in the record (`error` names it,
   * with its receipt and result). An answer that contradicts how the effect was settled meanwhile
   * (the provider confirms the write after it was settled `not_executed`, e.g. by an operator, or
   * confirms non-execution after it was settled `succeeded`) raises operator attention
   * `contradicted_by_provider` on the settled effect, in the record's transaction (a compare-and-set
   * on status and version; the status and outcome are never changed: the operator decides), and is
   * logged at warn as `reconciliation.contradicts_settled_effect`.
   */
  private recordSuperseded(
    effect: EffectRow,
    adapterRef: { id: string; version: string },
    trigger: ReconciliationTrigger,
    startedAtMs: number,
    reasonCode: string,
    lost?: ReconcileDecision,
  ): void {
    const now = this.ctx.clock.nowMs();
    const evidence = lost && lost.decision !== "ineligible" ? lost : undefined;
    const contradicted = writeTransaction(this.ctx.db, (tx) => {
      reconciliationRepository.insertRecord(tx, {
        id: newUlid(now),
        effectId: effect.id,
        adapterId: adapterRef.id,
        adapterVersion: adapterRef.version,
        ...this.provenanceColumns(effect.serverId),
        trigger,
        outcome: "superseded",
        reasonCode,
        receiptJson: evidence && "receipt" in evidence && evidence.receipt ? JSON.stringify(evidence.receipt) : null,
        resultJson: evidence?.decision === "confirmed_succeeded" ? JSON.stringify(evidence.result) : null,
        error: evidence ? `the lost lookup answered ${evidence.decision}${evidence.decision === "still_unknown" ? ` (${evidence.reasonCode})` : ""}` : null,
        startedAtMs,
        finishedAtMs: now,
      });
      const settled = evidence ? effectRepository.findById(tx, effect.id) : undefined;
      if (!settled || !contradictsSettled(evidence?.decision, settled.status)) return undefined;
      if (settled.operatorAttention !== "contradicted_by_provider") {
        effectRepository.updateIfCurrent(tx, settled, { operatorAttention: "contradicted_by_provider", updatedAtMs: now });
      }
      return settled;
    });
    this.metrics.recordSuperseded(adapterRef.id, reasonCode);
    this.ctx.logger.info({ effectId: effect.id, commandId: effect.commandId, driverInstanceId: effect.driverInstanceId, adapterId: adapterRef.id, trigger, reasonCode }, "reconciliation.superseded");
    if (contradicted) {
      this.ctx.logger.warn(
        { effectId: effect.id, effectStatus: contradicted.status, resolution: contradicted.resolution, lookup: evidence?.decision, adapterId: adapterRef.id, operatorAttention: "contradicted_by_provider" },
        "reconciliation.contradicts_settled_effect",
      );
    }
  }
}

/** True when a lookup's confirmed answer contradicts a settled status (`succeeded` vs `confirmed_not_executed`, or the reverse). */
function contradictsSettled(decision: ReconcileDecision["decision"] | undefined, status: EffectRow["status"]): boolean {
  return (decision === "confirmed_succeeded" && status === "not_executed") || (decision === "confirmed_not_executed" && status === "succeeded");
}

/** The adapter's id and version, recorded with every outcome. */
function adapterRefOf(adapter: ReconciliationAdapter): { id: string; version: string } {
  return { id: adapter.declaration.id, version: adapter.declaration.version };
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
    sendWithinMs: effect.sendWithinMs,
  };
}

/**
 * The answer judged against `row` (a row read from the store). An effect that is no longer eligible
 * for the answer's binding cannot be settled by it: `still_unknown` (`answer_mismatch`).
 */
function judgedAgainst(answer: Exclude<LookupAnswer, { kind: "ineligible" }>, row: EffectRow): Exclude<ReconcileDecision, { decision: "ineligible" }> {
  const judged = judgeLookupAnswer(answer, toReconcilable(row));
  if (judged.decision !== "ineligible") return judged;
  const adapter = answer.kind === "answered" ? { id: answer.declaration.id, version: answer.declaration.version } : answer.decision.adapter;
  return { decision: "still_unknown", reasonSource: "runtime", reasonCode: "answer_mismatch", adapter, operatorAttention: false, error: `the stored effect is no longer eligible (${judged.reasonCode})` };
}
