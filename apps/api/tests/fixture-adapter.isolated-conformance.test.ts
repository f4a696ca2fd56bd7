import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOOP_LOGGER, type AdapterHost } from "@mosoo/effect-reconciliation/host";
import { judgeAdapter, type KitReport } from "@mosoo/effect-reconciliation/testing";
import { startFixtureProvider, type FixtureProviderHandle } from "@mosoo/fixture-provider";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";
// The kit's provider view of the fixture provider lives with the fixture adapter's own tests.
import { fixtureKitProvider } from "../../../packages/fixture-adapter/tests/fixture-kit-provider.js";

// The conformance kit judging @mosoo/fixture-adapter exactly as production runs it (docs/DESIGN.md §4):
// bound by package through the API's isolated worker host, every lookup in a worker thread. The
// kit calls the host's handle; the handle posts each lookup (a structured copy) to the worker.
const FIXTURE_PACKAGE = { module: "@mosoo/fixture-adapter", export: "fixtureIssueTrackerAdapterFactory" };

let handle: FixtureProviderHandle;
let host: AdapterHost;
let dir: string;
let report: KitReport;
let provenancePackage: string | null = null;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-isolated-conformance-"));
  handle = await startFixtureProvider({ dbFile: join(dir, "provider.db"), fenceOnLookupMiss: true });
  host = createIsolatedAdapterHost({ heapMb: 64, cpuLimitMs: 10_000, maxProcesses: 2, bindTimeoutMs: 60_000, logger: NOOP_LOGGER });
  report = await judgeAdapter({
    name: "fixture-issue-tracker (isolated)",
    provider: fixtureKitProvider(handle, "fixture provider (--fence-on-lookup-miss)"),
    serverId: "tracker",
    timeoutMs: 10_000, // a cold worker loads tsx on its first call
    createAdapter: async () => {
      const bound = await host.bind(FIXTURE_PACKAGE, { url: handle.url });
      provenancePackage = bound.provenance.packageName;
      return bound.adapter;
    },
  });
}, 240_000);
afterAll(async () => {
  await host?.close();
  await handle?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("adapter conformance in the production isolation: @mosoo/fixture-adapter through the worker host", () => {
  it("passes every case of the kit with its lookups running in worker threads", () => {
    expect(provenancePackage).toBe("@mosoo/fixture-adapter");
    expect(report.cases.filter((c) => c.status === "failed")).toEqual([]);
    expect(report.cases.find((c) => c.case === "late_commit_never_not_executed")?.status).toBe("passed");
  });
});
