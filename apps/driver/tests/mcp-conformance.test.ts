import { describe, expect, it } from "vitest";
import { CLAIMED_SCENARIOS } from "../scripts/conformance/expected-results.js";
import { formatConformanceTable, judgeScenario, runMcpConformance } from "../scripts/conformance/mcp-conformance.js";

// The official MCP conformance kit (offline: it starts its own servers on 127.0.0.1) against the
// fixture provider and the Driver's McpConnections; only the claimed scenarios, so the run stays short.
describe("MCP conformance (claimed scenarios)", () => {
  it("passes every claimed server and client scenario, and none is ours to fix", async () => {
    const report = await runMcpConformance({ onlyClaimed: true });
    const table = formatConformanceTable(report);

    for (const side of ["server", "client"] as const) {
      const rows = report.rows.filter((row) => row.side === side);
      expect(rows.map((row) => row.scenario).sort(), table).toEqual([...CLAIMED_SCENARIOS[side]].sort());
      for (const row of rows) {
        expect({ scenario: row.scenario, result: row.result, verdict: row.verdict }, table).toEqual({
          scenario: row.scenario,
          result: "pass",
          verdict: "claimed",
        });
        expect(row.passed, table).toBeGreaterThan(0);
        expect(row.failed, table).toBe(0);
      }
    }
    expect(report.ok).toBe(true);
  }, 180_000);
});

describe("judging a scenario", () => {
  const pass = [{ status: "SUCCESS" }];
  const fail = [{ status: "SUCCESS" }, { status: "FAILURE", errorMessage: "got 200\nmore" }];

  it("counts a claimed scenario that fails, or records no check, as ours", () => {
    expect(judgeScenario("server", "ping", pass)).toMatchObject({ result: "pass", verdict: "claimed" });
    expect(judgeScenario("server", "ping", fail)).toMatchObject({ result: "fail", verdict: "ours", reason: "claimed but fail: got 200" });
    expect(judgeScenario("client", "initialize", [])).toMatchObject({ result: "no_checks", verdict: "ours" });
  });

  it("lets a not-offered scenario fail with its reason, and never claims its pass", () => {
    expect(judgeScenario("server", "prompts-list", fail)).toMatchObject({
      verdict: "not_offered",
      reason: "the fixture offers no prompts",
    });
    expect(judgeScenario("server", "tools-call-error", pass)).toMatchObject({ result: "pass", verdict: "unclaimed_pass" });
  });

  it("counts a failing scenario missing from both lists as ours", () => {
    expect(judgeScenario("client", "a-new-scenario", fail)).toMatchObject({ verdict: "ours" });
    expect(judgeScenario("client", "a-new-scenario", pass)).toMatchObject({ verdict: "unclaimed_pass" });
  });
});
