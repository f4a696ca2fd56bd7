// Operator-started compensation of a succeeded effect: a new, linked effect queued to a live Driver, never two undo writes at once.
import { fingerprintArguments, McpExecuteCommandResultSchema, newUlid } from "@mosoo/contracts";
import { planCompensation } from "@mosoo/effect-reconciliation/host";
import { recordIntent } from "../../ledger/application/effect-intent.service.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { isTerminalCommandStatus } from "../../ledger/domain/command-lifecycle.machine.js";
import { storedResultIsToolError } from "../../ledger/domain/stored-result.js";
import { commandTables, driverInstanceTables } from "../../ledger/application/owned-tables.port.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import { operatorActionRepository } from "../infrastructure/operator-action.repository.js";
import { operatorQueryRepository } from "../infrastructure/operator-query.repository.js";
import type { OperatorCompensateRequest, QueuedCompensation } from "@mosoo/contracts";
import type { ReconciliationSettings } from "../../reconciliation/application/reconciliation-settings.config.js";

/**
 * The compensation of `effectId` that blocks another one, if any (never two
 * undo writes for one effect): one that may still write or may have written (`executing`,
 * `unknown`, or `intent` while its command can still be delivered), or one that undid it
 * (`succeeded` with a result that is not an error). A compensation confirmed `not_executed`, one
 * whose command ended before any claim (it can never be dispatched: the claim refuses a terminal
 * command), and one the provider answered with an error result do not block.
 */
async function blockingCompensation(tx: StoreTx, effectId: string): Promise<EffectRow | undefined> {
  for (const c of await operatorQueryRepository.listCompensations(tx, effectId)) {
    if (c.status === "executing" || c.status === "unknown") return c;
    if (c.status === "intent") {
      const cmd = await commandTables().findById(tx, c.commandId);
      if (cmd !== undefined && !isTerminalCommandStatus(cmd.status)) return c;
    }
    if (c.status === "succeeded" && storedResultIsToolError(c.resultJson) !== true) return c;
  }
  return undefined;
}

/**
 * Compensation as an explicit, per-tool capability (docs/DESIGN.md §3 rule 8): only an operator starts
 * it, only on a `succeeded` effect, only when the adapter bound to the effect's server declares a
 * compensating action for its tool. The compensation is itself an external write: a new effect
 * with its own idempotency key, linked to the original (`compensates_effect_id`), queued as an
 * `mcp.execute` to a live Driver instance and run through the same ledger (claim, fence, lookup).
 * Nothing here infers a rollback from a tool's name or annotations, and nothing retries it.
 */
