/** The built-in `mcp-tasks` reconciler: settles an effect from the provider's own MCP task (`tasks/get`, `tasks/result`) by its stored task id. */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, ErrorCode, McpError, type Task } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { acceptsToolCallsAsTasks, taskCallableToolNames } from "@mosoo/contracts";
import type { DiscoveringAdapterFactory, LookupContext, LookupRequest, ReconciliationAdapter } from "../author/adapter.contract.js";
import { stillUnknown } from "../author/lookup-outcome.builders.js";
import { McpEndpointUrlSchema } from "../author/mcp-endpoint-url.js";
import { listToolsOf, withMcpClient } from "../author/mcp-lookup.js";

/** The built-in id of the task-handle reconciler, as named in a bindings file (`"adapterId": "mcp-tasks"`). */
export const MCP_TASKS_ADAPTER_ID = "mcp-tasks";

/** The `_meta` key MCP puts on a `tasks/result` answer to name its task (MCP 2025-11-25 "Tasks", related-task metadata). */
const RELATED_TASK_META = "io.modelcontextprotocol/related-task";

/** Retry-after (ms) of a task still working whose provider suggests no `pollInterval`. */
const DEFAULT_TASK_POLL_MS = 1_000;
/** Upper bound (ms) of a provider's suggested `pollInterval` taken as retry-after: one hour. */
const MAX_TASK_POLL_MS = 3_600_000;

/**
 * Options of the `mcp-tasks` reconciler:
 * - `url`: the provider's MCP endpoint (Streamable HTTP; {@link McpEndpointUrlSchema});
 * - `retentionMs` (ms, positive integer, default 24 h): how long the provider keeps a task. It is
 *   declared as the adapter's retention window; this adapter never answers `confirmed_not_executed`,
 *   so it only documents the bound (an expired task is `still_unknown` `task_expired`).
 */
export const McpTasksAdapterOptionsSchema = z.strictObject({
  url: McpEndpointUrlSchema,
  retentionMs: z
    .number()
    .int()
    .positive()
    .default(24 * 60 * 60 * 1000),
});

/**
 * The tools of the provider at `client` that may be called as tasks ({@link taskCallableToolNames}):
 * none, and no `tools/list` sent, unless its capabilities declare `tasks.requests.tools.call`; then
 * every tool whose `execution.taskSupport` is `optional` or `required`, read from every `tools/list` page.
 */
async function discoverTaskTools(client: Client, signal: AbortSignal): Promise<string[]> {
  const capabilities = client.getServerCapabilities();
  if (!acceptsToolCallsAsTasks(capabilities)) return [];
  return taskCallableToolNames(capabilities, await listToolsOf(client, signal));
}

/** True for MCP's "invalid params" answer, which `tasks/get` / `tasks/result` give for an unknown or expired task id. */
function isTaskGone(error: unknown): boolean {
  return error instanceof McpError && error.code === ErrorCode.InvalidParams;
}

/**
 * Looks one effect up by its task handle (the mapping is docs/MCP-TASKS.md's table):
 * - no `taskId` on the request → `still_unknown` `no_task_handle`;
 * - `tasks/get` answers invalid params (unknown id, expired TTL) → `still_unknown` `task_expired`,
 *   never `confirmed_not_executed`: a task existed, so the provider received the request;
 * - `working` / `input_required` → `still_unknown` `task_working` / `task_input_required`, retry after
 *   the task's `pollInterval` (bounded to 1 h; 1 s when absent);
 * - `cancelled` → `still_unknown` `task_cancelled`: MCP lets the work run on after a cancel, so it
 *   proves nothing either way (an operator decides);
 * - `completed` / `failed` → `tasks/result`: a tool result (a failed task's carries `isError: true`:
 *   the tool ran and reported its failure) → `confirmed_succeeded` with that result and a receipt
 *   naming the task (`providerOperationId` = the task id, `detail.taskStatus`); a JSON-RPC error
 *   instead of a result → `still_unknown` `task_failed`; a result naming another task →
 *   `still_unknown` `task_result_mismatch`.
 * @throws whatever the connection throws otherwise (the runtime records `adapter_error`).
 */
async function lookupByTask(url: string, request: LookupRequest, { signal }: LookupContext): Promise<unknown> {
  const taskId = request.taskId;
  if (taskId === undefined) return stillUnknown("no_task_handle");
  return withMcpClient(url, signal, async (client) => {
    let task: Task;
    try {
      task = await client.experimental.tasks.getTask(taskId, { signal });
    } catch (error) {
      if (isTaskGone(error)) return stillUnknown("task_expired");
      throw error;
    }
    switch (task.status) {
      case "working":
      case "input_required": {
        const pollMs = Math.min(Math.max(1, Math.round(task.pollInterval ?? DEFAULT_TASK_POLL_MS)), MAX_TASK_POLL_MS);
        return stillUnknown(task.status === "working" ? "task_working" : "task_input_required", pollMs);
      }
      case "cancelled":
        return stillUnknown("task_cancelled");
      case "completed":
      case "failed":
        break;
    }
    let result: z.infer<typeof CallToolResultSchema>;
    try {
      result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { signal });
    } catch (error) {
      if (isTaskGone(error)) return stillUnknown("task_expired");
      if (error instanceof McpError) return stillUnknown("task_failed");
      throw error;
    }
    const { [RELATED_TASK_META]: related, ...meta } = result._meta ?? {};
    const relatedId = (related as { taskId?: unknown } | undefined)?.taskId;
    if (relatedId !== undefined && relatedId !== taskId) return stillUnknown("task_result_mismatch");
    const { _meta: _dropped, ...rest } = result;
    return {
      outcome: "confirmed_succeeded",
      toolName: request.toolName,
      idempotencyKey: request.idempotencyKey,
      result: Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest,
      receipt: { observedAt: new Date().toISOString(), providerOperationId: taskId, detail: { taskStatus: task.status } },
    };
  });
}

/**
 * The built-in reconciler of MCP task handles (docs/DESIGN.md §4 "Tasks"): `discover({url})` connects
 * once (at startup), keeps the tools the provider lets be called as tasks ({@link discoverTaskTools}),
 * and returns an adapter declaring them; its `lookup` asks the provider about the effect's stored
 * task id (see `lookupByTask` above). Retention: `options.retentionMs`; fencing `lookup_fences_key`,
 * moot because it never answers `confirmed_not_executed` (a missing task proves nothing).
 * @throws (rejects) when the provider cannot be reached or lets no tool be called as a task.
 */
export const mcpTasksAdapterFactory: DiscoveringAdapterFactory = {
  kind: "discovering",
  id: MCP_TASKS_ADAPTER_ID,
  version: "1.0.0",
  async discover(options: unknown, { signal }): Promise<ReconciliationAdapter> {
    const { url, retentionMs } = McpTasksAdapterOptionsSchema.parse(options ?? {});
    const tools = await withMcpClient(url, signal, (client) => discoverTaskTools(client, signal));
    if (tools.length === 0)
      throw new Error(`no tool at ${url} can be called as an MCP task (capability tasks.requests.tools.call, execution.taskSupport)`);
    return {
      declaration: {
        id: MCP_TASKS_ADAPTER_ID,
        version: "1.0.0",
        tools,
        retentionWindowMs: retentionMs,
        keyFencing: { kind: "lookup_fences_key" },
      },
      lookup: (request, context) => lookupByTask(url, request, context),
    };
  },
};
