/**
 * The Driver's list of task-capable tools follows the server: when a tool stops supporting tasks and
 * the server sends `notifications/tools/list_changed`, the Driver lists the tools again and its next
 * call to that tool is a plain one, answered with the write's result (a task-augmented call would get
 * a plain result it cannot read as a task, leaving a write that happened unknown). Runs the fixture
 * provider's MCP server over an in-memory transport (a lasting session that notifications reach).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { IDEMPOTENCY_KEY_META, newUlid } from "@mosoo/contracts";
import {
  CREATE_ISSUE_TOOL,
  createFixtureMcpServer,
  openFixtureProviderService,
  type FixtureProviderService,
} from "@mosoo/fixture-provider";
import { afterEach, describe, expect, it } from "vitest";
import { McpConnections } from "../src/mcp-connections.js";
import { captureLogger } from "./helpers/log-capture.js";

/** The fixture provider behind an in-memory transport, and every `tools/call` it received (`task`: whether it was task-augmented). */
function fixtureOverMemory(provider: FixtureProviderService): {
  factory: () => InMemoryTransport;
  calls: Array<{ name: unknown; task: boolean }>;
} {
  const calls: Array<{ name: unknown; task: boolean }> = [];
  const factory = () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = createFixtureMcpServer(provider);
    void server.connect(serverSide).then(() => {
      const handle = serverSide.onmessage!;
      serverSide.onmessage = (message, extra) => {
        if ("method" in message && message.method === "tools/call") {
          const params = message.params as Record<string, unknown>;
          calls.push({ name: params["name"], task: params["task"] !== undefined });
        }
        handle(message, extra);
      };
    });
    return clientSide;
  };
  return { factory, calls };
}

describe("task tools refreshed on notifications/tools/list_changed", () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("a tool that stops supporting tasks is then called plainly and its result read; one that supports them again is called as a task", async () => {
    const dir = mkdtempSync(join(tmpdir(), "driver-task-tools-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const provider = openFixtureProviderService(join(dir, "provider.db"), { taskSupport: "optional", taskPollIntervalMs: 5 });
    cleanups.push(() => provider.close());
    const { factory, calls } = fixtureOverMemory(provider);
    const { logger, lines, waitFor } = captureLogger();
    const mcp = new McpConnections(
      { servers: { tracker: { type: "stdio", command: "unused", args: [] } } },
      { createTransport: factory, logger },
    );
    cleanups.push(() => mcp.closeAll());

    const taskIds: string[] = [];
    const createIssue = (title: string) =>
      mcp.callTool(
        "tracker",
        { name: CREATE_ISSUE_TOOL, arguments: { title, body: "b" }, _meta: { [IDEMPOTENCY_KEY_META]: newUlid() } },
        { timeoutMs: 10_000, onTaskCreated: async (taskId) => void taskIds.push(taskId) },
      );
    // the Driver's log event of its n-th refresh (the n-th list_changed it has acted on)
    const refreshes = () => lines.filter((line) => line["msg"] === "mcp.task_tools_refreshed");
    const refresh = async (n: number) => {
      await waitFor(() => refreshes().length >= n);
      return refreshes()[n - 1]!;
    };

    expect(await createIssue("as a task")).toMatchObject({ structuredContent: { title: "as a task" } });
    expect(taskIds).toHaveLength(1);

    provider.setFaults({ withdrawTaskSupport: true });
    expect((await refresh(1))["taskTools"]).toEqual([]);
    expect(await createIssue("plain")).toMatchObject({ structuredContent: { title: "plain" } });
    expect(taskIds).toHaveLength(1);

    provider.setFaults({ withdrawTaskSupport: false });
    expect((await refresh(2))["taskTools"]).toEqual(["createIssue", "closeIssue"]);
    expect(await createIssue("a task again")).toMatchObject({ structuredContent: { title: "a task again" } });
    expect(taskIds).toHaveLength(2);

    expect(calls).toEqual([
      { name: CREATE_ISSUE_TOOL, task: true },
      { name: CREATE_ISSUE_TOOL, task: false },
      { name: CREATE_ISSUE_TOOL, task: true },
    ]);
    expect(Object.values(provider.stats().writes)).toEqual([1, 1, 1]);
    // bounded so that a Driver that never acts on list_changed fails here rather than at the project's 60 s
  }, 15_000);
});
