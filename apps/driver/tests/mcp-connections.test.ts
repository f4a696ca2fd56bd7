import { join } from "node:path";
import { IDEMPOTENCY_KEY_META, newUlid } from "@mosoo/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { createMcpTransport, McpConnections, McpServerUnavailableError } from "../src/mcp-connections.js";
import { startHttpMcpServer, ToolRecorder } from "./helpers/recording-mcp-server.js";

const TSX = join(import.meta.dirname, "..", "..", "..", "node_modules", ".bin", "tsx");
const STDIO_SERVER = join(import.meta.dirname, "fixtures", "stdio-mcp-server.ts");

const open: McpConnections[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.closeAll()));
});

describe("McpConnections", () => {
  it("calls a Streamable HTTP server and sends _meta; one client is reused across calls", async () => {
    const recorder = new ToolRecorder();
    const server = await startHttpMcpServer(recorder);
    try {
      const mcp = new McpConnections({ servers: { issues: { type: "http", url: server.url } } });
      open.push(mcp);
      const key = newUlid();
      const first = await mcp.callTool(
        "issues",
        { name: "create_issue", arguments: { title: "a" }, _meta: { [IDEMPOTENCY_KEY_META]: key } },
        { timeoutMs: 5_000 },
      );
      await mcp.callTool("issues", { name: "create_issue", arguments: { title: "b" }, _meta: {} }, { timeoutMs: 5_000 });
      expect(first).toMatchObject({ content: [{ type: "text", text: "created a" }], _meta: { "io.fixture/operation-id": "op-1" } });
      expect(recorder.calls.map((c) => c.meta?.[IDEMPOTENCY_KEY_META])).toEqual([key, undefined]);
    } finally {
      await server.close();
    }
  });

  it("starts a stdio server with the configured args and env and sends _meta to it", async () => {
    const mcp = new McpConnections({
      servers: { local: { type: "stdio", command: TSX, args: [STDIO_SERVER], env: { FIXTURE_FLAG: "on" } } },
    });
    open.push(mcp);
    const key = newUlid();
    const result = (await mcp.callTool(
      "local",
      { name: "echo_meta", arguments: { title: "t" }, _meta: { [IDEMPOTENCY_KEY_META]: key } },
      { timeoutMs: 20_000 },
    )) as {
      content: { text: string }[];
    };
    expect(JSON.parse(result.content[0]?.text ?? "{}")).toEqual({ title: "t", meta: { [IDEMPOTENCY_KEY_META]: key }, env: "on" });
  }, 30_000);

  it("refuses an unconfigured server id with reason not_configured", async () => {
    const mcp = new McpConnections({ servers: {} });
    expect(mcp.hasServer("issues")).toBe(false);
    expect(mcp.hasServer("toString")).toBe(false);
    const failure = await mcp.ensureConnected("issues").catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(McpServerUnavailableError);
    expect(failure).toMatchObject({ serverId: "issues", reason: "not_configured" });
  });

  it("reports a stdio command that cannot start as connect_failed, and tries again on the next use", async () => {
    let transportsCreated = 0;
    const mcp = new McpConnections(
      { servers: { broken: { type: "stdio", command: "/nonexistent/mcp-server", args: [] } } },
      {
        createTransport: (id, config) => {
          transportsCreated += 1;
          return createMcpTransport(id, config);
        },
      },
    );
    open.push(mcp);
    await expect(mcp.ensureConnected("broken")).rejects.toMatchObject({ reason: "connect_failed" });
    await expect(mcp.ensureConnected("broken")).rejects.toMatchObject({ reason: "connect_failed" });
    expect(transportsCreated).toBe(2);
  });
});
