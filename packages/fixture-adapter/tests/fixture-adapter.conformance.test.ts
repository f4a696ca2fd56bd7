import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { judgeAdapter, type KitReport } from "@mosoo/effect-reconciliation/testing";
import { startFixtureProvider, type FixtureProviderHandle } from "@mosoo/fixture-provider";
import { fixtureIssueTrackerAdapterFactory } from "../src/index.js";
import { fixtureKitProvider } from "./fixture-kit-provider.js";

// The fixture adapter against a real fixture provider (started with --fence-on-lookup-miss, the
// only way it may be bound), judged by the conformance kit against the provider's own store.
let handle: FixtureProviderHandle;
let dir: string;
let report: KitReport;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-conformance-"));
  handle = await startFixtureProvider({ dbFile: join(dir, "provider.db"), fenceOnLookupMiss: true });
  const provider = fixtureKitProvider(handle, "fixture provider (--fence-on-lookup-miss)");
  report = await judgeAdapter({
    name: "fixture-issue-tracker",
    provider,
    serverId: "tracker",
    createAdapter: () => fixtureIssueTrackerAdapterFactory.create({ url: handle.url }),
  });
  console.log(
    JSON.stringify({
      kit: report.name,
      provider: report.provider,
      measurements: report.measurements,
      cases: Object.fromEntries(report.cases.map((c) => [c.case, c.status])),
    }),
  );
}, 120_000);
afterAll(async () => {
  await handle.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("adapter conformance: fixture-issue-tracker on the real fixture provider", () => {
  it("passes every case of the kit (pending: not applicable, the provider has no pending state)", () => {
    expect(report.cases.filter((c) => c.status === "failed")).toEqual([]);
    expect(report.cases.find((c) => c.case === "pending_never_not_executed")?.status).toBe("not_applicable");
    expect(report.cases.find((c) => c.case === "late_commit_never_not_executed")?.status).toBe("passed");
  });
  it("the provider measures as declared: no lookup lag, a miss fences, keys outlive the probe", () => {
    expect(report.measurements).toMatchObject({ firstLookupMissed: false, missFences: true, rememberedMs: null });
  });
});

describe("the same adapter bound to a provider that does NOT fence on a miss", () => {
  it("fails the kit: its lookup_fences_key declaration contradicts the provider", async () => {
    const d = mkdtempSync(join(tmpdir(), "mosoo-conformance-unfenced-"));
    const unfenced = await startFixtureProvider({ dbFile: join(d, "provider.db"), fenceOnLookupMiss: false });
    try {
      const r = await judgeAdapter({
        name: "fixture-issue-tracker",
        provider: fixtureKitProvider(unfenced, "fixture provider (no fence)"),
        createAdapter: () => fixtureIssueTrackerAdapterFactory.create({ url: unfenced.url }),
      });
      expect(r.passed).toBe(false);
      expect(r.cases.find((c) => c.case === "declaration_matches_provider")?.failures.join(" ")).toMatch(/a miss does not fence/);
    } finally {
      await unfenced.close();
      rmSync(d, { recursive: true, force: true });
    }
  }, 120_000);
});
