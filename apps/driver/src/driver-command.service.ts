// Handles one command the Driver polled, inside its `driver.command` span (continuing the trace of the enqueue that made it).
import type { DriverCommandEnvelope } from "@mosoo/contracts";
import { contextOfTraceContext, withSpan } from "@mosoo/telemetry";
import { isConnectionLostError } from "./api-errors.js";
import { handleMcpExecuteCommand, type McpExecuteHandlerDeps } from "./mcp-execute.handler.js";

/**
 * Where one round of the Driver's poll loop is (`connect`, `poll` or `command`: which request a failure
 * came from) and whether the next round must reconnect first.
 */
export interface PollRound {
  step: "connect" | "poll" | "command";
  needsReconnect: boolean;
}

/**
 * Runs `command` to its terminal update through {@link handleMcpExecuteCommand}, in one span per command
 * (`driver.command`: claim → MCP call → report) whose parent is the command's `traceContext`.
 * @throws the handler's error: a lost connection as is; any other after logging `command.handling_failed`
 *   (on `deps.logger`) and asking for a reconnect (`round.needsReconnect`), which makes the API redeliver the command.
 */
export async function handlePolledCommand(command: DriverCommandEnvelope, deps: McpExecuteHandlerDeps, round: PollRound): Promise<void> {
  try {
    // The stop signal is deliberately not passed on: a started command runs to its terminal update.
    // One span per command (claim → MCP call → report), continuing the trace of the enqueue that made it.
    await withSpan(
      "driver.command",
      {
        "mosoo.command.id": command.commandId,
        "mosoo.command.redelivery": command.redelivery,
        "mosoo.server.id": command.payload.serverId,
      },
      async (span) => {
        const outcome = await handleMcpExecuteCommand(command, deps);
        span.setAttribute("mosoo.command.outcome", outcome.status);
      },
      { parent: contextOfTraceContext(command.traceContext) },
    );
  } catch (error) {
    if (isConnectionLostError(error)) throw error;
    deps.logger.error(
      { commandId: command.commandId, effectId: null, errorCode: (error as { code?: unknown }).code, err: (error as Error).message },
      "command.handling_failed",
    );
    round.needsReconnect = true; // reconnecting makes the API redeliver the command
    throw error;
  }
}
