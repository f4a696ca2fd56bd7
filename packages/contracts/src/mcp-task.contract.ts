/** The MCP task handle (MCP 2025-11-25 "Tasks") as the runtime stores it on an effect: its id's bounds. */
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
