import { describe, expect, it } from "vitest";
import { equivalentToolResults } from "../src/host/index.ts";
import {
  createPlantedBugAdapter,
  createProbeAdapter,
  createProbeProvider,
  judgeAdapter,
  KIT_CASES,
  PROBE_MODES,
  runAdapterConformance,
  type PlantedBug,
  type ProbeMode,
} from "../src/testing/index.ts";

// The reference adapter passes the kit in every probe provider mode (registered as vitest cases).
for (const mode of PROBE_MODES) {
  const provider = createProbeProvider(mode);
  runAdapterConformance({ name: "probe-reference", provider, createAdapter: () => createProbeAdapter(provider), timeoutMs: 1_000 });
}

describe("the kit catches planted bugs by ground truth (the full set: npm run check:adapter-kit)", () => {
  it.each<[PlantedBug, ProbeMode, string]>([
    ["fingerprint_ignored", "fencing", "conflicting_request_not_confirmed"],
    ["wrong_declared_retention", "short_retention", "declaration_matches_provider"],
    ["pending_answered_not_executed", "pending", "pending_never_not_executed"],
    ["wrong_max_in_flight", "in_flight", "declaration_matches_provider"],
    ["reads_first_page_only", "in_flight", "older_key_after_newer_writes"],
    ["reads_first_page_only", "fencing", "older_key_after_newer_writes"],
    ["caches_confirmations", "in_flight", "forgetful_provider_never_not_executed"],
  ])(
    "%s in mode %s fails %s",
    async (bug, mode, caseName) => {
      const provider = createProbeProvider(mode);
      const report = await judgeAdapter({
        name: bug,
        provider,
        createAdapter: () => createPlantedBugAdapter(bug, provider),
        timeoutMs: 1_000,
      });
      expect(report.passed).toBe(false);
      expect(report.cases.find((c) => c.case === caseName)?.status).toBe("failed");
    },
    60_000,
  );

  it("retrying until success does not hide a wrong answer: a lagging provider and a 1 ms in-flight declaration fail committed_keys_are_confirmed", async () => {
    const provider = createProbeProvider("in_flight");
    const report = await judgeAdapter({
      name: "lagging",
      provider,
      createAdapter: () => createProbeAdapter(provider, { keyFencing: { kind: "max_in_flight", maxInFlightMs: 1 } }),
      timeoutMs: 1_000,
    });
    const committed = report.cases.find((c) => c.case === "committed_keys_are_confirmed")!;
    expect(committed.status).toBe("failed");
    expect(committed.failures[0]).toMatch(/decided confirmed_not_executed .* but the write committed/);
  }, 60_000);

  it("a provider that forgets every key sooner than declared: the reference adapter's miss is refused by the retention canary (in_flight), not applicable with a fence", async () => {
    const unfenced = createProbeProvider("in_flight");
    const inFlight = await judgeAdapter({
      name: "forgetful",
      provider: unfenced,
      createAdapter: () => createProbeAdapter(unfenced),
      timeoutMs: 1_000,
    });
    expect(inFlight.cases.find((c) => c.case === "forgetful_provider_never_not_executed")).toMatchObject({
      status: "passed",
      failures: [],
    });
    const fencing = createProbeProvider("fencing");
    const fenced = await judgeAdapter({
      name: "fenced",
      provider: fencing,
      createAdapter: () => createProbeAdapter(fencing),
      timeoutMs: 1_000,
    });
    expect(fenced.cases.find((c) => c.case === "forgetful_provider_never_not_executed")?.status).toBe("not_applicable");
  }, 60_000);

  it("runs the adapter through the injected caller (the isolation port) and reports every case", async () => {
    const provider = createProbeProvider("fencing");
    let calls = 0;
    const report = await judgeAdapter({
      name: "via caller",
      provider,
      createAdapter: () => createProbeAdapter(provider),
      caller: (adapter, request, context) => {
        calls += 1;
        return adapter.lookup(request, context);
      },
    });
    expect(report.passed).toBe(true);
    expect(calls).toBeGreaterThan(10);
    expect(report.cases.map((c) => c.case)).toEqual([...KIT_CASES]);
    expect(report.measurements).toMatchObject({ firstLookupMissed: false, missFences: true, rememberedMs: null });
  }, 60_000);
});

describe("equivalentToolResults (the kit's result comparison)", () => {
  it("JSON text in a text block compares by value: key order does not matter", () => {
    expect(
      equivalentToolResults(
        { content: [{ type: "text", text: '{"a":1,"b":[1,2]}' }] },
        { content: [{ type: "text", text: '{ "b": [1, 2], "a": 1 }' }] },
      ),
    ).toBe(true);
    expect(
      equivalentToolResults({ structuredContent: { a: 1, b: 2 }, content: [] }, { content: [], structuredContent: { b: 2, a: 1 } }),
    ).toBe(true);
  });
  it("everything else is strict: other text, other values, block order, isError", () => {
    expect(
      equivalentToolResults({ content: [{ type: "text", text: "Created #1" }] }, { content: [{ type: "text", text: "Created  #1" }] }),
    ).toBe(false);
    expect(equivalentToolResults({ content: [{ type: "text", text: '{"a":1}' }] }, { content: [{ type: "text", text: '{"a":2}' }] })).toBe(
      false,
    );
    expect(equivalentToolResults({ content: [], isError: true }, { content: [] })).toBe(false);
  });
});

describe("the older-key case waits until the newer writes are visible", () => {
  it("catches an adapter that reads only the first page even when the newer writes commit after a stall (lookups lag commits)", async () => {
    const provider = createProbeProvider("in_flight");
    // A write sent alone commits at once; writes sent together (the case's newer writes) commit only after a stall
    // longer than the provider's lookup lag (120 ms), as on a loaded machine: the older key is then visible while
    // the newer writes are not yet.
    let sending = 0;
    const stalled = Object.assign(Object.create(provider) as typeof provider, {
      write: async (...args: Parameters<typeof provider.write>) => {
        sending += 1;
        await Promise.resolve(); // every write of a Promise.all has started by now
        const together = sending > 1;
        try {
          if (together) await new Promise((resolve) => setTimeout(resolve, 150));
          return await provider.write(...args);
        } finally {
          sending -= 1;
        }
      },
    });
    const report = await judgeAdapter({
      name: "reads_first_page_only",
      provider: stalled,
      createAdapter: () => createPlantedBugAdapter("reads_first_page_only", provider),
      timeoutMs: 1_000,
    });
    expect(report.cases.find((c) => c.case === "older_key_after_newer_writes")?.status).toBe("failed");
  }, 60_000);
});
