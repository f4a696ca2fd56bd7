// One batch of the finalization repair's step 2: ends commands no lookup settles, each judged on its own rows, in the caller's transaction.
import type { EffectStatus, FinalizationSummary } from "@mosoo/contracts";
import { commandDriverTerminalError } from "@mosoo/contracts";
import { failCommand, settleCommandFromEffect } from "../../ledger/application/command-settlement.service.js";
import type { CommandSettlement } from "../../ledger/application/effect-reconciliation.port.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import { isTerminalCommandStatus } from "../../ledger/domain/command-lifecycle.machine.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { commandRepository } from "../infrastructure/command.repository.js";

/**
 * Commands the repair ends per transaction in step 2: one commit (one fsync) per batch instead of
 * one per command, small enough that the lookups' outcome transactions interleave with the batches.
 */
export const SETTLE_BATCH = 64;

/**
 * A command the repair ends from its effect (`effectId`; null: it has none). The effect is read again
 * in the batch's transaction unless `effect` is given, which must then have been read in that same
 * transaction (so it is the row as it is).
 */
export interface CommandToSettle {
  commandId: string;
  effectId: string | null;
  effect?: EffectRow;
}

/** A log line built inside a transaction and written after its commit. */
export interface RepairLogLine {
  level: "info" | "warn";
  fields: Record<string, unknown>;
  msg: string;
}

/**
 * Ends one command in `tx` from its rows as they are now: with an effect, from the effect's state
 * ({@link settleCommandFromEffect}: `unknown` here has no eligible adapter or is not due, so failed
 * `external_effect.unknown`, never a resend; `intent`: failed `driver.command_driver_terminal`);
 * without one, failed `driver.command_driver_terminal`. Every write is a compare-and-set: a command
 * that ended meanwhile is left alone (`settled` null). `effectStatus`: the effect's status as read.
 */
async function settleOneCommand(
  tx: StoreTx,
  item: CommandToSettle,
  nowMs: number,
): Promise<{ settled: CommandSettlement; effectStatus?: EffectStatus }> {
  if (item.effectId !== null) {
    const effect = item.effect ?? (await effectRows.findById(tx, item.effectId));
    if (!effect) return { settled: null };
    const ended = await settleCommandFromEffect(tx, effect, nowMs);
    return { settled: ended ? (effect.status === "succeeded" ? "completed" : "failed") : null, effectStatus: effect.status };
  }
  const cmd = await commandRepository.findById(tx, item.commandId);
  if (!cmd || isTerminalCommandStatus(cmd.status)) return { settled: null };
  return { settled: (await failCommand(tx, cmd, commandDriverTerminalError({}), nowMs, null)) ? "failed" : null };
}

/**
 * Ends the commands of `batch` (at most {@link SETTLE_BATCH}) of Driver instance `driverInstanceId`
 * in `tx`, at `nowMs` (ms since the epoch): each command's terminal state and its run event in this
 * one transaction, each judged on its own ({@link settleOneCommand}), so one that ended meanwhile
 * changes nothing and the others are still ended. Returns the command counts (`commandsCompleted`,
 * `commandsFailed`; the other counts zero) and a `command.repaired` log line per command; build them
 * inside the unit of work so that one run again (PostgreSQL after a serialization failure) counts once.
 */
export async function settleBatch(
  tx: StoreTx,
  driverInstanceId: string,
  batch: readonly CommandToSettle[],
  nowMs: number,
): Promise<Pick<FinalizationSummary, "commandsCompleted" | "commandsFailed"> & { logs: RepairLogLine[] }> {
  const done = { commandsCompleted: 0, commandsFailed: 0, logs: [] as RepairLogLine[] };
  for (const item of batch) {
    const { settled, effectStatus } = await settleOneCommand(tx, item, nowMs);
    if (settled === "completed") done.commandsCompleted += 1;
    else if (settled === "failed") done.commandsFailed += 1;
    done.logs.push({
      level: "info",
      fields: { driverInstanceId, commandId: item.commandId, effectId: item.effectId ?? undefined, effectStatus },
      msg: "command.repaired",
    });
  }
  return done;
}
