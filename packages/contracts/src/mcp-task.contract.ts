/** The MCP task handle (MCP 2025-11-25 "Tasks") as the runtime stores it on an effect: its id's bounds; which tools a server lets be called as tasks. */
import type { ServerCapabilities, Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/** Longest task id the runtime stores: 256 characters (the database CHECK has the same bound). */
export const MAX_MCP_TASK_ID_LENGTH = 256;

/**
 * The characters a stored task id may hold: printable ASCII without space (`!` to `~`), 1 to
 * {@link MAX_MCP_TASK_ID_LENGTH} of them. The MCP specification only says a task id is a string the
 * receiver generates (UUIDs in its examples); the runtime keeps only ids it can echo back verbatim
 * in `tasks/get` and show in a log line. A provider's id outside this set is not stored: the call
 * then runs as an untracked one (a crash leaves it on the fence, docs/MCP-TASKS.md).
 */
export const MCP_TASK_ID_PATTERN = /^[\x21-\x7E]{1,256}$/;

/** A provider's MCP task id as stored on an effect (see {@link MCP_TASK_ID_PATTERN}). */
export const McpTaskIdSchema = z
  .string()
  .regex(MCP_TASK_ID_PATTERN, `task id must be 1-${MAX_MCP_TASK_ID_LENGTH} printable ASCII characters without space`);
/** See {@link McpTaskIdSchema}. */
export type McpTaskId = z.infer<typeof McpTaskIdSchema>;

/**
 * True when a server's `capabilities` (its `initialize` answer; `undefined` before it) declare
 * `tasks.requests.tools.call`: without it a client MUST NOT send a task-augmented `tools/call`
 * (MCP 2025-11-25 "Tasks", "Capabilities"), so a caller need not even list the tools.
 */
export function acceptsToolCallsAsTasks(capabilities: Pick<ServerCapabilities, "tasks"> | undefined): boolean {
  return Boolean(capabilities?.tasks?.requests?.tools?.call);
}

/**
 * The names of the tools a client may call as MCP tasks, in `tools` order: none unless the server's
 * `capabilities` declare `tasks.requests.tools.call` ({@link acceptsToolCallsAsTasks}); then every tool whose `execution.taskSupport` is `optional` or `required` (MCP 2025-11-25 "Tasks",
 * "Tool-Level Negotiation": absent or `forbidden` means the tool MUST NOT be called as a task).
 * Pure: the caller reads `tools/list` (every page) itself. The Driver uses it to choose task-augmented
 * calls; the `mcp-tasks` reconciler to declare the tools it covers.
 */
export function taskCallableToolNames(
  capabilities: Pick<ServerCapabilities, "tasks"> | undefined,
  tools: ReadonlyArray<Pick<Tool, "name" | "execution">>,
): string[] {
  if (!acceptsToolCallsAsTasks(capabilities)) return [];
  return tools
    .filter((tool) => tool.execution?.taskSupport === "optional" || tool.execution?.taskSupport === "required")
    .map((tool) => tool.name);
}
