// The turn's account: the one pure function that builds the run error of an interrupted turn.
import {
  MAX_ERROR_DETAILS_BYTES,
  WRITTEN_TURN_STATUSES,
  runEffectsUnknownError,
  turnInterruptedAfterWritesError,
  turnInterruptedError,
  type CommandStatus,
  type EffectStatus,
  type RunError,
  type TurnAccount,
  type TurnToolCall,
  type TurnToolCallStatus,
} from "@mosoo/contracts";

/**
 * What the ledger holds about one tool call of the turn, read in the transaction that ends the run:
 * its command's `seq` (queue order), ids, server and tool, the effect's and the command's status, the
 * command error's `code` (null when none), whether a compensation of it has `succeeded`, and the effect
 * it compensates (null unless it is itself a compensation).
 */
export interface TurnToolCallFacts {
  seq: number;
  toolCallId: string;
  serverId: string;
  toolName: string;
  effectId: string;
  effectStatus: EffectStatus;
  commandStatus: CommandStatus;
  commandErrorCode: string | null;
  compensated: boolean;
  compensatesEffectId: string | null;
}

/**
 * What became of one tool call: `executing`/`unknown` → `unknown` (an
 * `executing` effect behind an ending Driver is fenced); `succeeded` → `compensated` when a
 * compensation of it succeeded, else `succeeded`; `not_executed` → `not_executed`; `intent` (never
 * dispatched) → `failed` when its command failed with a code of its own (the Driver refused it before
 * claiming, e.g. `mcp.server_unavailable`), else `never_sent`.
 */
export function turnToolCallStatus(f: TurnToolCallFacts): TurnToolCallStatus {
  switch (f.effectStatus) {
    case "executing":
    case "unknown":
      return "unknown";
    case "succeeded":
      return f.compensated ? "compensated" : "succeeded";
    case "not_executed":
      return "not_executed";
    case "intent":
      return f.commandStatus === "failed" && f.commandErrorCode !== null && f.commandErrorCode !== "driver.command_driver_terminal"
        ? "failed"
        : "never_sent";
  }
}

/** At most this many unknown effect ids in `details.effectIds` (the rest are counted in `details.effectIdsOmitted`), so the 4 KiB details limit holds. */
const MAX_UNKNOWN_IDS = 60;
/** At most this many tool calls are named per sentence of the message (the rest: "and N more"). */
const NAMES_PER_SENTENCE = 3;
/** Listing order when not every tool call fits the details: the written ones first. */
const LIST_PRIORITY: Record<TurnToolCallStatus, number> = {
  unknown: 0,
  succeeded: 1,
  compensated: 2,
  failed: 3,
  not_executed: 4,
  never_sent: 5,
};

function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** "createIssue (toolCallId tc-1), …, and 2 more", names clipped so the message stays within its 2000 characters. */
function names(calls: readonly TurnToolCall[], suffix: (c: TurnToolCall) => string = () => ""): string {
  const shown = calls.slice(0, NAMES_PER_SENTENCE).map((c) => `${clip(c.toolName, 60)} (toolCallId ${clip(c.toolCallId, 60)}${suffix(c)})`);
  const more = calls.length - shown.length;
  return more > 0 ? `${shown.join(", ")} and ${more} more` : shown.join(", ");
}

/** The plain-words sentences of the account: what completed (never repeat), what is unknown, what may be sent again. */
function accountSentences(calls: readonly TurnToolCall[]): string[] {
  const of = (s: TurnToolCallStatus) => calls.filter((c) => c.status === s);
  const out: string[] = [];
  const done = of("succeeded");
  if (done.length > 0) out.push(`Completed, must not be sent again: ${names(done)}.`);
  const undone = of("compensated");
  if (undone.length > 0) out.push(`Completed and since undone by an operator's compensation, must not be sent again: ${names(undone)}.`);
  const unknown = of("unknown");
  if (unknown.length > 0) out.push(`Outcome unknown, must not be sent again: ${names(unknown)}.`);
  const again = calls.filter((c) => c.status === "never_sent" || c.status === "not_executed" || c.status === "failed");
  if (again.length > 0) {
    const why = (c: TurnToolCall) =>
      c.status === "never_sent"
        ? ", never sent"
        : c.status === "not_executed"
          ? ", proven not executed"
          : `, failed ${clip(c.errorCode ?? "", 60)}`;
    out.push(`Not done, may be sent again as new tool calls: ${names(again, why)}.`);
  }
  return out;
}

