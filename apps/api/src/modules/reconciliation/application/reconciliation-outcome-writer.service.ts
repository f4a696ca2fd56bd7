// Commits one lookup's outcome (effect, receipt, result, record, run event) in one transaction, or records it as superseded.
import {
  McpToolResultSchema,
  newUlid,
  toMcpExecuteCommandResult,
  type OperatorAttentionReason,
  type ReconciliationTrigger,
} from "@mosoo/contracts";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import {
  judgeLookupAnswer,
  type LookupAnswer,
  type ReconcileDecision,
  type RetentionCanaryVerdict,
} from "@mosoo/effect-reconciliation/host";
import { DEFAULT_GROUP_COMMIT, OutcomeGroupCommit } from "./outcome-group-commit.service.js";
import type { CommandSettlement, ReconcileResult } from "../../ledger/application/effect-reconciliation.port.js";
import { settleCommandFromEffect } from "../../ledger/application/command-settlement.service.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import { settleTransition } from "../../ledger/domain/effect-lifecycle.machine.js";
import { reconciliationRepository } from "../infrastructure/effect-reconciliation.repository.js";
import { pgOutcomeWriteRepository } from "../infrastructure/pg-outcome-write.repository.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import { runTables } from "../../ledger/application/owned-tables.port.js";
import { scheduleNextLookup } from "../domain/lookup-schedule.js";
import type { ReconciliationMetrics } from "../infrastructure/reconciliation.metrics.js";
import { toReconcilable } from "./reconciliation-admission.policy.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";

/**
 * One lookup's answer to commit ({@link ReconciliationOutcomeWriter.commit}): the `effect` as read
 * before its lease, the lease (`leasedVersion`, `leasedLookupCount` as the lease statement returned it, `owner`), the adapter (`adapterRef`: id and version), the `trigger`,
 * when the lookup started (`startedAtMs`, ms since the epoch), the adapter's `answer`, and
 * `settleCommand`: end the effect's command in the outcome's transaction too; `alsoWrite`: the
 * caller's own writes in that transaction (see `ReconcileOptions`); `canary`: the retention canary's
 * verdict when one was asked.
 */
export interface LookupToCommit {
  effect: EffectRow;
  leasedVersion: number;
  leasedLookupCount: number;
  owner: string;
  adapterRef: { id: string; version: string };
  trigger: ReconciliationTrigger;
  startedAtMs: number;
  answer: LookupAnswer;
  settleCommand: boolean;
  alsoWrite?: ((tx: StoreTx, effect: EffectRow) => Promise<void>) | undefined;
  canary?: RetentionCanaryVerdict | undefined;
}

/**
 * The reconciler's outcome writer (docs/DESIGN.md §3 rules 5–7, §4): writes a lookup's validated
 * outcome (its settling columns come from the ledger's lifecycle machine, `settleTransition`), the
 * receipt, the result, the reconciliation record and the run event in one transaction, and records
 * `superseded` lookups (with a contradiction of a settled effect flagged for the operator).
 * It never calls an adapter.
 */
