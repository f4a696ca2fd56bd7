// The shape of one crash scenario (what is crashed, how it recovers, what must hold) and the settings its steps share.
import type { TurnFollowUp } from "./turn-follow-up.js";

/**
 * Time (ms) a scenario waits for a write to land, a Driver to be finalized or a command to end: a
 * bound for a hang sized for the shared 2-core machine under load, not a timing assertion.
 */
export const CRASH_STEP_TIMEOUT_MS = 120_000;

/**
 * A crash scenario on real processes:
 * - `reconciliation`: `off` (the baseline fence; a bindings file is still given, to show the flag
 *   alone decides) or `on` (server `tracker` bound to the fixture adapter);
 * - `crashPoint`: `after_commit` (the provider commits and holds its response, then the Driver is
 *   SIGKILLed) or `before_commit` (the provider holds the call before its commit; the Driver is
 *   SIGKILLed while the call is in flight; the held commit is released only after the command ended,
 *   so the late commit always comes after the runtime's decision, never by a timer);
 * - `recovery`: `restart` (a new Driver process reconnects as the same instance and the command is
 *   redelivered; the API's heartbeat TTL is far above any restart time, so the restart path is
 *   certain) or `finalization` (no Driver comes back: the API's sweep finds the expired heartbeat
 *   and runs finalization repair; nothing races it);
 * - `endRunAfterRestart`: after a restart, the new Driver is stopped with `--finalize-on-exit`, so
 *   the run ends too (its own finalize) and its error is checked;
 * - `expect`: the invariants the JSON line must show. Every scenario also checks the rule
 *   `settleCommandFromEffect` (command-settlement.service.ts) enforces: a command or run that ended while the effect is `unknown` says `external_effect.unknown`,
 *   `retryable: false`, naming the effect in `details.effectIds`.
 * - `adapter?`: how `tracker` is bound when reconciliation is on: `package` (default; the fixture
 *   adapter by package, `@mosoo/fixture-adapter`), `convention` (the built-in `mcp-convention`
 *   adapter, the provider started with `--advertise-idempotency`: no provider-specific code) or
 *   `none` (the bindings file binds no server: the flag is on but `tracker` is unbound);
 * - `keyArgument?`: the provider reads the idempotency key from this tool argument
 *   (`--key-argument`) and the Driver's MCP config says so (`idempotencyKey: {in: "argument", name}`);
 * - `secondCall?`: a second `createIssue` is queued right after the first; the Driver handles one
 *   command at a time and is blocked on the first, so the second is never sent before the crash;
 * - `repeatGuard?`: the API guards `tracker` with the repeat guard (`MOSOO_REPEAT_GUARD=tracker=600000`);
 * - `followUp?`: after the run ended, what the agent does next in a new run of the same session
 *   (`resend_turn` or `follow_advice`, see `turn-follow-up.ts`); `expect.followUpAnswers` checks it.
 * Every scenario whose run failed also checks the rule `turnInterruptedRunError` (turn-account.ts) enforces: the run error's account lists
 * the write with its status, and it is retryable only when no write of the turn happened.
 */
export interface CrashScenarioSpec {
  name: string;
  reconciliation: "off" | "on";
  crashPoint: "after_commit" | "before_commit";
  recovery: "restart" | "finalization";
  endRunAfterRestart?: boolean;
  adapter?: "package" | "convention" | "none";
  /** When set, the provider reads the key from this tool argument and the Driver's config places it there. */
  keyArgument?: string;
  secondCall?: boolean;
  repeatGuard?: boolean;
  followUp?: TurnFollowUp;
  expect: {
    providerWrites: number;
    lookups: number;
    effectStatus: string;
    resolution: string | null;
    commandStatus: string;
    commandError: string | null;
    commandRetryable: boolean | null;
    runStatus: string;
    runError: string | null;
    runRetryable: boolean | null;
    /** The run error's account, `toolCallId:status` per tool call (rule 16); checked when given. */
    runAccount?: string[];
    /** The follow-up's answers, `toolCallId → "status[ code]"`; checked (deep) when given. */
    followUpAnswers?: Record<string, string>;
  };
}

/**
 * Heartbeat TTL (ms) of the API by recovery path: short when the scenario is about finalization by
 * heartbeat expiry (no Driver comes back, so nothing races the sweep), and far above any Driver
 * restart time (3–4 s seen on a loaded 2-core machine) when it is about a restart, so the sweep can
 * never finalize the instance before the new Driver reconnects.
 */
export const HEARTBEAT_TTL_MS: Record<CrashScenarioSpec["recovery"], string> = { finalization: "1500", restart: "300000" };

/** The `{code, retryable, details}` of a command's or run's error, as the run API shows it. */
export type ErrorBody = { code: string; retryable: boolean; details?: Record<string, unknown> } | null | undefined;
