import { commandDriverTerminalError, turnInterruptedError, type FinalizationSummary } from "@mosoo/contracts";
import { RuntimeError } from "../domain/runtime-errors.js";
import { commandRepository, type CommandRow } from "../infrastructure/command.repository.js";
import { driverInstanceRepository } from "../infrastructure/driver-instance.repository.js";
import { effectRepository } from "../infrastructure/effect.repository.js";
import { runRepository } from "../infrastructure/run.repository.js";
import type { DbHandle } from "../infrastructure/db-handle.js";
import { fenceExecutingEffect } from "./effect-ledger.service.js";
import type { RuntimeContext } from "./runtime-context.js";

/** Why a Driver instance is being finalized: its own request, the sweep (heartbeat expired), or an operator. */
export type FinalizationTrigger = "driver_request" | "heartbeat_expired" | "operator";

/** A summary with every count at zero. */
export function emptyFinalizationSummary(): FinalizationSummary {
  return { effectsFenced: 0, commandsCompleted: 0, commandsFailed: 0, runsFailed: 0, effectsReconciled: 0 };
}

/**
 * Completes a non-terminal command with its effect's stored result (compare-and-set) and records
 * `tool_call.completed`. Returns false when the command changed meanwhile.
 */
export function completeCommandFromEffect(tx: DbHandle, cmd: CommandRow, resultJson: string, nowMs: number, effectId: string): boolean {
  if (!commandRepository.transition(tx, cmd.id, cmd.status, "completed", nowMs, { terminal: true, resultJson })) return false;
  runRepository.appendEvent(tx, cmd.runId, "tool_call.completed", { commandId: cmd.id, effectId, result: JSON.parse(resultJson) as unknown }, nowMs);
  return true;
}

/** Fails a non-terminal command with `error` (compare-and-set) and records `tool_call.failed`. */
export function failCommand(tx: DbHandle, cmd: CommandRow, error: object, nowMs: number, effectId: string | null): boolean {
  if (!commandRepository.transition(tx, cmd.id, cmd.status, "failed", nowMs, { terminal: true, errorJson: JSON.stringify(error) })) return false;
  runRepository.appendEvent(tx, cmd.runId, "tool_call.failed", { commandId: cmd.id, effectId, error }, nowMs);
  return true;
}

/**
 * Driver finalization repair (DESIGN.md §3 rule 10): the one path every ending of a Driver goes
 * through (its own finalize request, heartbeat expiry found by the sweep, an operator).
 * 1. fence: every `executing` effect of the instance becomes `unknown`;
 * 2. every command without a terminal receipt ends: `completed` with the stored result when its
 *    effect `succeeded`, else `failed` `driver.command_driver_terminal` (details name the effect);
 * 3. the instance's active run fails with `runtime.turn_interrupted` and exactly one terminal
 *    `run.failed` event.
 * Idempotent: a second run changes nothing more and reports zeros. Crash-safe: the instance stays
 * `finalizing` until the last step commits, and the sweep resumes such instances.
 */
export class FinalizationRepairService {
  constructor(private readonly ctx: RuntimeContext) {}

  /**
   * Runs the repair for `driverInstanceId`.
   * @returns counts of what changed (all zero when it was already finalized).
   * @throws RuntimeError `driver.not_found`.
   */
  async finalize(driverInstanceId: string, trigger: FinalizationTrigger): Promise<FinalizationSummary> {
    const summary = emptyFinalizationSummary();
    const started = this.fenceAndSettle(driverInstanceId, summary);
    if (!started) return summary;
    this.failActiveRunAndClose(driverInstanceId, summary);
    this.ctx.logger.info({ driverInstanceId, trigger, ...summary }, "driver.finalized");
    return summary;
  }

  private fenceAndSettle(driverInstanceId: string, summary: FinalizationSummary): boolean {
    const now = this.ctx.clock.nowMs();
    return this.ctx.db.transaction((tx) => {
      const instance = driverInstanceRepository.findById(tx, driverInstanceId);
      if (!instance) throw new RuntimeError("driver.not_found", `no Driver instance ${driverInstanceId}`);
      if (instance.status === "finalized") return false;
      driverInstanceRepository.updateIfStatus(tx, driverInstanceId, ["registered", "connected", "finalizing"], { status: "finalizing", connectionId: null });
      for (const eff of effectRepository.listOfDriverInStatus(tx, driverInstanceId, ["executing"])) {
        if (fenceExecutingEffect(tx, eff, "driver_finalized", now)) {
          summary.effectsFenced += 1;
          this.ctx.logger.warn({ driverInstanceId, effectId: eff.id, commandId: eff.commandId }, "effect.fenced");
        }
      }
      for (const cmd of commandRepository.listNonTerminalOfDriver(tx, driverInstanceId)) {
        const eff = effectRepository.findByCommand(tx, cmd.id);
        if (eff?.status === "succeeded" && eff.resultJson !== null) {
          if (completeCommandFromEffect(tx, cmd, eff.resultJson, now, eff.id)) summary.commandsCompleted += 1;
        } else {
          const error = commandDriverTerminalError(eff ? { effectId: eff.id, effectStatus: eff.status } : {});
          if (failCommand(tx, cmd, error, now, eff?.id ?? null)) summary.commandsFailed += 1;
        }
        this.ctx.logger.info({ driverInstanceId, commandId: cmd.id, effectId: eff?.id, effectStatus: eff?.status }, "command.repaired");
      }
      return true;
    });
  }

  private failActiveRunAndClose(driverInstanceId: string, summary: FinalizationSummary): void {
    const now = this.ctx.clock.nowMs();
    this.ctx.db.transaction((tx) => {
      const run = runRepository.findActiveRunOfDriver(tx, driverInstanceId);
      if (run) {
        const error = turnInterruptedError({ driverInstanceId });
        if (runRepository.transitionRun(tx, run.id, "active", "failed", now, JSON.stringify(error))) {
          runRepository.appendEvent(tx, run.id, "run.failed", { error }, now);
          summary.runsFailed += 1;
        }
      }
      driverInstanceRepository.updateIfStatus(tx, driverInstanceId, ["finalizing"], { status: "finalized", finalizedAtMs: now });
    });
  }
}
