import { newUlid, type McpExecuteCommandResult } from "@mosoo/contracts";
import { parseJsonColumn } from "../../../platform/db/json-column.js";
import { writeTransaction } from "../../../platform/db/database.js";
import type { RuntimeContext } from "../../runtime/application/runtime-context.js";
import type { DbHandle } from "../../runtime/infrastructure/db-handle.js";
import { RuntimeError } from "../../runtime/domain/runtime-errors.js";
import { commandRepository } from "../../runtime/infrastructure/command.repository.js";
import { effectRepository, type EffectRow } from "../../runtime/infrastructure/effect.repository.js";
import { runRepository } from "../../runtime/infrastructure/run.repository.js";
import { operatorActionRepository } from "../infrastructure/operator-action.repository.js";
import { reconciliationRepository } from "../infrastructure/reconciliation.repository.js";
import type { EffectReconciler } from "./effect-reconciler.service.js";
import type { OperatorLookupRequest, OperatorResolveRequest } from "./operator.contract.js";

/** The audited outcome of a committed operator lookup, from the effect as committed. */
function lookupOutcomeOf(effect: EffectRow): string {
  if (effect.status === "succeeded") return "confirmed_succeeded";
  if (effect.status === "not_executed") return "confirmed_not_executed";
  return "still_unknown";
}

const parse = parseJsonColumn;

/** An effect as the operator sees it in a list: status, why it waits, and its lookup schedule (ms). */
function summary(e: EffectRow) {
  return {
    id: e.id,
    runId: e.runId,
    commandId: e.commandId,
    driverInstanceId: e.driverInstanceId,
    serverId: e.serverId,
    toolName: e.toolName,
    idempotencyKey: e.idempotencyKey,
    status: e.status,
    resolution: e.resolution,
    operatorAttention: e.operatorAttention,
    lookupCount: e.lookupCount,
    nextLookupAtMs: e.nextLookupAtMs,
    updatedAtMs: e.updatedAtMs,
  };
}

/**
 * The operator surface of the ledger (DESIGN.md §7): list `unknown` effects, show one effect's
 * whole history, trigger a lookup, and resolve an `unknown` effect by hand. Every action is
 * audited (actor, reason) in `effect_operator_actions`; a manual resolution is a compare-and-set on
 * (status, version), so it can race a reconciler safely (the loser changes nothing). Nothing here
 * re-executes a write or infers a rollback.
 */
