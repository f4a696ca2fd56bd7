import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { IDEMPOTENCY_KEY_META, McpToolResultSchema } from "@mosoo/contracts";
import { runAdapterConformance } from "@mosoo/effect-reconciliation/testing";
import { startFixtureProvider, type FixtureProviderHandle } from "@mosoo/fixture-provider";
import { fixtureIssueTrackerAdapterFactory } from "../src/index.js";

// The fixture adapter against a real fixture provider (started with --fence-on-lookup-miss, the
// only way the adapter may be bound), through the adapter authors' conformance kit.
let provider: FixtureProviderHandle;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-conformance-"));
  provider = await startFixtureProvider({ dbFile: join(dir, "provider.db"), fenceOnLookupMiss: true });
});
afterAll(async () => {
  await provider.close();
  rmSync(dir, { recursive: true, force: true });
});

async function callCreateIssue(key: string, args: Record<string, unknown>) {
  const client = new Client({ name: "conformance", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(provider.url)));
  try {
    return McpToolResultSchema.parse(await client.callTool({ name: "createIssue", arguments: args, _meta: { [IDEMPOTENCY_KEY_META]: key } }));
  } finally {
    await client.close();
  }
}

runAdapterConformance({
  name: "fixture-issue-tracker",
  createAdapter: () => fixtureIssueTrackerAdapterFactory.create({ url: provider.url }),
  toolName: "createIssue",
  sampleArguments: { title: "Conformance issue", body: "written by the conformance kit" },
  serverId: "tracker",
  provider: {
    async commitWrite(key, args) {
      const result = await callCreateIssue(key, args);
      if (result.isError) throw new Error(`createIssue failed: ${JSON.stringify(result.content)}`);
      return { result };
    },
    async tryWriteAfterLookup(key, args) {
      const result = await callCreateIssue(key, args);
      return result.isError ? "refused" : "committed";
    },
  },
});
