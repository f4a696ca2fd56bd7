// Reads, inside the caller's transaction, what the ledger holds about every tool call of a run (the turn's account's input).
import { commandTables, type CommandRow } from "./owned-tables.port.js";
import { effectRepository, type EffectRow } from "../infrastructure/effect.repository.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { TurnToolCallFacts } from "../domain/turn-account.js";

/** The `code` of a command's stored error JSON, or null (none, or not an object with a string code). */
function errorCode(errorJson: string | null): string | null {
  if (!errorJson) return null;
  try {
    const code = (JSON.parse(errorJson) as { code?: unknown } | null)?.code;
    return typeof code === "string" ? code : null;
  } catch {
    return null;
  }
}

/**
 * One {@link TurnToolCallFacts} per effect of run `runId` (every `mcp.execute` of the turn has one:
 * see `recordIntent` in effect-intent.service.ts), with its command's seq, status and error code and whether a compensation
 * of it succeeded (compensations are effects of the same run). Reads only, through `tx`: call it in
 * the transaction that ends the run, so the account is the ledger's, never the caller's memory.
 */
export async function readTurnToolCallFacts(tx: StoreTx, runId: string): Promise<TurnToolCallFacts[]> {
  const commands = new Map((await commandTables().listByRun(tx, runId)).map((c) => [c.id, c]));
  const effects = await effectRepository.listByRun(tx, runId);
  const compensated = new Set(effects.filter((e) => e.compensatesEffectId && e.status === "succeeded").map((e) => e.compensatesEffectId));
  return effects.map((e) => toolCallFacts(e, commands.get(e.commandId), compensated.has(e.id)));
}

/**
 * The {@link TurnToolCallFacts} of effect `e` and its command `cmd` (undefined when the command row is
 * not there: then `queued`, last in order); `compensated` says whether a compensation of it succeeded.
 * Pure.
 */
export function toolCallFacts(e: EffectRow, cmd: CommandRow | undefined, compensated: boolean): TurnToolCallFacts {
  return {
    seq: cmd?.seq ?? Number.MAX_SAFE_INTEGER,
    toolCallId: e.toolCallId,
    serverId: e.serverId,
    toolName: e.toolName,
    effectId: e.id,
    effectStatus: e.status,
    commandStatus: cmd?.status ?? "queued",
    commandErrorCode: errorCode(cmd?.errorJson ?? null),
    compensated,
    compensatesEffectId: e.compensatesEffectId ?? null,
  };
}