export class OperatorService {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly reconciler: EffectReconciler,
  ) {}

  /** `unknown` effects, oldest first, at most `limit` (1–500). */
  listUnknown(limit: number) {
    return effectRepository.listInStatus(this.ctx.db, "unknown", limit).map(summary);
  }

  /** One effect with its attempts, reconciliation records, operator actions and command status. @throws RuntimeError `effect.not_found`. */
  show(effectId: string) {
    const db = this.ctx.db;
    const e = effectRepository.findById(db, effectId);
    if (!e) throw new RuntimeError("effect.not_found", `no effect ${effectId}`);
    const cmd = commandRepository.findById(db, e.commandId);
    return {
      ...summary(e),
      requestFingerprint: e.requestFingerprint,
      version: e.version,
      result: parse(e.resultJson),
      providerReceipt: parse(e.providerReceiptJson),
      reconciliationReceipt: parse(e.reconciliationReceiptJson),
      command: cmd ? { id: cmd.id, status: cmd.status, error: parse(cmd.errorJson) } : null,
      attempts: effectRepository.listAttempts(db, e.id),
      reconciliations: reconciliationRepository.listRecords(db, e.id).map((r) => ({ ...r, receiptJson: undefined, receipt: parse(r.receiptJson) })),
      operatorActions: operatorActionRepository.listByEffect(db, e.id),
    };
  }

  /**
   * Looks the effect up once more now, through its bound adapter (ignores the schedule and the
   * lookup bound, never the fail-closed checks).
   * @throws RuntimeError `effect.not_found`; `effect.not_reconcilable` (409: not `unknown`, or no adapter bound with the flag on).
   */
  async triggerLookup(effectId: string, req: OperatorLookupRequest) {
    const e = effectRepository.findById(this.ctx.db, effectId);
    if (!e) throw new RuntimeError("effect.not_found", `no effect ${effectId}`);
    if (e.status !== "unknown" || !this.reconciler.adapterFor(e)) {
      throw new RuntimeError("effect.not_reconcilable", `effect ${effectId} is ${e.status}${e.status === "unknown" ? " and no adapter is bound for its server and tool (or MOSOO_EFFECT_RECONCILIATION is off)" : ""}`);
    }
    // The audit row commits in the same transaction as a committed outcome; a lookup that changed
    // nothing (superseded, ineligible) is audited on its own.
    let audited = false;
    const audit = (db: DbHandle, outcome: string) => {
      const now = this.ctx.clock.nowMs();
      operatorActionRepository.insert(db, { id: newUlid(now), effectId, action: "lookup", actor: req.actor, reason: req.reason, outcome, createdAtMs: now });
      audited = true;
    };
    const result = await this.reconciler.reconcile(effectId, "operator", (tx, after) => audit(tx, lookupOutcomeOf(after)));
    if (!audited) audit(this.ctx.db, result.kind);
    this.ctx.logger.info({ effectId, commandId: e.commandId, driverInstanceId: e.driverInstanceId, actor: req.actor, outcome: result.kind }, "operator.lookup");
    return { outcome: result.kind, effect: result.effect ? summary(result.effect) : null };
  }

  /**
   * Resolves an `unknown` effect by hand (resolution `operator`), as a compare-and-set on
   * (status, version) together with the audit row and the `effect.resolved` run event. The fence is
   * lifted; a command that is not terminal yet gets the settled answer at its next claim.
   * @throws RuntimeError `effect.not_found`; `effect.not_unknown` (409: only an `unknown` effect is
   *   resolved by hand; a concurrent change wins and this changes nothing).
   */
  resolve(effectId: string, req: OperatorResolveRequest) {
    const now = this.ctx.clock.nowMs();
    const after = writeTransaction(this.ctx.db, (tx) => {
      const e = effectRepository.findById(tx, effectId);
      if (!e) throw new RuntimeError("effect.not_found", `no effect ${effectId}`);
      if (e.status !== "unknown") throw new RuntimeError("effect.not_unknown", `effect ${effectId} is ${e.status}; only an unknown effect is resolved by hand`);
      const result: McpExecuteCommandResult | null =
        req.outcome === "succeeded"
          ? { outputText: req.outputText, requestId: e.requestId, serverId: e.serverId, toolName: e.toolName, ...(req.isError ? { isError: true } : {}) }
          : null;
      const changed = effectRepository.updateIfCurrent(tx, e, {
        status: req.outcome,
        resolution: "operator",
        ...(result ? { resultJson: JSON.stringify(result) } : {}),
        leaseOwner: null,
        leaseExpiresAtMs: null,
        nextLookupAtMs: null,
        operatorAttention: null,
        updatedAtMs: now,
      });
      if (!changed) throw new RuntimeError("effect.not_unknown", `effect ${effectId} changed meanwhile; read it again`);
      operatorActionRepository.insert(tx, { id: newUlid(now), effectId, action: "resolve", actor: req.actor, reason: req.reason, outcome: req.outcome, createdAtMs: now });
      runRepository.appendEvent(tx, e.runId, "effect.resolved", { effectId, commandId: e.commandId, outcome: req.outcome, resolution: "operator", actor: req.actor }, now);
      return effectRepository.findById(tx, effectId)!;
    });
    this.ctx.logger.info({ effectId, commandId: after.commandId, driverInstanceId: after.driverInstanceId, actor: req.actor, outcome: req.outcome }, "operator.resolved");
    return summary(after);
  }
}
