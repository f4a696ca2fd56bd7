import type { CrashScenarioSpec } from "./crash-scenario.js";

/**
 * The demo's crash scenarios with the invariants each must show (README "Two commands"). The two
 * flag-off scenarios are issue 16's repro 4: after a Driver crash with the effect `unknown`, the
 * command AND the run say `external_effect.unknown`, not retryable, on the restart path and on the
 * finalization path alike (DESIGN.md §3 rule 14).
 */
export const CRASH_SCENARIOS: CrashScenarioSpec[] = [
  {
    name: "driver-crash-after-commit",
    reconciliation: "off",
    crashPoint: "after_commit",
    recovery: "restart",
    endRunAfterRestart: true,
    expect: {
      providerWrites: 1,
      lookups: 0,
      effectStatus: "unknown",
      resolution: null,
      commandStatus: "failed",
      commandError: "external_effect.unknown",
      commandRetryable: false,
      runStatus: "failed",
      runError: "external_effect.unknown",
      runRetryable: false,
    },
  },
  {
    name: "reconciled-after-restart",
    reconciliation: "on",
    crashPoint: "after_commit",
    recovery: "restart",
    expect: {
      providerWrites: 1,
      lookups: 1,
      effectStatus: "succeeded",
      resolution: "reconciled",
      commandStatus: "completed",
      commandError: null,
      commandRetryable: null,
      runStatus: "active",
      runError: null,
      runRetryable: null,
    },
  },
  {
    name: "reconciled-in-finalization-repair",
    reconciliation: "on",
    crashPoint: "after_commit",
    recovery: "finalization",
    expect: {
      providerWrites: 1,
      lookups: 1,
      effectStatus: "succeeded",
      resolution: "reconciled",
      commandStatus: "completed",
      commandError: null,
      commandRetryable: null,
      runStatus: "failed",
      runError: "runtime.turn_interrupted",
      runRetryable: true,
    },
  },
  {
    name: "confirmed-not-executed",
    reconciliation: "on",
    crashPoint: "before_commit",
    recovery: "finalization",
    expect: {
      providerWrites: 0,
      lookups: 1,
      effectStatus: "not_executed",
      resolution: "reconciled",
      commandStatus: "failed",
      commandError: "external_effect.not_executed",
      commandRetryable: true,
      runStatus: "failed",
      runError: "runtime.turn_interrupted",
      runRetryable: true,
    },
  },
  {
    name: "fenced-with-flag-off",
    reconciliation: "off",
    crashPoint: "after_commit",
    recovery: "finalization",
    expect: {
      providerWrites: 1,
      lookups: 0,
      effectStatus: "unknown",
      resolution: null,
      commandStatus: "failed",
      commandError: "external_effect.unknown",
      commandRetryable: false,
      runStatus: "failed",
      runError: "external_effect.unknown",
      runRetryable: false,
    },
  },
];