export class CompensationService {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly settings: ReconciliationSettings,
  ) {}

  /**
   * Plans (through the adapter, within the lookup timeout) and queues the compensation of
   * `effectId` for `actor` (the operator credential's name, recorded in the audit row). The command,
   * the effect's intent, the run event and the audit row commit in one transaction; a refusal writes nothing.
   * @throws UserFacingError `effect.not_found`; `effect.not_succeeded` (409); `compensation.not_declared`
   *   (409: no adapter bound, or it declares no compensation for the tool); `compensation.exists`
   *   (409: a compensation is in flight or already undid it, see {@link blockingCompensation};
   *   `details.compensationEffectId`, `details.status`);
   *   `compensation.plan_failed` (409: the adapter could not plan it); `driver.not_found`;
   *   `compensation.driver_unavailable` (409: the target Driver instance is finalizing or finalized).
   */
  async compensate(effectId: string, req: OperatorCompensateRequest, actor: string): Promise<QueuedCompensation> {
    const original = await this.ctx.store.read(async (tx) => {
      const row = await effectRows.findById(tx, effectId);
      if (!row) throw new UserFacingError("effect.not_found", `no effect ${effectId}`);
      this.assertCompensable(row);
      await this.assertNotCompensated(tx, row);
      return row;
    });
    const adapter = this.settings.enabled ? this.settings.bindings.get(original.serverId) : undefined;
    if (!adapter?.declaration.compensations?.[original.toolName]) {
      throw new UserFacingError(
        "compensation.not_declared",
        `no adapter bound to server ${original.serverId} declares a compensating action for ${original.toolName}`,
      );
    }
    const result = McpExecuteCommandResultSchema.parse(JSON.parse(original.resultJson ?? "null"));
    const plan = await planCompensation({
      adapter,
      request: {
        effectId: original.id,
        serverId: original.serverId,
        toolName: original.toolName,
        idempotencyKey: original.idempotencyKey,
        arguments: JSON.parse(original.argumentsJson) as Record<string, unknown>,
        result: { outputText: result.outputText, ...(result.isError ? { isError: true } : {}) },
      },
      timeoutMs: this.settings.lookupTimeoutMs,
      logger: this.ctx.logger.child({ effectId: original.id }),
    });
    if (plan.kind === "refused") throw new UserFacingError(plan.code, plan.message, { adapterId: plan.adapter.id });
    const argumentsJson = JSON.stringify(plan.arguments);
    let requestFingerprint: string;
    try {
      requestFingerprint = fingerprintArguments(plan.arguments);
    } catch (err) {
      throw new UserFacingError(
        "compensation.plan_failed",
        `planned arguments are not canonical JSON (${err instanceof Error ? err.message : String(err)})`,
      );
    }
    const now = this.ctx.clock.nowMs();
    const queued = await this.queue(original.id, req, actor, plan.toolName, argumentsJson, requestFingerprint, now);
    this.ctx.logger.info(
      {
        effectId,
        compensationEffectId: queued.compensationEffectId,
        commandId: queued.commandId,
        driverInstanceId: queued.driverInstanceId,
        actor,
        toolName: plan.toolName,
      },
      "operator.compensation_queued",
    );
    this.ctx.notifier.notifyCommitted(queued.driverInstanceId);
    return queued;
  }

  private assertCompensable(effect: EffectRow): void {
    if (effect.status !== "succeeded") {
      throw new UserFacingError(
        "effect.not_succeeded",
        `effect ${effect.id} is ${effect.status}; only a succeeded effect can be compensated`,
      );
    }
  }

  private async assertNotCompensated(tx: StoreTx, effect: EffectRow): Promise<void> {
    const blocking = await blockingCompensation(tx, effect.id);
    if (blocking) {
      const what = blocking.status === "succeeded" ? "was already compensated by" : "has a compensation in flight:";
      throw new UserFacingError("compensation.exists", `effect ${effect.id} ${what} ${blocking.id} (${blocking.status})`, {
        compensationEffectId: blocking.id,
        status: blocking.status,
      });
    }
  }

  private async queue(
    effectId: string,
    req: OperatorCompensateRequest,
    actor: string,
    toolName: string,
    argumentsJson: string,
    requestFingerprint: string,
    now: number,
  ): Promise<QueuedCompensation> {
    try {
      return await this.ctx.store.transaction(async (tx) => {
        // Re-read inside the transaction: the effect and the Driver may have changed while the adapter planned.
        const original = await effectRows.findById(tx, effectId);
        if (!original) throw new UserFacingError("effect.not_found", `no effect ${effectId}`);
        this.assertCompensable(original);
        await this.assertNotCompensated(tx, original);
        const driverInstanceId = req.driverInstanceId ?? original.driverInstanceId;
        const driver = await driverInstanceTables().findById(tx, driverInstanceId);
        if (!driver) throw new UserFacingError("driver.not_found", `no Driver instance ${driverInstanceId}`);
        if (driver.status === "finalizing" || driver.status === "finalized") {
          throw new UserFacingError(
            "compensation.driver_unavailable",
            `Driver instance ${driverInstanceId} is ${driver.status}; pass the id of a live Driver whose MCP config has server ${original.serverId}`,
            { driverInstanceId },
          );
        }
        const recorded = await recordIntent(tx, {
          runId: original.runId,
          driverInstanceId,
          serverId: original.serverId,
          toolName,
          clientToolCallId: null,
          argumentsJson,
          requestFingerprint,
          compensatesEffectId: original.id,
          sessionId: original.sessionId,
          nowMs: now,
        });
        await operatorActionRepository.insert(tx, {
          id: newUlid(now),
          effectId: original.id,
          runId: original.runId,
          driverInstanceId: original.driverInstanceId,
          action: "compensate",
          actor,
          reason: req.reason,
          outcome: "queued",
          statusBefore: original.status,
          statusAfter: original.status,
          compensationEffectId: recorded.effectId,
          createdAtMs: now,
        });
        // the Driver's long-poll wakes when this commits, on whichever API instance holds it (see `PgCommandWakeups` in pg-command-wakeups.ts)
        await this.ctx.notifier.notifyInTransaction(tx, driverInstanceId);
        return {
          compensationEffectId: recorded.effectId,
          commandId: recorded.commandId,
          idempotencyKey: recorded.idempotencyKey,
          driverInstanceId,
          toolName,
        };
      });
    } catch (err) {
      // a unique violation here: a second compensation of one effect in flight
      if (this.ctx.store.isUniqueViolation(err))
        throw new UserFacingError("compensation.exists", `effect ${effectId} got a compensation meanwhile; read it again`);
      throw err;
    }
  }
}
