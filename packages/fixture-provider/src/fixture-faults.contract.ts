// The fixture provider's fault switches (late commit, held calls and responses, exits), their patch schema and defaults.
import { z } from "zod";

/** Upper bound of {@link FixtureFaults.delayBeforeCommitMs}: 10 minutes, in ms. */
export const MAX_DELAY_BEFORE_COMMIT_MS = 600_000;

/**
 * The fault switches of the fixture provider. All off by default ({@link DEFAULT_FIXTURE_FAULTS}).
 * - `delayBeforeCommitMs` (ms, integer 0–600 000): wait this long after a `createIssue` call arrives and
 *   before its commit transaction runs (a "late commit"). Applies to replays too (the replay check is
 *   part of the commit transaction).
 * - `holdBeforeCommit`: after a call arrives (and after any delay), hold it BEFORE its commit
 *   transaction until `release()` (or `POST /control/release`): a late commit whose moment the caller
 *   decides, not a timer (deterministic tests and demo). A held call still commits (or is refused,
 *   e.g. fenced) once released; on shutdown it answers `provider_unavailable` and writes nothing.
 * - `holdResponseAfterCommit`: after a NEW write commits, hold the tool response until `release()`
 *   (or `POST /control/release`). Replays and refusals are never held.
 * - `exitAfterCommit`: right after a NEW write commits, before answering: in process mode
 *   (`main.ts`, `exitAfterCommitMode: "kill-process"`) the process SIGKILLs itself; in-process
 *   (`exitAfterCommitMode: "drop-response"`, the default of `startFixtureProvider`) the response is
 *   dropped: the call never gets an answer.
 * - `failBeforeCommit`: answer every `createIssue` with the tool error `provider_unavailable` and write nothing.
 * - `expireTasks`: while on, every MCP task answers as one whose TTL passed (`tasks/get` and
 *   `tasks/result` refuse it as unknown, MCP `-32602`); the tasks are kept and answer again once it is
 *   off. Read on every task lookup, not once per call. Only matters with task support on.
 * - `forgetKeys`: while on, `getOperation` answers every committed key as never seen (`found: false`,
 *   `fenced: false`), as a provider that keeps keys shorter than an adapter declared; the writes stay
 *   stored (`createIssue` still replays them, `/control/stats` still counts them) and answer again once
 *   it is off. Read on every lookup.
 * - `withdrawTaskSupport`: while on, the write tools are served as plain tools although the provider
 *   was started with task support: `tools/list` declares `execution.taskSupport: "forbidden"` on them
 *   and every call runs plainly, a task-augmented one too (answered with the tool result itself, as a
 *   provider that ignores `params.task`); the `tasks` capability stays declared (it is fixed at
 *   `initialize`). Turning it on or off sends `notifications/tools/list_changed` on every open MCP
 *   session (stdio, or an in-process server on a lasting transport; the stateless HTTP endpoint has
 *   no session to notify, its next `tools/list` says it). Only matters with task support on.
 *
 * A call reads the switches once, when it arrives; changing them later does not affect it.
 */
export const FixtureFaultsSchema = z.object({
  delayBeforeCommitMs: z.number().int().min(0).max(MAX_DELAY_BEFORE_COMMIT_MS),
  holdBeforeCommit: z.boolean(),
  holdResponseAfterCommit: z.boolean(),
  exitAfterCommit: z.boolean(),
  failBeforeCommit: z.boolean(),
  expireTasks: z.boolean(),
  forgetKeys: z.boolean(),
  withdrawTaskSupport: z.boolean(),
});
/** See {@link FixtureFaultsSchema}. */
export type FixtureFaults = z.infer<typeof FixtureFaultsSchema>;

/**
 * A partial update of the fault switches (body of `POST /control/faults`, argument of `setFaults`):
 * the switches present replace the current ones; the others keep their value. Unknown keys are refused.
 */
export const FixtureFaultsPatchSchema = FixtureFaultsSchema.partial().strict();
/** See {@link FixtureFaultsPatchSchema}. */
export type FixtureFaultsPatch = z.infer<typeof FixtureFaultsPatchSchema>;

/** Every switch off, no delay. */
export const DEFAULT_FIXTURE_FAULTS: Readonly<FixtureFaults> = Object.freeze({
  delayBeforeCommitMs: 0,
  holdBeforeCommit: false,
  holdResponseAfterCommit: false,
  exitAfterCommit: false,
  failBeforeCommit: false,
  expireTasks: false,
  forgetKeys: false,
  withdrawTaskSupport: false,
});
