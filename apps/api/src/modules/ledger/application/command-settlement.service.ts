// Ends a command from its effect's settled state (completed or failed, with its run event), for every module that settles commands.
import { commandDriverTerminalError, effectNotExecutedError, effectUnknownError } from "@mosoo/contracts";
import { commandTables, runTables, type CommandRow } from "./owned-tables.port.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { EffectRow } from "../infrastructure/effect.repository.js";

// How a command ends from its effect's settled state: the ledger's API for every module that settles
// commands (finalization repair, late evidence, a reconciliation outcome's transaction).

/**
 * Completes a non-terminal command with its effect's stored result (compare-and-set) and records
 * `tool_call.completed`. Returns false when the command changed meanwhile.
 */
async function completeCommandFromEffect(
  tx: StoreTx,
  cmd: CommandRow,
  resultJson: string,
  nowMs: number,
  effectId: string,
): Promise<boolean> {
  if (!(await commandTables().transition(tx, cmd.id, cmd.status, "completed", nowMs, { terminal: true, resultJson }))) return false;
  await runTables().appendEvent(
    tx,
    cmd.runId,
    "tool_call.completed",
    { commandId: cmd.id, effectId, result: JSON.parse(resultJson) as unknown },
    nowMs,
  );
  return true;
}

/** Fails a non-terminal command with `error` (compare-and-set) and records `tool_call.failed`. */
export async function failCommand(tx: StoreTx, cmd: CommandRow, error: object, nowMs: number, effectId: string | null): Promise<boolean> {
  if (!(await commandTables().transition(tx, cmd.id, cmd.status, "failed", nowMs, { terminal: true, errorJson: JSON.stringify(error) })))
    return false;
  await runTables().appendEvent(tx, cmd.runId, "tool_call.failed", { commandId: cmd.id, effectId, error }, nowMs);
  return true;
}

/**
 * Ends a non-terminal command from its effect's settled state (compare-and-set; false when the
 * command was already terminal): `succeeded` → `completed` with the stored result; `not_executed`
 * → failed `external_effect.not_executed`; `unknown` → failed `external_effect.unknown`
 * (`retryable: false`, `details.effectIds`; docs/DESIGN.md §3 rule 14, flag on or off, bound or not);
 * anything else (never dispatched) → failed `driver.command_driver_terminal`. Used by the repair
 * and inside a reconciliation outcome's transaction. `command`: the effect's command as the caller
 * read it earlier in this same transaction (then it is not read again; a caller that read many at
 * once saves a statement per command); default: read here. Either way the write is a
 * compare-and-set on the status read.
 * @throws Error when `command` is given and is not the effect's command.
 */
export async function settleCommandFromEffect(tx: StoreTx, effect: EffectRow, nowMs: number, command?: CommandRow): Promise<boolean> {
  if (command !== undefined && command.id !== effect.commandId)
    throw new Error(`command ${command.id} is not the command of effect ${effect.id}`);
  const cmd = command ?? (await commandTables().findById(tx, effect.commandId));
  if (!cmd || ["completed", "failed", "expired", "cancelled"].includes(cmd.status)) return false;
  switch (effect.status) {
    case "succeeded":
      return await completeCommandFromEffect(tx, cmd, effect.resultJson ?? "null", nowMs, effect.id);
    case "not_executed":
      return await failCommand(tx, cmd, effectNotExecutedError(effect.id, { resolution: effect.resolution }), nowMs, effect.id);
    case "unknown":
      return await failCommand(
        tx,
        cmd,
        effectUnknownError(effect.id, { lookupCount: effect.lookupCount, nextLookupAtMs: effect.nextLookupAtMs }),
        nowMs,
        effect.id,
      );
    default:
      return await failCommand(tx, cmd, commandDriverTerminalError({ effectId: effect.id, effectStatus: effect.status }), nowMs, effect.id);
  }
}
