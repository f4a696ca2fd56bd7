import { fingerprintArguments, McpExecuteCommandResultSchema, newUlid } from "@mosoo/contracts";
import { planCompensation } from "@mosoo/effect-reconciliation";
import { writeTransaction } from "../../../platform/db/database.js";
import { recordIntent } from "../../ledger/application/effect-intent.js";
import type { RuntimeContext } from "../../ledger/application/runtime-context.js";
import { RuntimeError } from "../../ledger/domain/runtime-errors.js";
import { isTerminalCommandStatus } from "../../ledger/domain/command-lifecycle.machine.js";
import { commandRepository } from "../../ledger/infrastructure/command.repository.js";
import type { DbHandle } from "../../ledger/infrastructure/db-handle.js";
import { driverInstanceRepository } from "../../ledger/infrastructure/driver-instance.repository.js";
import { effectRepository, type EffectRow } from "../../ledger/infrastructure/effect.repository.js";
import { operatorActionRepository } from "../infrastructure/operator-action.repository.js";
import { operatorQueryRepository } from "../infrastructure/operator-query.repository.js";
import type { OperatorCompensateRequest } from "./operator.contract.js";
import type { ReconciliationSettings } from "../../reconciliation/application/reconciliation-settings.js";

/** A queued compensation: the new effect, its command, and the Driver instance that will run it (ULIDs). */
export interface QueuedCompensation {
  compensationEffectId: string;
  commandId: string;
  idempotencyKey: string;
  driverInstanceId: string;
  toolName: string;
}

/** True for a SQLite unique-constraint failure (here: a second compensation of one effect in flight). */
function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "SQLITE_CONSTRAINT_UNIQUE";
}

/**
 * The compensation of `effectId` that blocks another one, if any (docs/DESIGN.md §3 rule 8: never two
 * undo writes for one effect): one that may still write or may have written (`executing`,
 * `unknown`, or `intent` while its command can still be delivered), or one that undid it
 * (`succeeded` with a result that is not an error). A compensation confirmed `not_executed`, one
 * whose command ended before any claim (it can never be dispatched: the claim refuses a terminal
 * command), and one the provider answered with an error result do not block.
 */
