import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCrashScenario } from "../src/scenarios/crash-scenario.js";
import { CRASH_SCENARIOS } from "../src/scenarios/crash-scenarios.js";
import { runOperatorResolutionScenario } from "../src/scenarios/operator-resolution.scenario.js";

/**
 * Bound (ms) of each real-process case: ~25 s on a quiet machine, up to ~85 s at a load average of
 * 15–20 on the shared 2-core machine (observed), so 3x headroom over a loaded run. A hang bound, not a timing assertion.
 */
const CASE_TIMEOUT_MS = 300_000;

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("real processes: fixture provider, API on a temporary SQLite file, Driver child processes killed with SIGKILL", () => {
  it.each(CRASH_SCENARIOS.map((spec) => [spec.name, spec] as const))(
    "%s holds its invariants",
    async (_name, spec) => {
      const workDir = mkdtempSync(join(tmpdir(), `mosoo-e2e-${spec.name}-`));
      dirs.push(workDir);
      const steps: string[] = [];
      const result = await runCrashScenario(spec, { workDir, timeline: (s) => steps.push(s) });
      expect(result.failures).toEqual([]);
      expect(result.line).toMatchObject({ scenario: spec.name, ...spec.expect });
      expect(result.line["providerCalls"]).toBeLessThanOrEqual(1);
      expect(steps.some((s) => s.includes("killed with SIGKILL"))).toBe(true);
    },
    CASE_TIMEOUT_MS,
  );
});

describe("real processes: an operator resolves a fenced effect through the CLI", () => {
  it(
    "lists, shows and resolves it; the effect ends succeeded (operator) with one audit row and one provider write",
    async () => {
      const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-operator-"));
      dirs.push(workDir);
      const steps: string[] = [];
      const result = await runOperatorResolutionScenario({ workDir, timeline: (s) => steps.push(s) });
      expect(result.failures).toEqual([]);
      expect(result.line).toMatchObject({
        providerWrites: 1,
        providerCalls: 1,
        effectStatus: "succeeded",
        resolution: "operator",
        commandError: "external_effect.unknown",
        auditedBy: ["demo-operator: unknown -> succeeded"],
      });
      expect(steps.filter((s) => s.startsWith("$ npm run effects -- ")).map((s) => s.split(" ")[5])).toEqual(["list", "show", "resolve"]);
    },
    CASE_TIMEOUT_MS,
  );
});

describe("real processes: a provider that takes the idempotency key as a tool argument", () => {
  it(
    "the Driver sends the key in the argument its config names; after a crash the write is reconciled by that key (1 write, 1 lookup)",
    async () => {
      const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-key-argument-"));
      dirs.push(workDir);
      // the same end state as the convention scenario: only where the key travels differs
      const expected = CRASH_SCENARIOS.find((spec) => spec.name === "reconciled-by-convention")!.expect;
      const result = await runCrashScenario(
        {
          name: "key-in-argument",
          reconciliation: "on",
          crashPoint: "after_commit",
          recovery: "restart",
          adapter: "convention",
          keyArgument: "idempotency_key",
          expect: expected,
        },
        { workDir, timeline: () => undefined },
      );
      expect(result.failures).toEqual([]);
      expect(result.line).toMatchObject({ ...expected, providerCalls: 1, adapter: "mcp-convention@1.0.0" });
    },
    CASE_TIMEOUT_MS,
  );
});

describe("real processes: a crash with the flag on but the server unbound", () => {
  it.each(["finalization", "restart"] as const)(
    "%s path: the command and the run say external_effect.unknown, not retryable, naming the effect (docs/DESIGN.md §3 rule 14)",
    async (recovery) => {
      const workDir = mkdtempSync(join(tmpdir(), `mosoo-e2e-unbound-${recovery}-`));
      dirs.push(workDir);
      // the same end state as the flag-off scenarios: binding nothing must answer exactly as the flag off
      const expected = CRASH_SCENARIOS.find((spec) => spec.name === "fenced-with-flag-off")!.expect;
      const result = await runCrashScenario(
        {
          name: `unbound-${recovery}`,
          reconciliation: "on",
          crashPoint: "after_commit",
          recovery,
          adapter: "none",
          ...(recovery === "restart" ? { endRunAfterRestart: true } : {}),
          expect: expected,
        },
        { workDir, timeline: () => undefined },
      );
      expect(result.failures).toEqual([]);
      expect(result.line).toMatchObject({ ...expected, providerCalls: 1 });
    },
    90_000,
  );
});
