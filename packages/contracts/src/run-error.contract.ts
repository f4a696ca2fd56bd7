// The runtime's stable error codes and the error a command or run ends with, with builders for each ending.
import { z } from "zod";
import { MAX_ERROR_DETAILS_BYTES, safeJsonObjectSchema, textSchema } from "./input-safety.contract.js";

/**
 * Stable error codes of the runtime (docs/DESIGN.md §9). A code never changes meaning once shipped.
 * - `external_effect.unknown`: a write's fate is unknown; the effect is fenced and never replayed.
 *   Never retryable, and always names the effects (`details.effectIds`, non-empty). It is the
 *   answer of a command AND of a run that end while one of their effects is `unknown`, on every
 *   path (restart, finalization repair, sweep; flag on or off; bound or not: see `settleCommandFromEffect` in command-settlement.service.ts).
 * - `external_effect.not_executed`: a provider adapter proved the write never happened and never
 *   will; the only answer that says the write may be sent again (as a NEW tool call; retryable).
 * - `driver.command_driver_terminal`: the Driver that held the command ended before it finished
 *   and no effect of the command is `unknown` (e.g. it was never dispatched); not retryable.
 * - `runtime.turn_interrupted`: the run's Driver ended mid-turn and nothing of the turn was written
 *   (no effect `succeeded`, `unknown` or `compensated`): retryable by resending the turn. Its
 *   `details.account` lists the turn's tool calls (see `turnInterruptedRunError` in turn-account.ts).
 * - `runtime.turn_interrupted_after_writes`: the run's Driver ended mid-turn after a write of the turn
 *   completed (`succeeded` or `compensated`) and none is `unknown`: NOT retryable (resending the turn
 *   would repeat the write); `details.account` lists every tool call and what became of it, and the
 *   message tells the agent to continue from those results (see `turnInterruptedRunError` in turn-account.ts).
 * - `mcp.tool_call_failed`: the MCP call failed before the provider could run (retryable).
 * - `mcp.server_unavailable`: the Driver could not use the MCP server; nothing was dispatched.
 */
export const RunErrorCodeSchema = z.enum([
  "external_effect.unknown",
  "external_effect.not_executed",
  "driver.command_driver_terminal",
  "runtime.turn_interrupted",
  "runtime.turn_interrupted_after_writes",
  "mcp.tool_call_failed",
  "mcp.server_unavailable",
]);
/** One of {@link RunErrorCodeSchema}. */
export type RunErrorCode = z.infer<typeof RunErrorCodeSchema>;

/** `details.effectIds` of an `external_effect.unknown` error: the unknown effects (1–1000 ids). */
export const UnknownEffectIdsSchema = z.array(z.string().min(1).max(64)).min(1).max(1000);

/**
 * The error a command or a run ends with: `{code, message, retryable, details}`.
 * `details` is a small JSON object (for example `{effectId}`), at most {@link MAX_ERROR_DETAILS_BYTES}
 * bytes (4 KiB) of JSON, nested at most 400 levels; never a stack trace. `message` is 1–2000
 * characters of well-formed text without NUL.
 * Invariant (see `settleCommandFromEffect` in command-settlement.service.ts and `turnInterruptedRunError` in turn-account.ts): an `external_effect.unknown` error is `retryable: false` and
 * names its effects in `details.effectIds` (non-empty); a `runtime.turn_interrupted_after_writes` error is
 * `retryable: false`; anything else is refused by this schema.
 * Strict: a field other than these four is refused, never dropped.
 */
export const RunErrorSchema = z
  .strictObject({
    code: RunErrorCodeSchema,
    message: textSchema(1, 2000),
    retryable: z.boolean(),
    details: safeJsonObjectSchema({ maxBytes: MAX_ERROR_DETAILS_BYTES }),
  })
  .superRefine((e, ctx) => {
    if (e.code === "runtime.turn_interrupted_after_writes" && e.retryable)
      ctx.addIssue({ code: "custom", path: ["retryable"], message: "runtime.turn_interrupted_after_writes is never retryable" });
    if (e.code !== "external_effect.unknown") return;
    if (e.retryable) ctx.addIssue({ code: "custom", path: ["retryable"], message: "external_effect.unknown is never retryable" });
    if (!UnknownEffectIdsSchema.safeParse(e.details["effectIds"]).success) {
      ctx.addIssue({
        code: "custom",
        path: ["details", "effectIds"],
        message: "external_effect.unknown names its effects in details.effectIds (non-empty)",
      });
    }
  });