function blockingCompensation(db: DbHandle, effectId: string): EffectRow | undefined {
  return operatorQueryRepository.listCompensations(db, effectId).find((c) => {
    if (c.status === "executing" || c.status === "unknown") return true;
    if (c.status === "intent") {
      const cmd = commandRepository.findById(db, c.commandId);
      return cmd !== undefined && !isTerminalCommandStatus(cmd.status);
    }
    if (c.status === "succeeded") return McpExecuteCommandResultSchema.safeParse(JSON.parse(c.resultJson ?? "null")).data?.isError !== true;
    return false;
  });
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
   * `effectId`. The command, the effect's intent, the run event and the audit row commit in one
   * transaction; a refusal writes nothing.
   * @throws RuntimeError `effect.not_found`; `effect.not_succeeded` (409); `compensation.not_declared`
   *   (409: no adapter bound, or it declares no compensation for the tool); `compensation.exists`
   *   (409: a compensation is in flight or already undid it, see {@link blockingCompensation};
   *   `details.compensationEffectId`, `details.status`);
   *   `compensation.plan_failed` (409: the adapter could not plan it); `driver.not_found`;
   *   `compensation.driver_unavailable` (409: the target Driver instance is finalizing or finalized).
   */
  async compensate(effectId: string, req: OperatorCompensateRequest): Promise<QueuedCompensation> {
    const original = effectRepository.findById(this.ctx.db, effectId);
    if (!original) throw new RuntimeError("effect.not_found", `no effect ${effectId}`);
    this.assertCompensable(original);
    this.assertNotCompensated(this.ctx.db, original);
    const adapter = this.settings.enabled ? this.settings.bindings.get(original.serverId) : undefined;
    if (!adapter?.declaration.compensations?.[original.toolName]) {
      throw new RuntimeError(
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
    if (plan.kind === "refused") throw new RuntimeError(plan.code, plan.message, { adapterId: plan.adapter.id });
    const argumentsJson = JSON.stringify(plan.arguments);
    let requestFingerprint: string;
    try {
      requestFingerprint = fingerprintArguments(plan.arguments);
    } catch (err) {
      throw new RuntimeError(
        "compensation.plan_failed",
        `planned arguments are not canonical JSON (${err instanceof Error ? err.message : String(err)})`,
      );
    }
    const now = this.ctx.clock.nowMs();
    const queued = this.queue(original.id, req, plan.toolName, argumentsJson, requestFingerprint, now);
    this.ctx.logger.info(
      {
        effectId,
        compensationEffectId: queued.compensationEffectId,
        commandId: queued.commandId,
        driverInstanceId: queued.driverInstanceId,
        actor: req.actor,
        toolName: plan.toolName,
      },
      "operator.compensation_queued",
    );
    this.ctx.notifier.notify(queued.driverInstanceId);
    return queued;
  }

  private assertCompensable(effect: EffectRow): void {
    if (effect.status !== "succeeded") {
      throw new RuntimeError("effect.not_succeeded", `effect ${effect.id} is ${effect.status}; only a succeeded effect can be compensated`);
    }
  }

  private assertNotCompensated(db: DbHandle, effect: EffectRow): void {
    const blocking = blockingCompensation(db, effect.id);
    if (blocking) {
      const what = blocking.status === "succeeded" ? "was already compensated by" : "has a compensation in flight:";
      throw new RuntimeError("compensation.exists", `effect ${effect.id} ${what} ${blocking.id} (${blocking.status})`, {
        compensationEffectId: blocking.id,
        status: blocking.status,
      });
    }
  }

  private queue(
    effectId: string,
    req: OperatorCompensateRequest,
    toolName: string,
    argumentsJson: string,
    requestFingerprint: string,
    now: number,
  ): QueuedCompensation {
    try {
      return writeTransaction(this.ctx.db, (tx) => {
        // Re-read inside the transaction: the effect and the Driver may have changed while the adapter planned.
        const original = effectRepository.findById(tx, effectId);
        if (!original) throw new RuntimeError("effect.not_found", `no effect ${effectId}`);
        this.assertCompensable(original);
        this.assertNotCompensated(tx, original);
        const driverInstanceId = req.driverInstanceId ?? original.driverInstanceId;
        const driver = driverInstanceRepository.findById(tx, driverInstanceId);
        if (!driver) throw new RuntimeError("driver.not_found", `no Driver instance ${driverInstanceId}`);
        if (driver.status === "finalizing" || driver.status === "finalized") {
          throw new RuntimeError(
            "compensation.driver_unavailable",
            `Driver instance ${driverInstanceId} is ${driver.status}; pass the id of a live Driver whose MCP config has server ${original.serverId}`,
            { driverInstanceId },
          );
        }
        const recorded = recordIntent(tx, {
          runId: original.runId,
          driverInstanceId,
          serverId: original.serverId,
          toolName,
          clientToolCallId: null,
          argumentsJson,
          requestFingerprint,
          compensatesEffectId: original.id,
          nowMs: now,
        });
        operatorActionRepository.insert(tx, {
          id: newUlid(now),
          effectId: original.id,
          runId: original.runId,
          driverInstanceId: original.driverInstanceId,
          action: "compensate",
          actor: req.actor,
          reason: req.reason,
          outcome: "queued",
          statusBefore: original.status,
          statusAfter: original.status,
          compensationEffectId: recorded.effectId,
          createdAtMs: now,
        });
        return {
          compensationEffectId: recorded.effectId,
          commandId: recorded.commandId,
          idempotencyKey: recorded.idempotencyKey,
          driverInstanceId,
          toolName,
        };
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new RuntimeError("compensation.exists", `effect ${effectId} got a compensation meanwhile; read it again`);
      throw err;
    }
  }
}
