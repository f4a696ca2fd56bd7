import { newUlid, toMcpExecuteCommandResult, McpToolResultSchema, type McpExecuteCommandResult } from "@mosoo/contracts";
import { parseJsonColumn } from "../../../platform/db/json-column.js";
import { writeTransaction } from "../../../platform/db/database.js";
import type { RuntimeContext } from "../../runtime/application/runtime-context.js";
import type { DbHandle } from "../../runtime/infrastructure/db-handle.js";
import { RuntimeError } from "../../runtime/domain/runtime-errors.js";
import { commandRepository } from "../../runtime/infrastructure/command.repository.js";
import { effectRepository, type EffectRow } from "../../runtime/infrastructure/effect.repository.js";
import { runRepository } from "../../runtime/infrastructure/run.repository.js";
import { operatorActionRepository } from "../infrastructure/operator-action.repository.js";
import { operatorQueryRepository } from "../infrastructure/operator-query.repository.js";
import { reconciliationRepository } from "../infrastructure/reconciliation.repository.js";
import type { CompensationService, QueuedCompensation } from "./compensation.service.js";
import type { EffectReconciler } from "./effect-reconciler.service.js";
import type { OperatorCompensateRequest, OperatorListQuery, OperatorReconcileRequest, OperatorResolveRequest } from "./operator.contract.js";

/** The audited outcome of a committed operator lookup, from the effect as committed. */
function lookupOutcomeOf(effect: EffectRow): string {
  if (effect.status === "succeeded") return "confirmed_succeeded";
  if (effect.status === "not_executed") return "confirmed_not_executed";
  return "still_unknown";
}

const parse = parseJsonColumn;

/** An effect as the operator sees it in a list: status, why it waits, its lookup schedule and times (ms since the epoch). */
export function summary(e: EffectRow) {
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
    compensatesEffectId: e.compensatesEffectId,
    createdAtMs: e.createdAtMs,
    updatedAtMs: e.updatedAtMs,
  };
}

/** One page of the operator's effect list, newest first; `nextCursor` continues it (null on the last page). */
export interface EffectPage {
  effects: ReturnType<typeof summary>[];
  nextCursor: string | null;
}

/**
 * The operator surface of the ledger (DESIGN.md §7), one service behind both the HTTP routes and
 * the CLI, and only while `MOSOO_EFFECT_RECONCILIATION` is on: list effects, show one effect's
 * whole history, reconcile now, resolve an `unknown` effect by hand, and request a declared
 * compensation. Every action is audited (actor, action, effect, status before and after, reason,
 * time) in `effect_operator_actions` in the same transaction as the change it records; a manual
 * resolution is a compare-and-set on (status, version), so it can race a reconciler safely (the
 * loser changes nothing). Nothing here re-executes a write or infers a rollback.
 */
