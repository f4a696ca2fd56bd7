// The demo's crash scenarios and the invariants each must show, plus the follow-the-advice scenario the real-process test runs.
import type { CrashScenarioSpec } from "./crash-scenario.js";

/**
 * The demo's crash scenarios with the invariants each must show (README "Two commands"). The two
 * flag-off scenarios show that after a Driver crash with the effect `unknown`, the
 * command AND the run say `external_effect.unknown`, not retryable, on the restart path and on the
 * finalization path alike (see `settleCommandFromEffect` in command-settlement.service.ts).
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
    name: "reconciled-by-convention",
    reconciliation: "on",
    crashPoint: "after_commit",
    recovery: "restart",
    adapter: "convention",
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
      runError: "runtime.turn_interrupted_after_writes",
      runRetryable: false,
      runAccount: ["tc-db-1:succeeded"],
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
      runAccount: ["tc-db-1:not_executed"],
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
  {
    // An interrupted turn whose write completed (reconciled in the repair); the agent resends its last
    // request anyway: the repeat guard refuses it, naming the completed write, and the provider writes once.
    name: "resend-refused-by-repeat-guard",
    reconciliation: "on",
    crashPoint: "after_commit",
    recovery: "finalization",
    repeatGuard: true,
    followUp: "resend_turn",
    expect: {
      providerWrites: 1,
      lookups: 1,
      effectStatus: "succeeded",
      resolution: "reconciled",
      commandStatus: "completed",
      commandError: null,
      commandRetryable: null,
      runStatus: "failed",
      runError: "runtime.turn_interrupted_after_writes",
      runRetryable: false,
      runAccount: ["tc-db-1:succeeded"],
      followUpAnswers: { "tc-db-1": "409 tool_call.repeat_refused naming the earlier write" },
    },
  },
];

/**
 * Not in the demo (the real-process test runs it): a turn with one write reconciled in the repair and
 * one command never sent; the agent follows the run error's account and sends again only the never-sent
 * one; the completed write is not repeated (one provider write for its key, two in all).
 */
export const FOLLOW_ADVICE_SCENARIO: CrashScenarioSpec = {
  name: "interrupted-turn-follow-advice",
  reconciliation: "on",
  crashPoint: "after_commit",
  recovery: "finalization",
  secondCall: true,
  repeatGuard: true,
  followUp: "follow_advice",
  expect: {
    providerWrites: 1,
    lookups: 1,
    effectStatus: "succeeded",
    resolution: "reconciled",
    commandStatus: "completed",
    commandError: null,
    commandRetryable: null,
    runStatus: "failed",
    runError: "runtime.turn_interrupted_after_writes",
    runRetryable: false,
    runAccount: ["tc-db-1:succeeded", "tc-db-2:never_sent"],
    followUpAnswers: { "tc-db-2": "201" },
  },
};
