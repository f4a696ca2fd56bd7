import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runHostileAdapterScenario, type HostileAdapterSpec } from "../src/scenarios/hostile-adapter.scenario.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/**
 * Hostile adapters on real processes (docs/DESIGN.md §4 "Adapters are untrusted code"): a real API
 * whose bindings file binds a hostile adapter module by `package: {module, export}`.
 */
const SPECS: Array<[string, HostileAdapterSpec]> = [
  [
    "repro 1: an adapter that mutates its input and answers not_executed cannot settle a committed write",
    { exportName: "mutatesInputAdapterFactory", reasonCode: "in_flight_window", restartApi: false },
  ],
  [
    "repro 1, restart path: the same adapter, looked up inline by a restarted Driver's redelivered claim",
    { exportName: "mutatesInputAdapterFactory", reasonCode: "in_flight_window", restartApi: false, recovery: "driver_restart" },
  ],
  [
    "repro 2: a floating rejection neither stops the API nor the restarted API",
    { exportName: "floatingRejectionAdapterFactory", reasonCode: "adapter_crashed", restartApi: true },
  ],
  [
    "repro 2: a throwing timer neither stops the API nor the restarted API",
    { exportName: "throwingTimerAdapterFactory", reasonCode: "adapter_crashed", restartApi: true },
  ],
];

describe("real processes: a hostile adapter module bound in the bindings file", () => {
  it.each(SPECS)(
    "%s",
    async (_name, spec) => {
      const workDir = mkdtempSync(join(tmpdir(), `mosoo-e2e-hostile-`));
      dirs.push(workDir);
      const steps: string[] = [];
      const result = await runHostileAdapterScenario(spec, { workDir, timeline: (s) => steps.push(s) });
      expect(result.failures, steps.join("\n")).toEqual([]);
      expect(result.line).toMatchObject({
        providerWrites: 1,
        effectStatus: "unknown",
        resolution: null,
        commandError: "external_effect.unknown",
        healthFailed: 0,
      });
      expect(result.line["healthOk"] as number).toBeGreaterThan(0);
      expect(result.line["firstLookupTrigger"]).toBe(spec.recovery === "driver_restart" ? "redelivery" : "finalization");
      console.log(JSON.stringify(result.line));
    },
    180_000,
  );
});
