/**
 * The ledger model's task provider (docs/MCP-TASKS.md): one MCP server per test process (official SDK,
 * Streamable HTTP on 127.0.0.1) whose `createIssue` may be called as a task and whose tasks the model
 * moves from state to state, plus the REAL built-in `mcp-tasks` reconciler discovered against it. Each
 * world keeps its own tasks ({@link TaskWorld}); the server answers `tasks/get` and `tasks/result` from them.
 */
import type { Server } from "node:http";
import { createAdaptorServer } from "@hono/node-server";
import type { TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { ErrorCode, McpError, type CallToolResult, type Result, type Task } from "@modelcontextprotocol/sdk/types.js";
import { mcpTasksAdapterFactory } from "@mosoo/effect-reconciliation/host";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import { createProviderDouble, type ProviderDouble } from "@mosoo/effect-reconciliation/testing";
import { Hono } from "hono";
import { z } from "zod";
import type { ManualClock } from "../../kit/index.js";

/** The server id the task provider is bound as, and its task tool. */
export const TASK_SERVER = "jobs";
export const TASK_TOOL = "createIssue";
/** The `pollInterval` (ms) every task suggests: longer than the model's largest backoff (8 s), so a retry-after from it shows. */
export const TASK_POLL_MS = 20_000;

/**
 * What the model knows of one task. `failed_result`: the task failed with a tool result (`isError`);
 * `failed_error`: it failed and `tasks/result` answers a JSON-RPC error instead of a result. `expired`:
 * the provider forgot it (TTL), both task methods answer "invalid params" (-32602).
 */
export type ModelTaskState = "working" | "input_required" | "completed" | "failed_result" | "failed_error" | "cancelled";
export interface ModelTask {
  taskId: string;
  key: string;
  args: Record<string, unknown>;
  state: ModelTaskState;
  expired: boolean;
  /** The tool result `tasks/result` answers (completed: the write's result; failed_result: the tool's error). */
  result: CallToolResult | null;
}
const TERMINAL: ReadonlySet<ModelTaskState> = new Set(["completed", "failed_result", "failed_error", "cancelled"]);

/** Every task of every world of this process, by task id (task ids are unique per process). */
const ALL_TASKS = new Map<string, ModelTask>();
let taskSeq = 0;

/** The MCP view of a model task (null when unknown or expired: the SDK answers -32602). */
function mcpTask(t: ModelTask | undefined): Task | null {
  if (!t || t.expired) return null;
  const status = t.state === "failed_result" || t.state === "failed_error" ? "failed" : t.state;
  const at = new Date(0).toISOString();
  return { taskId: t.taskId, status, ttl: 86_400_000, createdAt: at, lastUpdatedAt: at, pollInterval: TASK_POLL_MS };
}

/** The provider's task store, read by the SDK's `tasks/get` / `tasks/result` handlers; the model creates and moves tasks itself. */
const store: TaskStore = {
  createTask: () => Promise.reject(new Error("the model creates its tasks itself")),
  getTask: async (taskId) => mcpTask(ALL_TASKS.get(taskId)),
  storeTaskResult: () => Promise.reject(new Error("the model settles its tasks itself")),
  getTaskResult: async (taskId): Promise<Result> => {
    const t = ALL_TASKS.get(taskId);
    if (!t || t.expired) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
    if (t.state === "failed_error" || !t.result) throw new McpError(ErrorCode.InternalError, "the task failed without a result");
    return structuredClone(t.result);
  },
  updateTaskStatus: () => Promise.reject(new Error("the model moves its tasks itself")),
  listTasks: async () => ({ tasks: [] }),
};

/**
 * The JSON Schema validator every per-request server shares: the SDK builds a new Ajv for each server it is
 * not given one (milliseconds per request), and this server never elicits, the one use it has for it.
 */
const schemaValidator = new AjvJsonSchemaValidator();

/** One MCP server per request (stateless Streamable HTTP), as the fixture provider does. */
function buildServer(): McpServer {
  const server = new McpServer(
    { name: "ledger-model-task-provider", version: "0.0.0" },
    {
      taskStore: store,
      capabilities: { tasks: { list: {}, requests: { tools: { call: {} } } } },
      jsonSchemaValidator: schemaValidator,
    },
  );
  server.experimental.tasks.registerToolTask(
    TASK_TOOL,
    { description: "Creates an issue (the model runs it)", inputSchema: { title: z.string() }, execution: { taskSupport: "optional" } },
    {
      createTask: () => Promise.reject(new McpError(ErrorCode.InvalidRequest, "the model Driver sends its writes itself")),
      getTask: (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
    },
  );
  return server;
}

interface SharedProvider {
  url: string;
  adapter: ReconciliationAdapter;
}
let shared: Promise<SharedProvider> | null = null;

/** Starts the process's task provider once (unref'd: it never holds the process) and discovers the real `mcp-tasks` reconciler against it. */
function sharedProvider(): Promise<SharedProvider> {
  shared ??= (async () => {
    const app = new Hono();
    app.all("/mcp", async (c) => {
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      const server = buildServer();
      await server.connect(transport);
      const response = await transport.handleRequest(c.req.raw);
      await server.close();
      return response;
    });
    const http = createAdaptorServer({ fetch: app.fetch, hostname: "127.0.0.1" }) as Server;
    const port = await new Promise<number>((resolve, reject) => {
      http.once("error", reject);
      http.listen(0, "127.0.0.1", () => resolve((http.address() as { port: number }).port));
    });
    http.unref();
    const url = `http://127.0.0.1:${port}/mcp`;
    const adapter = await mcpTasksAdapterFactory.discover({ url }, { signal: AbortSignal.timeout(30_000) });
    return { url, adapter };
  })();
  return shared;
}

/** One world's tasks: what the provider holds for the world's task-augmented calls, and who wrote what. */
export interface TaskWorld {
  /** The real `mcp-tasks` reconciler, bound as {@link TASK_SERVER}. */
  adapter: ReconciliationAdapter;
  /** Writes of completed tasks, per idempotency key (a task's tool ran once when it completed). */
  double: ProviderDouble;
  /** This world's tasks, in creation order. */
  tasks: ModelTask[];
  /** The provider receives a task-augmented call: a new `working` task for `key`; returns its id. */
  create(key: string, args: Record<string, unknown>): string;
  /** The task of id `taskId` (undefined for an id the provider never issued). */
  get(taskId: string): ModelTask | undefined;
  /** Moves task `t` to `to` (a terminal state is final; `expire` forgets it). Completing it writes. Returns false when nothing changed. */
  move(t: ModelTask, to: ModelTaskState | "expire"): Promise<boolean>;
  /** Forgets this world's tasks. */
  close(): void;
}

/** A task world for one model world on `clock` (starts the shared provider on first use). */
export async function createTaskWorld(clock: ManualClock): Promise<TaskWorld> {
  const { adapter } = await sharedProvider();
  const double = createProviderDouble({ clock, toolName: TASK_TOOL });
  const tasks: ModelTask[] = [];
  return {
    adapter,
    double,
    tasks,
    create(key, args) {
      const taskId = `task-${process.pid}-${++taskSeq}`;
      const t: ModelTask = { taskId, key, args, state: "working", expired: false, result: null };
      ALL_TASKS.set(taskId, t);
      tasks.push(t);
      return taskId;
    },
    get: (taskId) => (tasks.some((t) => t.taskId === taskId) ? ALL_TASKS.get(taskId) : undefined),
    async move(t, to) {
      if (to === "expire") {
        const changed = !t.expired;
        t.expired = true;
        return changed;
      }
      if (TERMINAL.has(t.state) || t.state === to) return false;
      if (to === "completed") {
        const write = await double.commit(t.key, t.args);
        if (write.status !== "committed") throw new Error(`the task provider's write was ${write.status}`);
        t.result = write.result as CallToolResult;
      } else if (to === "failed_result") {
        t.result = { isError: true, content: [{ type: "text", text: "createIssue failed: the project is archived" }] };
      }
      t.state = to;
      return true;
    },
    close() {
      for (const t of tasks) ALL_TASKS.delete(t.taskId);
    },
  };
}

/** True for a state in which the task ran the tool and holds a tool result (`tasks/result` answers one). */
export function holdsResult(t: ModelTask): boolean {
  return !t.expired && (t.state === "completed" || t.state === "failed_result");
}