/** See {@link RunErrorSchema}. */
export type RunError = z.infer<typeof RunErrorSchema>;

/**
 * The run error for a run whose Driver ended mid-turn (Mosoo's wording, docs/DESIGN.md §8). Only when
 * NO effect of the run is `unknown`: otherwise the run ends with {@link runEffectsUnknownError}
 * (see `settleCommandFromEffect` in command-settlement.service.ts: nothing invites a resend while a write of the turn is unknown).
 */
export function turnInterruptedError(details: Record<string, unknown> = {}): RunError {
  return {
    code: "runtime.turn_interrupted",
    message: "This turn was interrupted before it completed. Please resend your last request.",
    retryable: true,
    details,
  };
}

/**
 * The run error for a run whose Driver ended mid-turn after a write of the turn completed and none is
 * `unknown` (see `turnInterruptedRunError` in turn-account.ts): `runtime.turn_interrupted_after_writes`, `retryable: false`.
 * `message` is the plain-words account (which writes completed and must not be repeated, which were
 * never sent); `details` carries the account itself.
 */
export function turnInterruptedAfterWritesError(message: string, details: Record<string, unknown>): RunError {
  return { code: "runtime.turn_interrupted_after_writes", message, retryable: false, details };
}

/**
 * The command error for a command whose Driver ended before the command was terminal, when its
 * effect is not `unknown` (never dispatched, or none); an `unknown` effect gets {@link effectUnknownError}.
 */
export function commandDriverTerminalError(details: Record<string, unknown> = {}): RunError {
  return {
    code: "driver.command_driver_terminal",
    message: "The Driver that held this command ended before the command finished.",
    retryable: false,
    details,
  };
}

/** The message of every `external_effect.unknown` error: no resend, an operator (or a lookup) settles it. */
const UNKNOWN_MESSAGE =
  "The tool call may or may not have taken effect at the provider. It is fenced and will not be retried; do not send it again. An operator (or a provider lookup) must resolve it.";

/**
 * The command error for an effect whose outcome is unknown and fenced: `retryable: false`,
 * `details.effectId` and `details.effectIds` (`[effectId]`) name it (see `settleCommandFromEffect` in command-settlement.service.ts).
 */
export function effectUnknownError(effectId: string, details: Record<string, unknown> = {}): RunError {
  return {
    code: "external_effect.unknown",
    message: UNKNOWN_MESSAGE,
    retryable: false,
    details: { ...details, effectId, effectIds: [effectId] },
  };
}

/**
 * The run error for a run that ends while effects of its turn are `unknown` (see `settleCommandFromEffect` in command-settlement.service.ts):
 * `external_effect.unknown`, `retryable: false`, `details.effectIds` (the unknown effects, in the
 * given order; at least one). Replaces `runtime.turn_interrupted`, which invites a resend.
 * @throws Error when `effectIds` is empty (a caller must use {@link turnInterruptedError} then).
 */
export function runEffectsUnknownError(effectIds: readonly string[], details: Record<string, unknown> = {}): RunError {
  if (effectIds.length === 0) throw new Error("runEffectsUnknownError needs at least one effect id");
  return {
    code: "external_effect.unknown",
    message: `This turn ended while ${effectIds.length === 1 ? "a tool call's" : `${effectIds.length} tool calls'`} outcome is unknown. ${UNKNOWN_MESSAGE}`,
    retryable: false,
    details: { ...details, effectIds: [...effectIds] },
  };
}

/** The command error for an effect a provider adapter proved was never executed; `details.effectId` names it. */
export function effectNotExecutedError(effectId: string, details: Record<string, unknown> = {}): RunError {
  return {
    code: "external_effect.not_executed",
    message:
      "This tool call never took effect: the provider confirmed it, or the Driver never sent it. It may be sent again as a new tool call.",
    retryable: true,
    details: { ...details, effectId },
  };
}
