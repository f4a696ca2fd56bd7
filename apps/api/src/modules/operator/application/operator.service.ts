// The one operator service behind the HTTP routes, the CLI and the console: list and show effects, reconcile now, resolve by hand, compensate.
import { newUlid, UlidSchema } from "@mosoo/contracts";
import { parseJsonColumn } from "../../../platform/db/json-column.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { commandTables, runTables } from "../../ledger/application/owned-tables.port.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import { operatorActionRepository } from "../infrastructure/operator-action.repository.js";
import { operatorRefusalRepository } from "../infrastructure/operator-refusal.repository.js";
import {
  LOOKUP_OUTCOME_WINDOW_MS,
  OPERATOR_ACTION_TABLE,
  OPERATOR_REFUSAL_CODES,
  type OperatorActionAnswer,
  type OperatorActionName,
  type OperatorActionRequest,
  type OperatorRefusalCode,
} from "@mosoo/contracts";
import { operatorQueryRepository } from "../infrastructure/operator-query.repository.js";
import { reconciliationRecordsService } from "../../reconciliation/application/reconciliation-records.service.js";
import type { CompensationService } from "./compensation.service.js";
import { toEffectSummary } from "./operator-effect-summary.query.js";
import { resolveByHand } from "./manual-resolution.service.js";
import type { EffectReconciler } from "../../reconciliation/application/effect-reconciler.service.js";
import { requireOperatorScope, type OperatorIdentity } from "../domain/operator-credential.js";
import type {
  OperatorCompensateRequest,
  OperatorEffectDetail,
  OperatorEffectPage,
  OperatorEffectSummary,
  OperatorListQuery,
  OperatorReconcileAnswer,
  OperatorReconcileRequest,
  OperatorResolveRequest,
  OperatorStats,
  QueuedCompensation,
} from "@mosoo/contracts";

/** The audited outcome of a committed operator lookup, from the effect as committed. */
function lookupOutcomeOf(effect: EffectRow): string {
  if (effect.status === "succeeded") return "confirmed_succeeded";
  if (effect.status === "not_executed") return "confirmed_not_executed";
  return "still_unknown";
}

const parse = parseJsonColumn;
const sumCounts = (rows: Array<{ count: number }>) => rows.reduce((n, r) => n + r.count, 0);

const isRefusalCode = (code: string): code is OperatorRefusalCode => (OPERATOR_REFUSAL_CODES as readonly string[]).includes(code);

/**
 * The API's handler of each operator action of `OPERATOR_ACTION_TABLE`, keyed by its name: the
 * effect's id, the action's parsed request and the operator credential taking it, answering the
 * action's answer. {@link OperatorService} implements it (one method per action), so an action
 * declared in the table without its method fails the type check; the HTTP routes, the console and
 * the operator CLI dispatch through it by name.
 */
export type OperatorActionHandlers = {
  [N in OperatorActionName]: (effectId: string, req: OperatorActionRequest<N>, by: OperatorIdentity) => Promise<OperatorActionAnswer<N>>;
};

/**
 * The operator surface of the ledger (docs/DESIGN.md §7), one service behind both the HTTP routes and
 * the CLI, and only while `MOSOO_EFFECT_RECONCILIATION` is on: list effects, show one effect's
 * whole history, reconcile now, resolve an `unknown` effect by hand, and request a declared
 * compensation. Each action is taken by an {@link OperatorIdentity} (the operator credential that
 * authenticated it) and needs that action's scope (`reconcile`, `resolve`, `compensate`; reads
 * `read`, checked by the callers with {@link assertMayRead}); the audit `actor` is the credential's
 * name. Every action carried out is audited (actor, action, effect, status before and after,
 * reason, time) in `effect_operator_actions` in the same transaction as the change it records, and
 * every refused one in `effect_operator_refusals` (changing nothing else); a manual
 * resolution is a compare-and-set on (status, version), so it can race a reconciler safely (the
 * loser changes nothing). Nothing here re-executes a write or infers a rollback.
 */
