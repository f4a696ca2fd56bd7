// How one `mcp.execute` command ends: its terminal `commandUpdate` (`completed` / `failed`), and the fence (`effectMarkUnknown`) before a failure.
import {
  effectNotExecutedError,
  effectUnknownError,
  type CommandUpdateRequest,
  type McpExecuteCommandResult,
  type RunError,
} from "@mosoo/contracts";
import type { Logger } from "pino";
import type { McpExecuteHandlerDeps, McpExecuteOutcome } from "./mcp-execute.contract.js";
import { truncate } from "./mcp-tool-result.service.js";

/**
 * The command error for an MCP server the Driver cannot use before calling it (`mcp.server_unavailable`).
 * The provider never ran: the effect stays `intent`. `details` carry `serverId` and `reason`.
 * @param retryable false when the server is not configured (retrying cannot help), true when the connect failed.
 */
export function serverUnavailableError(serverId: string, reason: string, message: string, retryable: boolean): RunError {
  return { code: "mcp.server_unavailable", message: truncate(message, 2000), retryable, details: { serverId, reason } };
}

/**
 * Fences the effect (`effectMarkUnknown` with `reason`, logged `effect.marked_unknown`), then fails the
 * command `external_effect.unknown` (or `external_effect.not_executed` when the API says so).
 */
export async function markUnknownAndFail(
  deps: McpExecuteHandlerDeps,
  log: Logger,
  commandId: string,
  effectId: string,
  attempt: number,
  reason: string,
): Promise<McpExecuteOutcome> {
  const marked = await deps.api.call("effectMarkUnknown", {
    params: { effectId },
    body: { connectionId: deps.connectionId, attempt, reason: truncate(reason, 500) },
  });
  log.warn({ attempt, outcome: marked.outcome, effectStatus: marked.status }, "effect.marked_unknown");
  const runError =
    marked.status === "not_executed" ? effectNotExecutedError(effectId) : effectUnknownError(effectId, { reason: truncate(reason, 500) });
  return fail(deps, log, commandId, effectId, runError);
}

/** Sends the terminal `commandUpdate` `completed` with `result` (logged `command.terminal`). */
export async function complete(
  deps: McpExecuteHandlerDeps,
  log: Logger,
  commandId: string,
  effectId: string,
  result: McpExecuteCommandResult,
): Promise<McpExecuteOutcome> {
  const update = await sendTerminal(deps, log, commandId, { connectionId: deps.connectionId, status: "completed", result });
  log.info({ status: "completed", outcome: update.outcome, isError: result.isError ?? false }, "command.terminal");
  return { status: "completed", commandId, effectId, result, updateOutcome: update.outcome };
}

/** Sends the terminal `commandUpdate` `failed` with `error` (logged `command.terminal`); `effectId` is `null` when no claim was made. */
export async function fail(
  deps: McpExecuteHandlerDeps,
  log: Logger,
  commandId: string,
  effectId: string | null,
  error: RunError,
): Promise<McpExecuteOutcome> {
  const update = await sendTerminal(deps, log, commandId, { connectionId: deps.connectionId, status: "failed", error });
  log.info({ status: "failed", outcome: update.outcome, errorCode: error.code, retryable: error.retryable }, "command.terminal");
  return { status: "failed", commandId, effectId, error, updateOutcome: update.outcome };
}

/** Sends a terminal `commandUpdate`; a `rejected` answer (the command was already terminal) is logged `command.update_rejected`. */
async function sendTerminal(deps: McpExecuteHandlerDeps, log: Logger, commandId: string, body: CommandUpdateRequest) {
  const update = await deps.api.call("commandUpdate", { params: { commandId }, body });
  if (update.outcome === "rejected") {
    log.warn({ commandStatus: update.status, reason: update.reason }, "command.update_rejected");
  }
  return update;
}