export class ReconciliationOutcomeWriter {
  /** Outcomes are committed in groups: see {@link OutcomeGroupCommit}. */
  private readonly outcomes: OutcomeGroupCommit;

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly settings: ReconciliationSettings,
    private readonly metrics: ReconciliationMetrics,
  ) {
    this.outcomes = new OutcomeGroupCommit(ctx.store, settings.groupCommit ?? DEFAULT_GROUP_COMMIT);
  }

  /** Commits every outcome waiting for its group commit's window now (call before closing the store); resolves once they committed or failed. */
  async flushOutcomes(): Promise<void> {
    return await this.outcomes.flush();
  }

  /**
   * Commits the answer of a leased lookup (see {@link EffectReconciler.reconcileLeased}): judged
   * inside the transaction against the row its lease left (the compare-and-set proves it stored), then outcome, receipt, result, record, run event and,
   * with `settleCommand`, the command's terminal state in ONE transaction (compare-and-set on the
   * leased version and owner); the result's `commandSettled` says what it did to the command. A lost
   * compare-and-set releases the lease and records `superseded` with the answer as evidence. An
   * `ineligible` answer releases the lease and its count. `canary` is the retention canary's verdict
   * when one was asked (a fence-less miss without a confirmed canary is refused). A database error propagates.
   */
  async commit(lookup: LookupToCommit): Promise<ReconcileResult> {
    const { effect, leasedVersion, leasedLookupCount, owner, adapterRef, trigger, startedAtMs, answer, settleCommand, alsoWrite, canary } =
      lookup;
    const now = this.ctx.clock.nowMs();
    if (answer.kind === "ineligible") {
      // The reconcile step made no lookup (e.g. invalid input): release the lease and its count.
      const after = await this.ctx.store.transaction(async (tx) => {
        await reconciliationRepository.releaseLease(tx, effect.id, owner, true);
        return effectRows.findById(tx, effect.id);
      });
      return { kind: "ineligible", reasonCode: answer.decision.reasonCode, effect: after };
    }
    let decision: Exclude<ReconcileDecision, { decision: "ineligible" }> | undefined;
    let commandSettled: CommandSettlement = null;
    // The row as the lease left it: the outcome's compare-and-set (status `unknown`, the leased
    // version, this owner) passes only while the stored row is exactly this one (every write to an
    // effect bumps its version, §3 rule 7), so the answer is judged against it without reading it again.
    const leased = leasedRow(effect, { leasedVersion, leasedLookupCount, owner, leaseExpiresAtMs: startedAtMs + this.settings.leaseMs });
    // Group commit: this outcome's writes run whole inside a batch's transaction (or alone, if the
    // batch failed); the promise settles after that commit, so nothing below runs before it.
    const committed = await this.outcomes.submit(async (tx) => {
      // Reset on every run: a batch that rolls back runs this write again alone (outcome-group-commit.service.ts).
      decision = undefined;
      commandSettled = null;
      // Judged here, inside the transaction that persists the outcome, against the effect as the
      // compare-and-set below proves it stored (see `judgeLookupAnswer` in reconcile.service.ts): the
      // adapter never held this row, only a copy of its lookup request. A lost compare-and-set writes nothing.
      decision = judgedAgainst(answer, leased, canary);
      const outcome = decision.decision;
      const reasonCode = decision.decision === "still_unknown" ? decision.reasonCode : null;
      const set = this.outcomeColumns(leased, decision, now);
      const record = {
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
      };
      const event = { effectId: effect.id, commandId: effect.commandId, outcome, reasonCode, trigger, adapter: adapterRef };
      const payload = (w: EffectRow) => ({ ...event, effectStatus: w.status });
      // PostgreSQL: the compare-and-set, the record and the run event in one round trip (all or none of them).
      const after = tx.pgPrepared
        ? await pgOutcomeWriteRepository.commit(tx, { current: leased, version: leasedVersion, owner, set, record, payload, nowMs: now })
        : await reconciliationRepository.commitOutcome(tx, leased, leasedVersion, owner, set);
      if (!after) {
        decision = undefined;
        return null;
      }
      if (!tx.pgPrepared) {
        await reconciliationRepository.insertRecord(tx, { ...record, nextLookupAtMs: after.nextLookupAtMs });
        await runTables().appendEvent(tx, effect.runId, "effect.reconciled", payload(after), now);
      }
      if (settleCommand && (await settleCommandFromEffect(tx, after, this.ctx.clock.nowMs())))
        commandSettled = after.status === "succeeded" ? "completed" : "failed";
      await alsoWrite?.(tx, after);
      return after;
    });
    if (!committed || !decision) {
      await this.ctx.store.transaction((tx) => reconciliationRepository.releaseLease(tx, effect.id, owner));
      // Evidence only (never written to the effect): the answer judged against the row as leased.
      await this.recordSuperseded(effect, adapterRef, trigger, startedAtMs, "cas_lost", judgedAgainst(answer, effect, canary));
      return { kind: "superseded", reasonCode: "cas_lost", effect: await this.ctx.store.read((tx) => effectRows.findById(tx, effect.id)) };
    }
    const judged = decision as Exclude<ReconcileDecision, { decision: "ineligible" }>;
    const outcome = judged.decision;
    const reasonCode = judged.decision === "still_unknown" ? judged.reasonCode : null;
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
    const error = judged.decision === "still_unknown" ? (judged.error ?? null) : null;
    return { kind: outcome, reasonCode, error, effect: committed, commandSettled };
  }

  /** The bound adapter's package, package version and declaration hash, recorded with every lookup. */
  private provenanceColumns(serverId: string) {
    const p = this.settings.boundAdapters?.get(serverId)?.provenance;
    return {
      adapterPackage: p?.packageName ?? null,
      adapterPackageVersion: p?.packageVersion ?? null,
      adapterDeclarationHash: p?.declarationHash ?? null,
    };
  }

  private outcomeColumns(effect: EffectRow, decision: Exclude<ReconcileDecision, { decision: "ineligible" }>, now: number) {
    switch (decision.decision) {
      case "confirmed_succeeded": {
        const result = toMcpExecuteCommandResult(McpToolResultSchema.parse(decision.result), effect);
        return {
          ...settleTransition(effect, "succeeded", "reconciled"),
          resultJson: JSON.stringify(result),
          reconciliationReceiptJson: JSON.stringify(decision.receipt),
          updatedAtMs: now,
        };
      }
      case "confirmed_not_executed":
        return {
          ...settleTransition(effect, "not_executed", "reconciled"),
          reconciliationReceiptJson: JSON.stringify(decision.receipt),
          updatedAtMs: now,
        };
      case "still_unknown": {
        // `effect` is the row as its lease left it: its lookup_count already counts this lookup.
        const crashedAtBound =
          decision.reasonSource === "runtime" &&
          decision.reasonCode === "adapter_crashed" &&
          effect.lookupCount >= this.settings.maxLookups;
        const attention: OperatorAttentionReason | null =
          decision.reasonSource === "runtime" &&
          (decision.reasonCode === "key_conflict" ||
            decision.reasonCode === "retention_expired" ||
            decision.reasonCode === "retention_contradicted")
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
   * logged at warn as `reconciliation.contradicts_settled_effect` only once that flag is written.
   * @throws Error `reconciliation.flag_contended` when the flag's compare-and-set lost {@link FLAG_TRIES}
   *   times in a row (nothing of this call is committed), and any database error.
   */
  async recordSuperseded(
    effect: EffectRow,
    adapterRef: { id: string; version: string },
    trigger: ReconciliationTrigger,
    startedAtMs: number,
    reasonCode: string,
    lost?: ReconcileDecision,
  ): Promise<void> {
    const now = this.ctx.clock.nowMs();
    const evidence = lost && lost.decision !== "ineligible" ? lost : undefined;
    const contradicted = await this.ctx.store.transaction(async (tx) => {
      await reconciliationRepository.insertRecord(tx, {
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
        error: evidence
          ? `the lost lookup answered ${evidence.decision}${evidence.decision === "still_unknown" ? ` (${evidence.reasonCode})` : ""}`
          : null,
        startedAtMs,
        finishedAtMs: now,
      });
      return evidence ? flagContradiction(tx, effect.id, evidence.decision, now) : undefined;
    });
    this.metrics.recordSuperseded(adapterRef.id, reasonCode);
    this.ctx.logger.info(
      {
        effectId: effect.id,
        commandId: effect.commandId,
        driverInstanceId: effect.driverInstanceId,
        adapterId: adapterRef.id,
        trigger,
        reasonCode,
      },
      "reconciliation.superseded",
    );
    if (contradicted) {
      this.ctx.logger.warn(
        {
          effectId: effect.id,
          effectStatus: contradicted.status,
          resolution: contradicted.resolution,
          lookup: evidence?.decision,
          adapterId: adapterRef.id,
          operatorAttention: "contradicted_by_provider",
        },
        "reconciliation.contradicts_settled_effect",
      );
    }
  }
}

/** How many times the `contradicted_by_provider` compare-and-set is tried (re-reading the effect after each loss). */
const FLAG_TRIES = 3;

/**
 * Raises `contradicted_by_provider` on effect `effectId` when `decision` contradicts its settled status,
 * by a compare-and-set on (status, version); a lost compare-and-set (another writer changed the effect
 * in between) re-reads the effect and judges again. Returns the effect as flagged, or undefined when it
 * does not (or no longer) contradict.
 * @throws Error with `code` `reconciliation.flag_contended` after {@link FLAG_TRIES} lost compare-and-sets.
 */
async function flagContradiction(
  tx: StoreTx,
  effectId: string,
  decision: ReconcileDecision["decision"],
  nowMs: number,
): Promise<EffectRow | undefined> {
  for (let attempt = 0; attempt < FLAG_TRIES; attempt += 1) {
    const settled = await effectRows.findById(tx, effectId);
    if (!settled || !contradictsSettled(decision, settled.status)) return undefined;
    if (settled.operatorAttention === "contradicted_by_provider") return settled;
    const set = { operatorAttention: "contradicted_by_provider" as const, updatedAtMs: nowMs };
    if (await effectRows.updateIfCurrent(tx, settled, set)) return { ...settled, ...set, version: settled.version + 1 };
  }
  throw Object.assign(new Error(`reconciliation.flag_contended: effect ${effectId} kept changing while its contradiction was flagged`), {
    code: "reconciliation.flag_contended",
  });
}

/** True when a lookup's confirmed answer contradicts a settled status (`succeeded` vs `confirmed_not_executed`, or the reverse). */
function contradictsSettled(decision: ReconcileDecision["decision"] | undefined, status: EffectRow["status"]): boolean {
  return (
    (decision === "confirmed_succeeded" && status === "not_executed") || (decision === "confirmed_not_executed" && status === "succeeded")
  );
}

/**
 * `effect` (the row read before its lease) as the lease changed it: `leasedVersion`, the lookup count
 * the lease statement returned (`leasedLookupCount`: not the read row's count + 1, since a lease given
 * back uncounted after the read changed the count without moving the version), the lease held by
 * `owner` until `leaseExpiresAtMs` (ms); see `acquireLease`.
 */
function leasedRow(
  effect: EffectRow,
  lease: { leasedVersion: number; leasedLookupCount: number; owner: string; leaseExpiresAtMs: number },
): EffectRow {
  return {
    ...effect,
    version: lease.leasedVersion,
    lookupCount: lease.leasedLookupCount,
    leaseOwner: lease.owner,
    leaseExpiresAtMs: lease.leaseExpiresAtMs,
  };
}

/** The adapter's id and version, recorded with every outcome. */
export function adapterRefOf(adapter: ReconciliationAdapter): { id: string; version: string } {
  return { id: adapter.declaration.id, version: adapter.declaration.version };
}

/**
 * The answer judged against `row` (a row read from the store), with the retention canary's verdict. An effect that is no longer eligible
 * for the answer's binding cannot be settled by it: `still_unknown` (`answer_mismatch`).
 */
function judgedAgainst(
  answer: Exclude<LookupAnswer, { kind: "ineligible" }>,
  row: EffectRow,
  canary: RetentionCanaryVerdict | undefined,
): Exclude<ReconcileDecision, { decision: "ineligible" }> {
  const judged = judgeLookupAnswer(answer, toReconcilable(row), canary);
  if (judged.decision !== "ineligible") return judged;
  const adapter = answer.kind === "answered" ? { id: answer.declaration.id, version: answer.declaration.version } : answer.decision.adapter;
  return {
    decision: "still_unknown",
    reasonSource: "runtime",
    reasonCode: "answer_mismatch",
    adapter,
    operatorAttention: false,
    error: `the stored effect is no longer eligible (${judged.reasonCode})`,
  };
}
