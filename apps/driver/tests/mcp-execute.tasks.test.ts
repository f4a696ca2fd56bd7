/**
 * Task-augmented tool calls (MCP 2025-11-25 "Tasks", docs/DESIGN.md §4 "Tasks"): a tool its server lets be
 * called as a task is sent with `params.task`, the key still in `_meta`; the task id is reported to
 * the API before the Driver waits; the result settles the effect as a plain call's would. A server
 * without task support is called as before.
 */
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { IDEMPOTENCY_KEY_META } from "@mosoo/contracts";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { McpConnections } from "../src/mcp-connections.js";
import { handleMcpExecuteCommand } from "../src/mcp-execute.handler.js";
import { mcpExecuteEnvelope, RecordingApi } from "./helpers/recording-api.js";
import { inMemoryTransportFactory, ToolRecorder } from "./helpers/recording-mcp-server.js";

/** What the task-capable test server saw: its requests by method, and the `tools/call` params. */
interface Seen {
  methods: string[];
  callParams: Array<Record<string, unknown>>;
  /** Resolved by the test to let the write finish (the task stays `working` until then). */
  release: () => void;
}

/**
 * A real MCP server (official SDK) whose `create_issue` requires task augmentation: the task is
 * answered at once, the write finishes when the test releases it; results are `created <title>`,
 * `fail` titles end the task `failed` with an `isError` result.
 */
function taskServerFactory(events: string[]): { factory: () => InMemoryTransport; seen: Seen } {
  const taskStore = new InMemoryTaskStore();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const seen: Seen = { methods: [], callParams: [], release: () => release() };
  const factory = () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = new McpServer(
      { name: "task-test-server", version: "1.0.0" },
      { taskStore, capabilities: { tasks: { requests: { tools: { call: {} } } } } },
    );
    server.experimental.tasks.registerToolTask(
      "create_issue",
      { inputSchema: { title: z.string() }, execution: { taskSupport: "required" } },
      {
        createTask: async (args, extra) => {
          const task = await extra.taskStore.createTask({ ttl: 60_000, pollInterval: 5 });
          events.push("provider:task_created");
          void released.then(async () => {
            const failed = args.title === "fail";
            const result: CallToolResult = { content: [{ type: "text", text: failed ? "refused" : `created ${args.title}` }] };
            if (failed) result.isError = true;
            await taskStore.storeTaskResult(task.taskId, failed ? "failed" : "completed", result);
            events.push("provider:task_ended");
          });
          return { task };
        },
        getTask: (_args, extra) => extra.taskStore.getTask(extra.taskId),
        getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
      },
    );
    void server.connect(serverSide).then(() => {
      const handle = serverSide.onmessage!;
      serverSide.onmessage = (message, extra) => {
        if ("method" in message) {
          seen.methods.push(message.method);
          if (message.method === "tools/call") seen.callParams.push(message.params as Record<string, unknown>);
        }
        handle(message, extra);
      };
    });
    return clientSide;
  };
  return { factory, seen };
}

function deps(api: RecordingApi, mcp: McpConnections) {
  return { api, mcp, connectionId: "01J00000000000000000000000", logger: pino({ level: "silent" }), toolTimeoutMs: 10_000 };
}

describe("task-augmented tools/call", () => {
  it("sends the call as a task (key in _meta), stores the task id BEFORE waiting, then completes with the task's result", async () => {
    const events: string[] = [];
    const { factory, seen } = taskServerFactory(events);
    const api = new RecordingApi(events);
    const mcp = new McpConnections({ servers: { tracker: { type: "stdio", command: "unused", args: [] } } }, { createTransport: factory });
    // the write is released only once the Driver reported the handle: nothing can settle before it
    const originalReport = api.effectTaskCreated.bind(api);
    api.effectTaskCreated = async (effectId, body) => {
      const answer = await originalReport(effectId, body);
      seen.release();
      return answer;
    };
    const envelope = mcpExecuteEnvelope({ serverId: "tracker", toolName: "create_issue", args: { title: "disk" } });
    const outcome = await handleMcpExecuteCommand(envelope, deps(api, mcp));
    await mcp.closeAll();

    expect(outcome.status).toBe("completed");
    expect(outcome.status === "completed" && outcome.result.outputText).toBe("created disk");
    expect(seen.callParams).toHaveLength(1);
    expect(seen.callParams[0]).toMatchObject({
      task: { ttl: expect.any(Number) },
      _meta: { [IDEMPOTENCY_KEY_META]: api.claim.kind === "execute" ? api.claim.idempotencyKey : "" },
    });
    const reported = api.callsOf("effectTaskCreated");
    expect(reported).toHaveLength(1);
    expect(reported[0]!.body).toMatchObject({ attempt: 1, taskId: expect.stringMatching(/^[!-~]+$/) });
    // order: task created → handle stored → task ended → result stored → command completed
    expect(events.filter((e) => e !== "api:commandUpdate:accepted" && e !== "api:effectClaim")).toEqual([
      "provider:task_created",
      "api:effectTaskCreated",
      "provider:task_ended",
      "api:effectComplete",
      "api:commandUpdate:completed",
    ]);
    expect(seen.methods).toContain("tasks/get");
    expect(seen.methods).toContain("tasks/result");
  });

  it("a failed task's tool error is the effect's result (the tool ran and said no), as for a plain call", async () => {
    const events: string[] = [];
    const { factory, seen } = taskServerFactory(events);
    seen.release();
    const api = new RecordingApi(events);
    const mcp = new McpConnections({ servers: { tracker: { type: "stdio", command: "unused", args: [] } } }, { createTransport: factory });
    const envelope = mcpExecuteEnvelope({ serverId: "tracker", toolName: "create_issue", args: { title: "fail" } });
    const outcome = await handleMcpExecuteCommand(envelope, deps(api, mcp));
    await mcp.closeAll();
    expect(outcome.status).toBe("completed");
    expect(outcome.status === "completed" && outcome.result).toMatchObject({ outputText: "refused", isError: true });
    expect(api.callsOf("effectTaskCreated")).toHaveLength(1);
  });

  it("a server without task support is called as before: one plain tools/call, no task report", async () => {
    const recorder = new ToolRecorder();
    const api = new RecordingApi();
    const mcp = new McpConnections(
      { servers: { tracker: { type: "stdio", command: "unused", args: [] } } },
      { createTransport: inMemoryTransportFactory(recorder) },
    );
    const envelope = mcpExecuteEnvelope({ serverId: "tracker", toolName: "create_issue", args: { title: "plain" } });
    const outcome = await handleMcpExecuteCommand(envelope, deps(api, mcp));
    await mcp.closeAll();
    expect(outcome.status).toBe("completed");
    expect(recorder.calls).toHaveLength(1);
    expect(api.callsOf("effectTaskCreated")).toEqual([]);
  });
});
