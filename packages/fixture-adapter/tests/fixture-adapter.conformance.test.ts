import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDEMPOTENCY_KEY_META, McpToolResultSchema } from "@mosoo/contracts";
import { judgeAdapter, type KitProvider, type KitReport } from "@mosoo/effect-reconciliation/testing";
import { startFixtureProvider, type FixtureProviderHandle } from "@mosoo/fixture-provider";
import { fixtureIssueTrackerAdapterFactory } from "../src/index.js";

// The fixture adapter against a real fixture provider (started with --fence-on-lookup-miss, the
// only way it may be bound), judged by the conformance kit against the provider's own store.
let handle: FixtureProviderHandle;
let dir: string;
let report: KitReport;

async function call(tool: string, key: string, args: Record<string, unknown>) {
  const client = new Client({ name: "conformance", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(handle.url)));
  try {
    return McpToolResultSchema.parse(await client.callTool({ name: tool, arguments: args, _meta: key ? { [IDEMPOTENCY_KEY_META]: key } : {} }));
  } finally {
    await client.close();
  }
}

/** The fixture provider as the kit drives it: writes over MCP, ground truth read from its store. */
const provider: KitProvider = {
  name: "fixture provider (--fence-on-lookup-miss)",
  tools: ["createIssue"],
  argumentSets: () => [
    { title: "Conformance issue", body: "written by the conformance kit" },
    { title: "Another issue", body: "a second argument set" },
  ],
  async write(tool, key, args, options = {}) {
    if (options.delayMs) handle.setFaults({ delayBeforeCommitMs: options.delayMs });
    try {
      const result = await call(tool, key, args);
      return result.isError ? { status: "refused", reason: JSON.stringify(result.content).slice(0, 120) } : { status: "committed", result };
    } finally {
      if (options.delayMs) handle.setFaults({ delayBeforeCommitMs: 0 });
    }
  },
  async truth(key) {
    return handle.provider.peek(key);
  },
  async lookup(key) {
    const result = await call("getOperation", "", { idempotencyKey: key });
    return (result.structuredContent as { found?: boolean } | undefined)?.found ? "found" : "not_found";
  },
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-conformance-"));
  handle = await startFixtureProvider({ dbFile: join(dir, "provider.db"), fenceOnLookupMiss: true });
  report = await judgeAdapter({ name: "fixture-issue-tracker", provider, serverId: "tracker", createAdapter: () => fixtureIssueTrackerAdapterFactory.create({ url: handle.url }) });
  console.log(JSON.stringify({ kit: report.name, provider: report.provider, measurements: report.measurements, cases: Object.fromEntries(report.cases.map((c) => [c.case, c.status])) }));
}, 120_000);
afterAll(async () => {
  await handle.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("adapter conformance: fixture-issue-tracker on the real fixture provider", () => {
  it("passes every case of the kit (pending: not applicable, the provider has no pending state)", () => {
    const failed = report.cases.filter((c) => c.status === "failed");
    expect(failed).toEqual([]);
    expect(report.cases.find((c) => c.case === "pending_never_not_executed")?.status).toBe("not_applicable");
    expect(report.cases.find((c) => c.case === "late_commit_never_not_executed")?.status).toBe("passed");
  });
  it("the provider measures as declared: no lookup lag, a miss fences, keys outlive the probe", () => {
    expect(report.measurements).toMatchObject({ firstLookupMissed: false, missFences: true, rememberedMs: null });
  });
});
