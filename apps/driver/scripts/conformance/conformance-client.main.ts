#!/usr/bin/env node
/**
 * The MCP client under test in the conformance kit's client scenarios: the Driver's own
 * `McpConnections` (connect, `initialize`, `tools/call` with the idempotency key placed as the
 * Driver places it). The kit runs `node --import tsx conformance-client.main.ts <serverUrl>` with
 * `MCP_CONFORMANCE_SCENARIO` set. Exit 0 when the scenario's calls succeeded; otherwise one line on
 * stderr and exit 1 (the kit then judges from what its server saw).
 */
import { randomUUID } from "node:crypto";
import { McpConnections, placeIdempotencyKey } from "../../src/mcp-connections.js";

/** The tool call each client scenario expects (the kit's test servers offer these tools); other scenarios only connect. */
const SCENARIO_CALLS: Readonly<Record<string, { name: string; arguments: Record<string, unknown> }>> = {
  tools_call: { name: "add_numbers", arguments: { a: 5, b: 3 } },
  "sse-retry": { name: "test_reconnection", arguments: {} },
};

const SERVER_ID = "conformance";
const CALL_TIMEOUT_MS = 20_000;

async function main(): Promise<void> {
  const url = process.argv.at(-1);
  if (url === undefined || !/^https?:\/\//.test(url)) throw new Error("usage: conformance-client.main.ts <serverUrl>");
  const scenario = process.env["MCP_CONFORMANCE_SCENARIO"] ?? "";
  const connections = new McpConnections({ servers: { [SERVER_ID]: { type: "http", url } } }, { connectTimeoutMs: CALL_TIMEOUT_MS });
  try {
    await connections.ensureConnected(SERVER_ID);
    const call = Object.hasOwn(SCENARIO_CALLS, scenario) ? SCENARIO_CALLS[scenario] : undefined;
    if (call) {
      const placed = placeIdempotencyKey(connections.keyPlacement(SERVER_ID), call.arguments, `conformance-${randomUUID()}`);
      await connections.callTool(SERVER_ID, { name: call.name, ...placed }, { timeoutMs: CALL_TIMEOUT_MS });
    }
  } finally {
    await connections.closeAll();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`conformance-client: ${message.split("\n")[0]}\n`);
    process.exit(1);
  },
);