export class OperatorService {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly reconciler: EffectReconciler,
    private readonly compensations: CompensationService,
    /** The `MOSOO_EFFECT_RECONCILIATION` flag: when false every method throws `feature.disabled`. */
    readonly enabled: boolean,
  ) {}

  /** @throws RuntimeError `feature.disabled` (404) when reconciliation is off. */
  assertEnabled(): void {
    if (!this.enabled) throw new RuntimeError("feature.disabled", "the operator surface is part of effect reconciliation, which is off: set MOSOO_EFFECT_RECONCILIATION=on");
  }

  /**
   * One page of effects matching `query` (see `OperatorListQuerySchema`), newest first.
   * @throws RuntimeError `feature.disabled`.
   */
  list(query: OperatorListQuery): EffectPage {
    this.assertEnabled();
    const rows = operatorQueryRepository.listEffects(this.ctx.db, {
      status: query.status,
      serverId: query.serverId,
      toolName: query.toolName,
      runId: query.runId,
      createdAtMostMs: query.minAgeMs === undefined ? undefined : this.ctx.clock.nowMs() - query.minAgeMs,
      beforeId: query.cursor,
      limit: query.limit + 1,
    });
    const page = rows.slice(0, query.limit);
    return { effects: page.map(summary), nextCursor: rows.length > query.limit ? (page.at(-1)?.id ?? null) : null };
  }

  /**
   * One effect with its whole history: command, attempts, every lookup (outcome, reason code,
   * receipt, adapter package, package version and declaration hash), why it gets no lookup
   * (`noLookupReason`, null when its server's adapter covers its tool), operator actions (with any receipt an operator supplied) and compensations.
   * @throws RuntimeError `feature.disabled`, `effect.not_found`.
   */
  show(effectId: string) {
    this.assertEnabled();
    const db = this.ctx.db;
    const e = effectRepository.findById(db, effectId);
    if (!e) throw new RuntimeError("effect.not_found", `no effect ${effectId}`);
    const cmd = commandRepository.findById(db, e.commandId);
    return {
      ...summary(e),
      requestFingerprint: e.requestFingerprint,
      version: e.version,
      noLookupReason: this.reconciler.noLookupReason(e),
      result: parse(e.resultJson),
      providerReceipt: parse(e.providerReceiptJson),
      reconciliationReceipt: parse(e.reconciliationReceiptJson),
      command: cmd ? { id: cmd.id, status: cmd.status, error: parse(cmd.errorJson) } : null,
      attempts: effectRepository.listAttempts(db, e.id),
      reconciliations: reconciliationRepository.listRecords(db, e.id).map((r) => ({ ...r, receiptJson: undefined, receipt: parse(r.receiptJson) })),
      operatorActions: operatorActionRepository.listByEffect(db, e.id).map((a) => ({ ...a, receiptJson: undefined, receipt: parse(a.receiptJson) })),
      compensations: operatorQueryRepository.listCompensations(db, e.id).map(summary),
    };
  }

  /**
   * Looks the effect up once more now, through its bound adapter and the same path as the sweep
   * (the lease is respected: a lookup already running wins and this one records `superseded`;
   * the schedule and the lookup bound are ignored, never the fail-closed checks).
   * @throws RuntimeError `feature.disabled`; `effect.not_found`; `effect.not_reconcilable` (409: not
   *   `unknown`, or no adapter bound for its server and tool).
   */
  async reconcile(effectId: string, req: OperatorReconcileRequest) {
    this.assertEnabled();
    const e = effectRepository.findById(this.ctx.db, effectId);
    if (!e) throw new RuntimeError("effect.not_found", `no effect ${effectId}`);
    if (e.status !== "unknown" || !this.reconciler.adapterFor(e)) {
      throw new RuntimeError("effect.not_reconcilable", `effect ${effectId} is ${e.status}${e.status === "unknown" ? " and no adapter is bound for its server and tool (or MOSOO_EFFECT_RECONCILIATION is off)" : ""}`);
    }
    // The audit row commits in the same transaction as a committed outcome; a lookup that changed
    // nothing (superseded, ineligible) is audited on its own.
    let audited = false;
    const audit = (db: DbHandle, outcome: string, statusAfter: EffectRow["status"]) => {
      const now = this.ctx.clock.nowMs();
      operatorActionRepository.insert(db, { id: newUlid(now), effectId, runId: e.runId, driverInstanceId: e.driverInstanceId, action: "lookup", actor: req.actor, reason: req.reason, outcome, statusBefore: e.status, statusAfter, createdAtMs: now });
      audited = true;
    };
    const result = await this.reconciler.reconcile(effectId, "operator", (tx, after) => audit(tx, lookupOutcomeOf(after), after.status));
    // It changed nothing (superseded, ineligible): before and after are the same, whatever another actor did meanwhile.
    if (!audited) audit(this.ctx.db, result.kind, e.status);
    this.ctx.logger.info({ effectId, commandId: e.commandId, driverInstanceId: e.driverInstanceId, actor: req.actor, outcome: result.kind }, "operator.lookup");
    return { outcome: result.kind, effect: result.effect ? summary(result.effect) : null };
  }

  /**
   * Resolves an `unknown` effect by hand (resolution `operator`), as a compare-and-set on
   * (status, version) together with the audit row (with the operator's receipt, if any) and the
   * `effect.resolved` run event. A `succeeded` resolution stores the MCP tool result as the run
   * sees it (text blocks joined, as the Driver does) and its `_meta` as the provider receipt. The
   * fence is lifted; a command that is not terminal yet gets the settled answer at its next claim.
   * @throws RuntimeError `feature.disabled`; `effect.not_found`; `effect.not_unknown` (409: only an
   *   `unknown` effect is resolved by hand; a concurrent change wins and this changes nothing).
   */
  resolve(effectId: string, req: OperatorResolveRequest) {
    this.assertEnabled();
    const now = this.ctx.clock.nowMs();
    const after = writeTransaction(this.ctx.db, (tx) => {
      const e = effectRepository.findById(tx, effectId);
      if (!e) throw new RuntimeError("effect.not_found", `no effect ${effectId}`);
      if (e.status !== "unknown") throw new RuntimeError("effect.not_unknown", `effect ${effectId} is ${e.status}; only an unknown effect is resolved by hand`);
      const toolResult = req.outcome === "succeeded" ? McpToolResultSchema.parse(req.result) : null;
      const result: McpExecuteCommandResult | null = toolResult ? toMcpExecuteCommandResult(toolResult, e) : null;
      const changed = effectRepository.updateIfCurrent(tx, e, {
        status: req.outcome,
        resolution: "operator",
        ...(result ? { resultJson: JSON.stringify(result), providerReceiptJson: toolResult?._meta ? JSON.stringify(toolResult._meta) : null } : {}),
        leaseOwner: null,
        leaseExpiresAtMs: null,
        nextLookupAtMs: null,
        operatorAttention: null,
        updatedAtMs: now,
      });
      if (!changed) throw new RuntimeError("effect.not_unknown", `effect ${effectId} changed meanwhile; read it again`);
      operatorActionRepository.insert(tx, {
        id: newUlid(now),
        effectId,
        runId: e.runId,
        driverInstanceId: e.driverInstanceId,
        action: "resolve",
        actor: req.actor,
        reason: req.reason,
        outcome: req.outcome,
        statusBefore: e.status,
        statusAfter: req.outcome,
        receiptJson: req.outcome === "succeeded" && req.receipt ? JSON.stringify(req.receipt) : null,
        createdAtMs: now,
      });
      runRepository.appendEvent(tx, e.runId, "effect.resolved", { effectId, commandId: e.commandId, outcome: req.outcome, resolution: "operator", actor: req.actor }, now);
      return effectRepository.findById(tx, effectId)!;
    });
    this.ctx.logger.info({ effectId, commandId: after.commandId, driverInstanceId: after.driverInstanceId, actor: req.actor, outcome: req.outcome }, "operator.resolved");
    return summary(after);
  }

  /**
   * Requests the compensation the bound adapter declares for a `succeeded` effect's tool (see
   * `CompensationService.compensate` for the rules and the errors it throws).
   * @throws RuntimeError `feature.disabled`, and every code of `CompensationService.compensate`.
   */
  async compensate(effectId: string, req: OperatorCompensateRequest): Promise<QueuedCompensation> {
    this.assertEnabled();
    return this.compensations.compensate(effectId, req);
  }
}
