import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { API_HEAP_FLAGS } from "@mosoo/contracts";
import { classifyEffect, soakFailed } from "../src/soak/soak-counts.js";
import { runSoak } from "../src/soak/soak-runner.js";
import { buildCompiledApps, entryPoints } from "../src/workspace-paths.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const ok = { outputText: "created issue 1" };
/** The classification of soak-counts.ts, one row per class (ledger effect vs provider truth). */
const CLASSES: Array<
  [string, Parameters<typeof classifyEffect>[0], Parameters<typeof classifyEffect>[1], ReturnType<typeof classifyEffect>]
> = [
  [
    "succeeded with the provider's output",
    { id: "e", idempotencyKey: "k", status: "succeeded", resolution: "provider_result", resultJson: JSON.stringify(ok) },
    { commits: 1, createCalls: 1, outputText: ok.outputText },
    "exactlyOnce",
  ],
  [
    "succeeded with another output",
    { id: "e", idempotencyKey: "k", status: "succeeded", resolution: "reconciled", resultJson: JSON.stringify({ outputText: "other" }) },
    { commits: 1, createCalls: 1, outputText: ok.outputText },
    "lost",
  ],
  [
    "succeeded without a commit",
    { id: "e", idempotencyKey: "k", status: "succeeded", resolution: "provider_result", resultJson: JSON.stringify(ok) },
    { commits: 0, createCalls: 1, outputText: null },
    "phantom",
  ],
  [
    "not_executed, no commit",
    { id: "e", idempotencyKey: "k", status: "not_executed", resolution: "reconciled", resultJson: null },
    { commits: 0, createCalls: 1, outputText: null },
    "notExecuted",
  ],
  [
    "not_executed but committed",
    { id: "e", idempotencyKey: "k", status: "not_executed", resolution: "reconciled", resultJson: null },
    { commits: 1, createCalls: 1, outputText: ok.outputText },
    "lost",
  ],
  [
    "two create calls for one key",
    { id: "e", idempotencyKey: "k", status: "succeeded", resolution: "provider_result", resultJson: JSON.stringify(ok) },
    { commits: 1, createCalls: 2, outputText: ok.outputText },
    "duplicated",
  ],
  [
    "intent, never sent",
    { id: "e", idempotencyKey: "k", status: "intent", resolution: null, resultJson: null },
    { commits: 0, createCalls: 0, outputText: null },
    "neverDispatched",
  ],
  [
    "still unknown",
    { id: "e", idempotencyKey: "k", status: "unknown", resolution: null, resultJson: null },
    { commits: 1, createCalls: 1, outputText: ok.outputText },
    "unknown",
  ],
  [
    "still executing",
    { id: "e", idempotencyKey: "k", status: "executing", resolution: null, resultJson: null },
    { commits: 0, createCalls: 1, outputText: null },
    "stuck",
  ],
];

describe("kill soak", () => {
  it.each(CLASSES)("classifies %s", (_name, effect, truth, expected) => {
    expect(classifyEffect(effect, truth)).toBe(expected);
  });

  it("starts the API and the Driver from their compiled build in compiled mode (no loader), from the sources through tsx by default", () => {
    buildCompiledApps();
    const compiled = entryPoints("compiled");
    expect(compiled.api.args).toEqual([...API_HEAP_FLAGS, "dist/main.js"]);
    expect(compiled.driver.args).toEqual(["dist/main.js"]);
    for (const app of [compiled.api, compiled.driver]) expect(existsSync(join(app.cwd, "dist", "main.js"))).toBe(true);
    expect(entryPoints().driver.args).toEqual(["--import", "tsx", "src/main.ts"]);
  }, 60_000);

  it("smoke: 3 SIGKILLs of real Driver processes, recovery, no lost/duplicated/phantom effect", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-soak-smoke-"));
    dirs.push(workDir);
    const report = await runSoak({ kills: 3, seed: 7, drivers: 2, apiKillRatio: 0.5, workDir, log: () => {} });
    expect(report.driverKills).toBe(3);
    expect(report.recovered).toBe(true);
    expect(report.counts.effects).toBeGreaterThan(0);
    expect(report.counts, JSON.stringify(report.counts)).toMatchObject({ lost: 0, duplicated: 0, phantom: 0, stuck: 0 });
    expect(soakFailed(report.counts)).toBe(false);
  }, 360_000); // alone 40–49 s on the shared 2-core machine, 2–3x that under load: 3x headroom over a loaded run
});