export class OperatorService implements OperatorActionHandlers {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly reconciler: EffectReconciler,
    private readonly compensations: CompensationService,
    /** The `MOSOO_EFFECT_RECONCILIATION` flag: when false every method throws `feature.disabled`. */
    readonly enabled: boolean,
  ) {}

  /** @throws UserFacingError `feature.disabled` (404) when reconciliation is off. */
  assertEnabled(): void {
    if (!this.enabled)
      throw new UserFacingError(
        "feature.disabled",
        "the operator surface is part of effect reconciliation, which is off: set MOSOO_EFFECT_RECONCILIATION=on",
      );
  }

  /**
   * Refuses a read (list, show, stats) by a credential without the `read` scope, with one warn line
   * `operator.refused` under the credential's name (a read changes nothing, so no audit row).
   * @throws UserFacingError `auth.scope` (403).
   */
  assertMayRead(by: OperatorIdentity): void {
    try {
      requireOperatorScope(by, "read");
    } catch (err) {
      this.ctx.logger.warn({ action: "read", actor: by.name, outcome: "auth.scope" }, "operator.refused");
      throw err;
    }
  }

  /**
   * One page of effects matching `query` (see `OperatorListQuerySchema`), newest first.
   * @throws UserFacingError `feature.disabled`.
   */
  async list(query: OperatorListQuery): Promise<OperatorEffectPage> {
    this.assertEnabled();
    const filter = {
      // without a status: `unknown`, unless an attention reason (`contradicted_by_provider` is only
      // ever on settled effects), a run or a tool call is asked for: then every status
      status:
        query.status === "any"
          ? undefined
          : (query.status ??
            (query.attention === undefined && query.runId === undefined && query.toolCallId === undefined ? "unknown" : undefined)),
      attention: query.attention,
      serverId: query.serverId,
      toolName: query.toolName,
      runId: query.runId,
      toolCallId: query.toolCallId,
      createdAtMostMs: query.minAgeMs === undefined ? undefined : this.ctx.clock.nowMs() - query.minAgeMs,
      beforeId: query.cursor,
      limit: query.limit + 1,
    };
    const rows = await this.ctx.store.read((tx) => operatorQueryRepository.listEffects(tx, filter));
    const page = rows.slice(0, query.limit);
    return { effects: page.map(toEffectSummary), nextCursor: rows.length > query.limit ? (page.at(-1)?.id ?? null) : null };
  }

  /**
   * One effect with its whole history: its arguments, command and run (status, error, last change),
   * attempts, every lookup (outcome, reason code, receipt, adapter package, package version and
   * declaration hash), why it gets no lookup (`noLookupReason`, null when its server's adapter
   * covers its tool), operator actions (with any receipt an operator supplied), refused operator
   * actions (`refusedActions`: actor, action, refusal code as `outcome`, reason, time) and compensations.
   * @throws UserFacingError `feature.disabled`, `effect.not_found`.
   */
  async show(effectId: string): Promise<OperatorEffectDetail> {
    this.assertEnabled();
    return this.ctx.store.read((tx) => this.showIn(tx, effectId));
  }

  private async showIn(tx: StoreTx, effectId: string): Promise<OperatorEffectDetail> {
    const e = await effectRows.findById(tx, effectId);
    if (!e) throw new UserFacingError("effect.not_found", `no effect ${effectId}`);
    const cmd = await commandTables().findById(tx, e.commandId);
    const run = await runTables().findRun(tx, e.runId);
    const attempts = await effectRows.listAttempts(tx, e.id);
    const records = await reconciliationRecordsService.listRecords(tx, e.id);
    const actions = await operatorActionRepository.listByEffect(tx, e.id);
    const refusedActions = await operatorRefusalRepository.listByEffect(tx, e.id);
    const compensations = await operatorQueryRepository.listCompensations(tx, e.id);
    return {
      ...toEffectSummary(e),
      requestFingerprint: e.requestFingerprint,
      version: e.version,
      arguments: parse(e.argumentsJson),
      noLookupReason: this.reconciler.noLookupReason(e),
      result: parse(e.resultJson),
      providerReceipt: parse(e.providerReceiptJson),
      reconciliationReceipt: parse(e.reconciliationReceiptJson),
      command: cmd ? { id: cmd.id, status: cmd.status, error: parse(cmd.errorJson), updatedAtMs: cmd.updatedAtMs } : null,
      run: run ? { id: run.id, status: run.status, error: parse(run.errorJson), updatedAtMs: run.updatedAtMs } : null,
      attempts,
      reconciliations: records.map(({ receiptJson, ...r }) => ({ ...r, receipt: parse(receiptJson) })),
      operatorActions: actions.map(({ receiptJson, ...a }) => ({ ...a, receipt: parse(receiptJson) })),
      refusedActions,
      compensations: compensations.map(toEffectSummary),
    };
  }

  /**
   * Counts for an operator's overview: `unknownTotal`, the `unknown` effects by attention reason
   * (`reason` null: no reason yet, lookups continue) and the lookups of the last
   * `LOOKUP_OUTCOME_WINDOW_MS` (24 h) by outcome and reason code.
   * @throws UserFacingError `feature.disabled`.
   */
  async stats(): Promise<OperatorStats> {
    this.assertEnabled();
    const lookupOutcomesSinceMs = this.ctx.clock.nowMs() - LOOKUP_OUTCOME_WINDOW_MS;
    return this.ctx.store.read(async (tx) => {
      const byAttention = await operatorQueryRepository.countUnknownByAttention(tx);
      const lookupOutcomes = await operatorQueryRepository.countLookupOutcomes(tx, lookupOutcomesSinceMs);
      return { unknownTotal: sumCounts(byAttention), byAttention, lookupOutcomesSinceMs, lookupOutcomes };
    });
  }

  /**
   * How many effects are `unknown` now (a range count over the (status, id) index).
   * @throws UserFacingError `feature.disabled`.
   */
  async unknownTotal(): Promise<number> {
    this.assertEnabled();
    return sumCounts(await this.ctx.store.read((tx) => operatorQueryRepository.countUnknownByAttention(tx)));
  }

  /**
   * A string that changes whenever any effect changes (a new intent, attempt outcome, lookup,
   * settlement or operator action): what the console's live updates poll. Readable with the flag off.
   */
  async changeMarker(): Promise<string> {
    return this.ctx.store.read((tx) => operatorQueryRepository.changeMarker(tx));
  }

  /**
   * Looks the effect up once more now, through its bound adapter and the same path as the sweep
   * (the lease is respected: a lookup already running wins and this one records `superseded`;
   * the schedule and the lookup bound are ignored, never the fail-closed checks).
   * @throws UserFacingError `feature.disabled`; `auth.scope` (403: `by` lacks `reconcile`); `effect.not_found`;
   *   `effect.not_reconcilable` (409: not `unknown`, or no adapter bound for its server and tool).
   */
  async reconcile(effectId: string, req: OperatorReconcileRequest, by: OperatorIdentity): Promise<OperatorReconcileAnswer> {
    return this.act("reconcile", effectId, req, by, (actor) => this.reconcileNow(effectId, req, actor));
  }

  private async reconcileNow(effectId: string, req: OperatorReconcileRequest, actor: string): Promise<OperatorReconcileAnswer> {
    const e = await this.ctx.store.read((tx) => effectRows.findById(tx, effectId));
    if (!e) throw new UserFacingError("effect.not_found", `no effect ${effectId}`);
    if (e.status !== "unknown" || !this.reconciler.adapterFor(e)) {
      throw new UserFacingError(
        "effect.not_reconcilable",
        e.status === "unknown"
          ? `effect ${effectId} is unknown and no adapter is bound for server ${e.serverId}, tool ${e.toolName} (or MOSOO_EFFECT_RECONCILIATION is off); ` +
              `next: bind an adapter for ${e.serverId} in MOSOO_RECONCILIATION_BINDINGS_FILE and restart the API (docs/writing-an-adapter.md), ` +
              `or check the provider yourself and settle it with resolve (npm run effects -- resolve ${effectId} --outcome succeeded|not_executed --reason "...")`
          : `effect ${effectId} is ${e.status}; only an unknown effect is looked up`,
      );
    }
    // The audit row commits in the same transaction as a committed outcome; a lookup that changed
    // nothing (superseded, ineligible) is audited on its own.
    let audited = false;
    const audit = async (tx: StoreTx, outcome: string, statusAfter: EffectRow["status"]): Promise<void> => {
      const now = this.ctx.clock.nowMs();
      await operatorActionRepository.insert(tx, {
        id: newUlid(now),
        effectId,
        runId: e.runId,
        driverInstanceId: e.driverInstanceId,
        action: "lookup",
        actor,
        reason: req.reason,
        outcome,
        statusBefore: e.status,
        statusAfter,
        createdAtMs: now,
      });
      audited = true;
    };
    const result = await this.reconciler.reconcile(effectId, "operator", {
      alsoWrite: (tx, after) => audit(tx, lookupOutcomeOf(after), after.status),
    });
    // It changed nothing (superseded, ineligible): before and after are the same, whatever another actor did meanwhile.
    if (!audited) await this.ctx.store.transaction((tx) => audit(tx, result.kind, e.status));
    this.ctx.logger.info(
      { effectId, commandId: e.commandId, driverInstanceId: e.driverInstanceId, actor, outcome: result.kind },
      "operator.lookup",
    );
    return {
      outcome: result.kind,
      reasonCode: result.reasonCode,
      error: "error" in result ? result.error : null,
      effect: result.effect ? toEffectSummary(result.effect) : null,
    };
  }

  /**
   * Resolves an `unknown` effect by hand (resolution `operator`), as a compare-and-set on
   * (status, version) together with the audit row (with the operator's receipt, if any) and the
   * `effect.resolved` run event. A `succeeded` resolution stores the MCP tool result as the run
   * sees it (text blocks joined, as the Driver does) and its `_meta` as the provider receipt. The
   * fence is lifted; a command that is not terminal yet gets the settled answer at its next claim.
   * An effect under a live reconciliation lease is not resolved: the lookup under way may already
   * be asking the provider, and it must never be asked about a settled effect (see `effectRepository.updateIfCurrentAndUnleased` in effect.repository.ts).
   * @throws UserFacingError `feature.disabled`; `auth.scope` (403: `by` lacks `resolve`); `effect.not_found`;
   *   `effect.not_unknown` (409: only an `unknown` effect is resolved by hand; a concurrent change
   *   wins and this changes nothing); `effect.lookup_in_progress` (409: a lookup holds the lease,
   *   `details.leaseExpiresAtMs`; retry once it ended or the lease expired; nothing written).
   */
  async resolve(effectId: string, req: OperatorResolveRequest, by: OperatorIdentity): Promise<OperatorEffectSummary> {
    return this.act("resolve", effectId, req, by, (actor) => resolveByHand(this.ctx, effectId, req, actor));
  }

  /**
   * Requests the compensation the bound adapter declares for a `succeeded` effect's tool (see
   * `CompensationService.compensate` for the rules and the errors it throws).
   * @throws UserFacingError `feature.disabled`, `auth.scope` (403: `by` lacks `compensate`), and every
   *   code of `CompensationService.compensate`.
   */
  async compensate(effectId: string, req: OperatorCompensateRequest, by: OperatorIdentity): Promise<QueuedCompensation> {
    return this.act("compensate", effectId, req, by, (actor) => this.compensations.compensate(effectId, req, actor));
  }

  /**
   * Takes action `name` on `effectId` as `by`, with what every action shares (the rules of the
   * table's entry): `feature.disabled` first (not audited), then the entry's `scope` (403 `auth.scope`),
   * then `run` with the actor's name; a refusal is audited under the entry's `audit` kind
   * ({@link auditRefusal}) and rethrown.
   */
  private async act<T>(
    name: OperatorActionName,
    effectId: string,
    req: { reason: string },
    by: OperatorIdentity,
    run: (actor: string) => Promise<T>,
  ): Promise<T> {
    this.assertEnabled();
    const action = OPERATOR_ACTION_TABLE[name];
    try {
      requireOperatorScope(by, action.scope);
      return await run(by.name);
    } catch (err) {
      throw await this.auditRefusal(action.audit, effectId, req.reason, by, err);
    }
  }

  /**
   * Audits a refused operator action (docs/DESIGN.md §7: refused ones included): when `err` is a
   * refusal of the service ({@link OPERATOR_REFUSAL_CODES}, a missing scope `auth.scope` included) on
   * a well-formed effect id, one row in `effect_operator_refusals` (actor: `by`'s name; action, effect,
   * the refusal code as `outcome`, its message,
   * the reason, the effect's status then, time), in its own transaction after the refused action
   * rolled back: no ledger state changes. A failure to write the row is logged, never hides the
   * refusal. Returns `err`, for the caller to rethrow.
   */
  private async auditRefusal(
    action: (typeof OPERATOR_ACTION_TABLE)[OperatorActionName]["audit"],
    effectId: string,
    reason: string,
    by: OperatorIdentity,
    err: unknown,
  ): Promise<unknown> {
    if (!(err instanceof UserFacingError) || !isRefusalCode(err.code) || !UlidSchema.safeParse(effectId).success) return err;
    const code = err.code;
    try {
      const now = this.ctx.clock.nowMs();
      await this.ctx.store.transaction(async (tx) => {
        await operatorRefusalRepository.insert(tx, {
          id: newUlid(now),
          effectId,
          action,
          actor: by.name,
          reason,
          outcome: code,
          message: err.message.slice(0, 2000) || code,
          effectStatus: (await effectRows.findById(tx, effectId))?.status ?? null,
          createdAtMs: now,
        });
      });
      this.ctx.logger.warn({ effectId, action, actor: by.name, outcome: code }, "operator.refused");
    } catch (auditErr) {
      this.ctx.logger.error({ effectId, action, actor: by.name, outcome: code, err: String(auditErr) }, "operator.refusal_audit_failed");
    }
    return err;
  }
}