/**
 * Bounds the account to the details limit: every tool call is counted; as many are listed as fit
 * (written ones first, then in queue order), the rest counted in `omitted` with the route to read them.
 */
function boundedAccount(runId: string, calls: readonly TurnToolCall[], baseDetails: Record<string, unknown>): TurnAccount {
  const counts: TurnAccount["counts"] = {};
  for (const c of calls) counts[c.status] = (counts[c.status] ?? 0) + 1;
  const rest = `GET /v1/runs/${runId}/tool-calls/{toolCallId} (or the whole run: GET /v1/runs/${runId})`;
  const ranked = calls.map((c, i) => ({ c, i })).sort((a, b) => LIST_PRIORITY[a.c.status] - LIST_PRIORITY[b.c.status] || a.i - b.i);
  const kept = new Set<number>();
  const sizeWith = (n: number) =>
    jsonBytes({
      ...baseDetails,
      account: { total: calls.length, counts, toolCalls: ranked.slice(0, n).map((r) => r.c), omitted: calls.length - n, rest },
    });
  let n = 0;
  while (n < ranked.length && sizeWith(n + 1) <= MAX_ERROR_DETAILS_BYTES) n += 1;
  for (const r of ranked.slice(0, n)) kept.add(r.i);
  const toolCalls = calls.filter((_, i) => kept.has(i));
  const omitted = calls.length - toolCalls.length;
  return { total: calls.length, counts, toolCalls, omitted, ...(omitted > 0 ? { rest } : {}) };
}

/**
 * The run error of a run whose turn was interrupted (its Driver ended: restart, finalization repair,
 * sweep, deregistration; flag on or off), built ONLY from `facts`, which the caller reads from the
 * ledger in the transaction that ends the run (docs/DESIGN.md §3 rules 14 and 16):
 * - any tool call `unknown` → `external_effect.unknown`, `retryable: false`, `details.effectIds` (the
 *   unknown effects, at most 60; `details.effectIdsOmitted` counts the rest), message as for every
 *   unknown effect plus the account in plain words;
 * - else any `succeeded` or `compensated` → `runtime.turn_interrupted_after_writes`, `retryable: false`,
 *   the account in plain words and the advice to continue from the listed results;
 * - else (nothing of the turn was written) → `runtime.turn_interrupted`, `retryable: true`, "Please resend
 *   your last request." (the only wording that invites a resend).
 * Every error carries `details.account` ({@link TurnAccount}: every tool call counted, as many listed as
 * fit the 4 KiB details limit) and `extraDetails` (e.g. `driverInstanceId`).
 */
export function turnInterruptedRunError(
  runId: string,
  facts: readonly TurnToolCallFacts[],
  extraDetails: Record<string, unknown> = {},
): RunError {
  const calls: TurnToolCall[] = [...facts]
    .sort((a, b) => a.seq - b.seq)
    .map((f) => {
      const status = turnToolCallStatus(f);
      return {
        toolCallId: f.toolCallId,
        serverId: f.serverId,
        toolName: f.toolName,
        effectId: f.effectId,
        status,
        ...(status === "failed" && f.commandErrorCode ? { errorCode: clip(f.commandErrorCode, 128) } : {}),
        ...(f.compensatesEffectId ? { compensatesEffectId: f.compensatesEffectId } : {}),
      };
    });
  const unknownIds = calls.filter((c) => c.status === "unknown").map((c) => c.effectId);
  const sentences = accountSentences(calls);
  if (unknownIds.length > 0) {
    const shownIds = [...unknownIds].sort().slice(0, MAX_UNKNOWN_IDS);
    const base = {
      ...extraDetails,
      ...(unknownIds.length > shownIds.length ? { effectIdsOmitted: unknownIds.length - shownIds.length } : {}),
    };
    const account = boundedAccount(runId, calls, { ...base, effectIds: shownIds });
    const err = runEffectsUnknownError(shownIds, { ...base, account });
    return { ...err, message: clip(`${err.message} ${sentences.join(" ")}`, 2000) };
  }
  const account = boundedAccount(runId, calls, extraDetails);
  if (calls.some((c) => WRITTEN_TURN_STATUSES.includes(c.status))) {
    const message = [
      "This turn was interrupted before it completed, after some of its writes were done.",
      ...sentences,
      "Do not resend your last request: continue from these results (details.account lists every tool call).",
    ].join(" ");
    return turnInterruptedAfterWritesError(clip(message, 2000), { ...extraDetails, account });
  }
  return turnInterruptedError({ ...extraDetails, account });
}
