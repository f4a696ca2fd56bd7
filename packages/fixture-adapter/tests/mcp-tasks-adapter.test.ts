/**
 * The built-in `mcp-tasks` reconciler against the real fixture provider (MCP over HTTP): the task
 * outcomes the crash rows do not reach (a failed task's tool error, a cancelled task) and discovery.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { fingerprintArguments, IDEMPOTENCY_KEY_META, newUlid } from "@mosoo/contracts";
import { mcpTasksAdapterFactory } from "@mosoo/effect-reconciliation/host";
import { startFixtureProvider, type FixtureProviderHandle, type StartFixtureProviderOptions } from "@mosoo/fixture-provider";
import { afterEach, describe, expect, it } from "vitest";

const ARGS = { title: "t", body: "b" };
const logger = { debug() {}, info() {}, warn() {}, error() {} };
const opened: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

async function start(options: Omit<StartFixtureProviderOptions, "dbFile">): Promise<FixtureProviderHandle> {
  const dir = mkdtempSync(join(tmpdir(), "mcp-tasks-adapter-"));
  opened.push(() => rmSync(dir, { recursive: true, force: true }));
  const provider = await startFixtureProvider({ dbFile: join(dir, "p.db"), ...options });
  opened.push(() => provider.close());
  return provider;
}

/** Sends `createIssue` as a task; returns the connected client (closed after the test), the key and the task id. */
async function createTask(url: string) {
  const client = new Client({ name: "t", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  opened.push(() => client.close());
  const key = newUlid();
  const { task } = await client.request(
    { method: "tools/call", params: { name: "createIssue", arguments: ARGS, _meta: { [IDEMPOTENCY_KEY_META]: key } } },
    CreateTaskResultSchema,
    { task: { ttl: 60_000 } },
  );
  return { client, key, taskId: task.taskId };
}

async function lookup(url: string, key: string, taskId: string | undefined) {
  const adapter = await mcpTasksAdapterFactory.discover({ url }, { signal: AbortSignal.timeout(10_000) });
  return adapter.lookup(
    {
      effectId: newUlid(),
      serverId: "tracker",
      toolName: "createIssue",
      idempotencyKey: key,
      requestFingerprint: fingerprintArguments(ARGS),
      firstDispatchedAtMs: Date.now(),
      lastDispatchedAtMs: Date.now(),
      ...(taskId ? { taskId } : {}),
    },
    { signal: AbortSignal.timeout(10_000), logger },
  );
}

describe("mcp-tasks reconciler", () => {
  it("discovers the tools that may be called as tasks; refuses a provider without task support", async () => {
    const tasks = await start({ taskSupport: "optional" });
    const adapter = await mcpTasksAdapterFactory.discover({ url: tasks.url }, { signal: AbortSignal.timeout(10_000) });
    expect(adapter.declaration).toMatchObject({ id: "mcp-tasks", tools: ["createIssue", "closeIssue"] });
    const plain = await start({});
    await expect(mcpTasksAdapterFactory.discover({ url: plain.url }, { signal: AbortSignal.timeout(10_000) })).rejects.toThrow(
      /can be called as an MCP task/,
    );
  });

  it("a failed task's tool error settles as the tool's own (isError) result, with a receipt naming the task", async () => {
    const provider = await start({ taskSupport: "optional", faults: { failBeforeCommit: true } });
    const { client, key, taskId } = await createTask(provider.url);
    for (let i = 0; i < 500 && (await client.experimental.tasks.getTask(taskId)).status === "working"; i++)
      await new Promise((r) => setTimeout(r, 10));
    const answer = await lookup(provider.url, key, taskId);
    expect(answer).toMatchObject({
      outcome: "confirmed_succeeded",
      idempotencyKey: key,
      result: { isError: true },
      receipt: { providerOperationId: taskId, detail: { taskStatus: "failed" } },
    });
  });

  it("a cancelled task proves nothing (the work may run on): still_unknown task_cancelled", async () => {
    const provider = await start({ taskSupport: "optional", faults: { holdBeforeCommit: true } });
    const { client, key, taskId } = await createTask(provider.url);
    await client.experimental.tasks.cancelTask(taskId);
    expect(await lookup(provider.url, key, taskId)).toEqual({ outcome: "still_unknown", reasonCode: "task_cancelled" });
  });

  it("without a stored task id there is nothing to ask: still_unknown no_task_handle", async () => {
    const provider = await start({ taskSupport: "optional" });
    expect(await lookup(provider.url, newUlid(), undefined)).toEqual({ outcome: "still_unknown", reasonCode: "no_task_handle" });
  });
});
