import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { z } from "zod";

/** One tools/call the test server received. */
export interface ReceivedCall {
  tool: string;
  args: Record<string, unknown>;
  meta: Record<string, unknown> | undefined;
}

/**
 * A recorder shared by every McpServer instance the test creates: the calls it received (with the
 * `_meta` from `extra._meta`) and an optional shared event log so tests can order tool calls
 * against API calls.
 */
export class ToolRecorder {
  readonly calls: ReceivedCall[] = [];
  /** When set, `create_issue` awaits it after recording the call and before answering (a test acts while the provider holds the call). */
  hold: ((tool: string) => Promise<void>) | null = null;
  constructor(readonly events: string[] = []) {}
  callsOf(tool: string): ReceivedCall[] {
    return this.calls.filter((c) => c.tool === tool);
  }
}

/**
 * A real MCP server (official SDK, `McpServer.registerTool`) with:
 * - `create_issue {title}`: text `created <title>`, result `_meta` `{"io.fixture/operation-id": "op-<n>"}`;
 * - `reject_issue {title}`: an `isError: true` tool result (the provider's own answer);
 * - `slow_issue {title}`: waits 5 s (longer than the tests' tool timeout);
 * - `die_after_commit {title}`: records the call, then closes the server before answering.
 */
function createRecordingMcpServer(recorder: ToolRecorder): McpServer {
  const server = new McpServer({ name: "recording-test-server", version: "1.0.0" });
  const record = (tool: string, args: Record<string, unknown>, meta: Record<string, unknown> | undefined) => {
    recorder.calls.push({ tool, args, meta });
    recorder.events.push(`tool:${tool}`);
  };
  server.registerTool("create_issue", { inputSchema: { title: z.string() } }, async (args, extra) => {
    record("create_issue", args, extra._meta);
    await recorder.hold?.("create_issue");
    return {
      content: [{ type: "text", text: `created ${args.title}` }],
      _meta: { "io.fixture/operation-id": `op-${recorder.calls.length}` },
    };
  });
  server.registerTool("reject_issue", { inputSchema: { title: z.string() } }, async (args, extra) => {
    record("reject_issue", args, extra._meta);
    return { content: [{ type: "text", text: `title ${args.title} is taken` }], isError: true };
  });
  // A hostile provider: text with a lone surrogate, a receipt with a key the API refuses.
  server.registerTool("odd_issue", { inputSchema: { title: z.string() } }, async (args, extra) => {
    record("odd_issue", args, extra._meta);
    return {
      content: [{ type: "text", text: `created ${args.title} \ud800` }],
      _meta: JSON.parse('{"constructor":{"x":1}}') as Record<string, unknown>,
    };
  });
  server.registerTool("slow_issue", { inputSchema: { title: z.string() } }, async (args, extra) => {
    record("slow_issue", args, extra._meta);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    return { content: [{ type: "text", text: "too late" }] };
  });
  server.registerTool("die_after_commit", { inputSchema: { title: z.string() } }, async (args, extra) => {
    record("die_after_commit", args, extra._meta);
    setImmediate(() => void server.close());
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    return { content: [{ type: "text", text: "never delivered" }] };
  });
  return server;
}

/** A transport factory for `McpConnections` that links each new client to a fresh in-memory server. */
export function inMemoryTransportFactory(recorder: ToolRecorder): () => Transport {
  return () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    void createRecordingMcpServer(recorder).connect(serverSide);
    return clientSide;
  };
}

/** The same server over Streamable HTTP (stateless, JSON responses) on 127.0.0.1. */
export async function startHttpMcpServer(recorder: ToolRecorder): Promise<{ url: string; close: () => Promise<void> }> {
  const http: HttpServer = createServer((req, res) => {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = createRecordingMcpServer(recorder);
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
