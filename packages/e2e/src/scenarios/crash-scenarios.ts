import type { CrashScenarioSpec } from "./crash-scenario.js";

/** The demo's crash scenarios with the invariants each must show (README "Main job"). */
export const CRASH_SCENARIOS: CrashScenarioSpec[] = [
  {
    name: "driver-crash-after-commit",
    reconciliation: "off",
    crashPoint: "after_commit",
    recovery: "restart",
    expect: { providerWrites: 1, lookups: 0, effectStatus: "unknown", resolution: null, commandStatus: "failed", commandError: "external_effect.unknown" },
  },
  {
    name: "reconciled-after-restart",
    reconciliation: "on",
    crashPoint: "after_commit",
    recovery: "restart",
    expect: { providerWrites: 1, lookups: 1, effectStatus: "succeeded", resolution: "reconciled", commandStatus: "completed", commandError: null },
  },
  {
    name: "reconciled-by-convention",
    reconciliation: "on",
    crashPoint: "after_commit",
    recovery: "restart",
    adapter: "convention",
    expect: { providerWrites: 1, lookups: 1, effectStatus: "succeeded", resolution: "reconciled", commandStatus: "completed", commandError: null },
  },
  {
    name: "reconciled-in-finalization-repair",
    reconciliation: "on",
    crashPoint: "after_commit",
    recovery: "finalization",
    expect: { providerWrites: 1, lookups: 1, effectStatus: "succeeded", resolution: "reconciled", commandStatus: "completed", commandError: null },
  },
  {
    name: "confirmed-not-executed",
    reconciliation: "on",
    crashPoint: "before_commit",
    recovery: "finalization",
    expect: { providerWrites: 0, lookups: 1, effectStatus: "not_executed", resolution: "reconciled", commandStatus: "failed", commandError: "external_effect.not_executed" },
  },
  {
    name: "fenced-with-flag-off",
    reconciliation: "off",
    crashPoint: "after_commit",
    recovery: "finalization",
    expect: { providerWrites: 1, lookups: 0, effectStatus: "unknown", resolution: null, commandStatus: "failed", commandError: "driver.command_driver_terminal" },
  },
];
