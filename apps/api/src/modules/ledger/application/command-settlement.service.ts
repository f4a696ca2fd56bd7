// Ends a command from its effect's settled state (completed or failed, with its run event), for every module that settles commands.
import { commandDriverTerminalError, effectNotExecutedError, effectUnknownError } from "@mosoo/contracts";
import { commandTables, runTables, type CommandRow } from "./owned-tables.port.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { EffectRow, SettlingEffect } from "../infrastructure/effect.repository.js";

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

/** How a command ends from its effect: `completed` with the stored result, or `failed` with an error (see {@link settleCommandFromEffect}). */
type CommandEnd = { to: "completed"; resultJson: string; effectId: string } | { to: "failed"; error: object; effectId: string | null };

/**
 * The end of a command from its effect's state: `succeeded` → `completed` with the stored result;
 * `not_executed` → failed `external_effect.not_executed`; `unknown` → failed `external_effect.unknown`
 * (`retryable: false`, `details.effectIds`; docs/DESIGN.md §3 rule 14, flag on or off, bound or not);
 * anything else, or no effect (never dispatched) → failed `driver.command_driver_terminal` (its details
 * name the effect, when there is one).
 */
function commandEndFromEffect(effect: SettlingEffect | undefined): CommandEnd {
  if (effect === undefined) return { to: "failed", error: commandDriverTerminalError({}), effectId: null };
  switch (effect.status) {
    case "succeeded":
      return { to: "completed", resultJson: effect.resultJson ?? "null", effectId: effect.id };
    case "not_executed":
      return { to: "failed", error: effectNotExecutedError(effect.id, { resolution: effect.resolution }), effectId: effect.id };
    case "unknown":
      return {
        to: "failed",
        error: effectUnknownError(effect.id, { lookupCount: effect.lookupCount, nextLookupAtMs: effect.nextLookupAtMs }),
        effectId: effect.id,
      };
    default:
      return { to: "failed", error: commandDriverTerminalError({ effectId: effect.id, effectStatus: effect.status }), effectId: effect.id };
  }
}

/** True for a command status with a terminal receipt. */
function isTerminal(status: CommandRow["status"]): boolean {
  return ["completed", "failed", "expired", "cancelled"].includes(status);
}

/**
 * Ends a non-terminal command from its effect's settled state (compare-and-set; false when the
 * command was already terminal), as {@link commandEndFromEffect} says. Used inside a reconciliation
 * outcome's transaction and by the repair for one effect. `command`: the effect's command as the caller
 * read it earlier in this same transaction (then it is not read again); default: read here. Either way
 * the write is a compare-and-set on the status read.
 * @throws Error when `command` is given and is not the effect's command.
 */
export async function settleCommandFromEffect(tx: StoreTx, effect: EffectRow, nowMs: number, command?: CommandRow): Promise<boolean> {
  if (command !== undefined && command.id !== effect.commandId)
    throw new Error(`command ${command.id} is not the command of effect ${effect.id}`);
  const cmd = command ?? (await commandTables().findById(tx, effect.commandId));
  if (!cmd || isTerminal(cmd.status)) return false;
  const end = commandEndFromEffect(effect);
  return end.to === "completed"
    ? await completeCommandFromEffect(tx, cmd, end.resultJson, nowMs, end.effectId)
    : await failCommand(tx, cmd, end.error, nowMs, end.effectId);
}

/**
 * {@link settleCommandFromEffect} for many commands in one transaction (the finalization repair's step 2):
 * each `command` (as the caller read it in this transaction) ends from its `effect` (undefined: none) as
 * {@link commandEndFromEffect} says, each a compare-and-set on the status read, in at most two multi-row
 * UPDATEs (the completed ones, the failed ones); then the `tool_call.completed` / `tool_call.failed` event of
 * each command that changed, in the order given (one `seq` reservation per run). Returns, per item in order,
 * what it became (`completed`, `failed`) or null (already terminal, or changed meanwhile: nothing written).
 * @throws Error when an item's effect is not its command's.
 */
export async function settleCommandsFromEffects(
  tx: StoreTx,
  items: ReadonlyArray<{ command: Pick<CommandRow, "id" | "status" | "runId">; effect: SettlingEffect | undefined }>,
  nowMs: number,
): Promise<Array<"completed" | "failed" | null>> {
  const ends = items.map(({ command, effect }) => {
    if (effect !== undefined && command.id !== effect.commandId)
      throw new Error(`command ${command.id} is not the command of effect ${effect.id}`);
    return isTerminal(command.status) ? null : commandEndFromEffect(effect);
  });
  const completions: Array<{ id: string; from: CommandRow["status"]; json: string }> = [];
  const failures: Array<{ id: string; from: CommandRow["status"]; json: string }> = [];
  ends.forEach((end, i) => {
    const { id, status: from } = items[i]!.command;
    if (end?.to === "completed") completions.push({ id, from, json: end.resultJson });
    else if (end?.to === "failed") failures.push({ id, from, json: JSON.stringify(end.error) });
  });
  const changed = new Set<string>();
  if (completions.length > 0)
    for (const id of await commandTables().transitionManyToTerminal(tx, "completed", "resultJson", completions, nowMs)) changed.add(id);
  if (failures.length > 0)
    for (const id of await commandTables().transitionManyToTerminal(tx, "failed", "errorJson", failures, nowMs)) changed.add(id);
  const events: Array<{ runId: string; type: "tool_call.completed" | "tool_call.failed"; payload: Record<string, unknown> }> = [];
  const settled = ends.map((end, i) => {
    const cmd = items[i]!.command;
    if (end === null || !changed.has(cmd.id)) return null;
    events.push(
      end.to === "completed"
        ? {
            runId: cmd.runId,
            type: "tool_call.completed",
            payload: { commandId: cmd.id, effectId: end.effectId, result: JSON.parse(end.resultJson) as unknown },
          }
        : { runId: cmd.runId, type: "tool_call.failed", payload: { commandId: cmd.id, effectId: end.effectId, error: end.error } },
    );
    return end.to;
  });
  if (events.length > 0) await runTables().appendEvents(tx, events, nowMs);
  return settled;
}
