import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runDriverCrashAfterCommit } from "../src/scenarios/driver-crash-after-commit.scenario.js";

const dirs: string[] = [];
const workDir = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), `mosoo-e2e-${name}-`));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("real processes: provider, API on a temporary SQLite file, Driver child processes", () => {
  it("fences a write committed before a SIGKILL of the Driver: one write, no replay, effect unknown", async () => {
    const steps: string[] = [];
    const result = await runDriverCrashAfterCommit({ workDir: workDir("crash"), timeline: (s) => steps.push(s) });
    expect(result.failures).toEqual([]);
    expect(result.line).toMatchObject({
      scenario: "driver-crash-after-commit",
      providerWrites: 1,
      providerCalls: 1,
      effectStatus: "unknown",
      commandStatus: "failed",
      commandError: "external_effect.unknown",
    });
    expect(steps.some((s) => s.includes("killed with SIGKILL"))).toBe(true);
  }, 90_000);
});
