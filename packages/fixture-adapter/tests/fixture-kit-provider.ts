import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { IDEMPOTENCY_KEY_META, McpToolResultSchema, type KeyPlacement } from "@mosoo/contracts";
import type { KitProvider } from "@mosoo/effect-reconciliation/testing";
import type { FixtureProviderHandle } from "@mosoo/fixture-provider";

/** Calls `tool` on the fixture provider with the key placed as `placement` says (no key when empty). */
async function callFixtureTool(
  handle: FixtureProviderHandle,
  tool: string,
  key: string,
  args: Record<string, unknown>,
  placement: KeyPlacement = { in: "meta", name: IDEMPOTENCY_KEY_META },
) {
  const client = new Client({ name: "conformance", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(handle.url)));
  try {
    const withKey = key && placement.in === "argument" ? { ...args, [placement.name]: key } : args;
    const meta = key && placement.in === "meta" ? { [placement.name]: key } : {};
    return McpToolResultSchema.parse(await client.callTool({ name: tool, arguments: withKey, _meta: meta }));
  } finally {
    await client.close();
  }
}

/** The fixture provider as the conformance kit drives it: writes over MCP, ground truth read from its store. */
export function fixtureKitProvider(handle: FixtureProviderHandle, name: string, placement?: KeyPlacement): KitProvider {
  return {
    name,
    tools: ["createIssue"],
    argumentSets: () => [
      { title: "Conformance issue", body: "written by the conformance kit" },
      { title: "Another issue", body: "a second argument set" },
    ],
    async write(tool, key, args, options = {}) {
      if (options.delayMs) handle.setFaults({ delayBeforeCommitMs: options.delayMs });
      try {
        const result = await callFixtureTool(handle, tool, key, args, placement);
        return result.isError
          ? { status: "refused", reason: JSON.stringify(result.content).slice(0, 120) }
          : { status: "committed", result };
      } finally {
        if (options.delayMs) handle.setFaults({ delayBeforeCommitMs: 0 });
      }
    },
    async truth(key) {
      return handle.provider.peek(key);
    },
    async lookup(key) {
      const result = await callFixtureTool(handle, "getOperation", "", { idempotencyKey: key });
      return (result.structuredContent as { found?: boolean } | undefined)?.found ? "found" : "not_found";
    },
  };
}
