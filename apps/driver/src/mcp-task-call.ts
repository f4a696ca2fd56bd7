/** Task-augmented `tools/call` (MCP 2025-11-25 "Tasks"): which tools a server lets be called as tasks, and one such call from creation to result. */
import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ListToolsResultSchema,
  type Task,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { acceptsToolCallsAsTasks, taskCallableToolNames } from "@mosoo/contracts";

/** The task lifetime (ms) the Driver asks for: 24 h, long enough for crash recovery to ask about the task (a provider may grant less). */
const REQUESTED_TASK_TTL_MS = 24 * 60 * 60 * 1000;
/** Poll interval (ms) when the provider suggests none. */
const DEFAULT_POLL_MS = 1_000;

/**
 * The tools of the connected server that the Driver calls task-augmented: none unless the server's
 * capabilities declare `tasks.requests.tools.call` (MCP: a client MUST NOT use tasks otherwise, and
 * then no `tools/list` is sent at all, so such a server sees exactly the calls it saw before); else
 * every tool whose `execution.taskSupport` is `optional` or `required` ({@link taskCallableToolNames}). Reads every `tools/list` page
 * with a raw request, so the SDK's own tool cache (and its output-schema checks) stays untouched.
 * @throws when `tools/list` fails (the caller treats the server as unavailable).
 */
export async function listTaskTools(client: Client, timeoutMs: number): Promise<ReadonlySet<string>> {
  const capabilities = client.getServerCapabilities();
  if (!acceptsToolCallsAsTasks(capabilities)) return new Set();
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.request({ method: "tools/list", params: cursor === undefined ? {} : { cursor } }, ListToolsResultSchema, {
      timeout: timeoutMs,
    });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return new Set(taskCallableToolNames(capabilities, tools));
}

/** Options of {@link callToolAsTask}. */
export interface TaskCallOptions {
  /** Bound of the whole call (creation, polls, result), ms; past it the call throws (the write's fate is then unknown). */
  timeoutMs: number;
  /** Called once with the provider's task id, and awaited, before the first `tasks/get` (the Driver stores the handle durably there). */
  onTaskCreated: (taskId: string) => Promise<void>;
}

/**
 * One task-augmented `tools/call` (`params.task.ttl` = {@link REQUESTED_TASK_TTL_MS}; `_meta`, with
 * the idempotency key, unchanged): the provider answers a task at once; `onTaskCreated(taskId)` runs
 * to its end; then `tasks/get` is polled, waiting the task's `pollInterval` (ms; 1 s when absent)
 * between polls as MCP asks, until the task ends; a `completed` or `failed` task's result is read
 * with `tasks/result` (a failed tool call's result carries `isError: true`) and returned raw.
 * @throws Error when the task is `cancelled` or needs input (`input_required`: the Driver has none to
 *   give), when it does not end within `timeoutMs`, when `tasks/result` answers a JSON-RPC error, or
 *   when a request fails: in every case the write's fate is unknown to the caller.
 */
export async function callToolAsTask(
  client: Client,
  request: { name: string; arguments: Record<string, unknown>; _meta: Record<string, unknown> },
  options: TaskCallOptions,
): Promise<unknown> {
  const deadline = performance.now() + options.timeoutMs;
  const left = (): number => Math.max(1, Math.round(deadline - performance.now()));
  const created = await client.request({ method: "tools/call", params: request }, CreateTaskResultSchema, {
    task: { ttl: REQUESTED_TASK_TTL_MS },
    timeout: left(),
    maxTotalTimeout: left(),
  });
  let task: Task = created.task;
  await options.onTaskCreated(task.taskId);
  while (task.status === "working") {
    await sleep(Math.min(Math.max(1, task.pollInterval ?? DEFAULT_POLL_MS), left()));
    if (performance.now() >= deadline) throw new Error(`task ${task.taskId} did not end within ${options.timeoutMs} ms`);
    task = await client.experimental.tasks.getTask(task.taskId, { timeout: left() });
  }
  if (task.status !== "completed" && task.status !== "failed")
    throw new Error(`task ${task.taskId} is ${task.status}: the Driver cannot tell whether the write happened`);
  return client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: left() });
}
