import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { IDEMPOTENCY_KEY_META, newUlid } from "@mosoo/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { startFixtureProvider, type FixtureProviderHandle, type StartFixtureProviderOptions } from "../src/index.js";
import { callCreateIssue, connectHttp, firstText, tempDbFile, waitFor } from "./helpers.js";

/** Sends `createIssue` task-augmented with `key` in `_meta` and returns the created task. */
async function createIssueAsTask(client: Client, key: string, args: Record<string, unknown> = { title: "t", body: "b" }) {
  const created = await client.request(
    { method: "tools/call", params: { name: "createIssue", arguments: args, _meta: { [IDEMPOTENCY_KEY_META]: key } } },
    CreateTaskResultSchema,
    { task: { ttl: 60_000 } },
  );
  return created.task;
}

/** Polls `tasks/get` until the task leaves `working` (a new client each time: tasks outlive connections). */
async function awaitTerminal(url: string, taskId: string): Promise<string> {
  for (;;) {
    const client = await connectHttp(url);
    try {
      const task = await client.experimental.tasks.getTask(taskId);
      if (task.status !== "working") return task.status;
    } finally {
      await client.close();
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("MCP task support (MCP 2025-11-25 Tasks)", () => {
  let provider: FixtureProviderHandle;
  let client: Client;
  async function start(options: Omit<StartFixtureProviderOptions, "dbFile"> = {}): Promise<void> {
    provider = await startFixtureProvider({ dbFile: tempDbFile(), ...options });
    client = await connectHttp(provider.url);
  }
  afterEach(async () => {
    await client.close();
    await provider.close();
  });

  it("off by default: no tasks capability and no tool that may be called as a task", async () => {
    await start();
    expect(client.getServerCapabilities()?.tasks).toBeUndefined();
    const { tools } = await client.listTools();
    // the SDK declares `forbidden` (the default meaning of an absent value) on plain tools
    expect(tools.filter((t) => ["optional", "required"].includes(t.execution?.taskSupport ?? "forbidden"))).toEqual([]);
  });

  it("with the switch on, the write tools declare it and a task-augmented call answers a task; the task (held by the provider, not the connection) completes with the write's result", async () => {
    await start({ taskSupport: "optional" });
    expect(client.getServerCapabilities()?.tasks?.requests?.tools?.call).toEqual({});
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));
    expect(support).toEqual({ createIssue: "optional", closeIssue: "optional", getOperation: "forbidden" });

    const key = newUlid();
    const task = await createIssueAsTask(client, key);
    expect(task.status).toBe("working");
    expect(task.pollInterval).toBe(100);
    await client.close(); // the client that created the task is gone
    expect(await awaitTerminal(provider.url, task.taskId)).toBe("completed");
    client = await connectHttp(provider.url);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError ?? false).toBe(false);
    expect(result.structuredContent).toMatchObject({ title: "t" });
    expect(provider.stats().writes[key]).toBe(1);
    // a plain call with the same key replays the write the task made
    const replay = await callCreateIssue(client, { title: "t", body: "b" }, key);
    expect(firstText(replay)).toBe(firstText(result));
    expect(provider.stats().writes[key]).toBe(1);
  });

  it("a held write keeps its task working; once released it completes", async () => {
    await start({ taskSupport: "required", faults: { holdBeforeCommit: true } });
    const task = await createIssueAsTask(client, newUlid());
    await waitFor(() => provider.provider.heldCount === 1);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("working");
    expect(provider.release()).toBe(1);
    expect(await awaitTerminal(provider.url, task.taskId)).toBe("completed");
  });

  it("a tool error ends the task failed, and tasks/result answers the tool error", async () => {
    await start({ taskSupport: "optional", faults: { failBeforeCommit: true } });
    const task = await createIssueAsTask(client, newUlid());
    expect(await awaitTerminal(provider.url, task.taskId)).toBe("failed");
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(firstText(result)).toMatch(/^provider_unavailable/);
  });

  it("the expireTasks fault makes every task answer as unknown (-32602) until it is off again", async () => {
    await start({ taskSupport: "optional" });
    const task = await createIssueAsTask(client, newUlid());
    expect(await awaitTerminal(provider.url, task.taskId)).toBe("completed");
    provider.setFaults({ expireTasks: true });
    const gone = await client.experimental.tasks.getTask(task.taskId).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(McpError);
    expect((gone as McpError).code).toBe(ErrorCode.InvalidParams);
    const noResult = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).catch((e: unknown) => e);
    expect(noResult).toBeInstanceOf(McpError);
    provider.setFaults({ expireTasks: false });
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("completed");
  });

  it("required task support refuses a plain call (-32601), so nothing is written", async () => {
    await start({ taskSupport: "required" });
    const key = newUlid();
    const plain = await client
      .request(
        {
          method: "tools/call",
          params: { name: "createIssue", arguments: { title: "t", body: "b" }, _meta: { [IDEMPOTENCY_KEY_META]: key } },
        },
        CallToolResultSchema,
      )
      .catch((e: unknown) => e);
    // the SDK's McpServer answers its own refusal as a tool error result
    const refused = plain instanceof McpError ? plain.message : firstText(plain as never);
    expect(refused).toMatch(/requires task augmentation/);
    expect(provider.stats().writes[key]).toBeUndefined();
  });

  it("the withdrawTaskSupport switch serves the write tools as plain ones: declared forbidden, a task-augmented call answered with the write's result itself; off again, tasks again", async () => {
    await start({ taskSupport: "optional" });
    provider.setFaults({ withdrawTaskSupport: true });
    const support = async () => Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));
    expect(await support()).toEqual({ createIssue: "forbidden", closeIssue: "forbidden", getOperation: "forbidden" });
    expect(client.getServerCapabilities()?.tasks?.requests?.tools?.call).toEqual({});
    const key = newUlid();
    // the write runs and answers its plain result, which the SDK client refuses as a task creation result
    const answered = await client
      .request(
        {
          method: "tools/call",
          params: { name: "createIssue", arguments: { title: "t", body: "b" }, _meta: { [IDEMPOTENCY_KEY_META]: key } },
        },
        CreateTaskResultSchema,
        { task: { ttl: 60_000 } },
      )
      .catch((e: unknown) => e);
    expect(answered).toBeInstanceOf(McpError);
    expect((answered as McpError).message).toMatch(/Invalid task creation result/);
    expect(provider.stats().writes[key]).toBe(1);

    provider.setFaults({ withdrawTaskSupport: false });
    expect(await support()).toEqual({ createIssue: "optional", closeIssue: "optional", getOperation: "forbidden" });
    expect((await createIssueAsTask(client, newUlid())).status).toBe("working");
  });
});
