import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCrashScenario } from "../src/scenarios/crash-scenario.js";
import { CRASH_SCENARIOS } from "../src/scenarios/crash-scenarios.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("real processes: fixture provider, API on a temporary SQLite file, Driver child processes killed with SIGKILL", () => {
  it.each(CRASH_SCENARIOS.map((spec) => [spec.name, spec] as const))("%s holds its invariants", async (_name, spec) => {
    const workDir = mkdtempSync(join(tmpdir(), `mosoo-e2e-${spec.name}-`));
    dirs.push(workDir);
    const steps: string[] = [];
    const result = await runCrashScenario(spec, { workDir, timeline: (s) => steps.push(s) });
    expect(result.failures).toEqual([]);
    expect(result.line).toMatchObject({ scenario: spec.name, ...spec.expect });
    expect(result.line["providerCalls"]).toBeLessThanOrEqual(1);
    expect(steps.some((s) => s.includes("killed with SIGKILL"))).toBe(true);
  }, 90_000);
});
