import { z } from "zod";
import { MAX_ERROR_DETAILS_BYTES, safeJsonObjectSchema, textSchema } from "./input-safety.contract.js";

/**
 * Stable error codes of the runtime (DESIGN.md §9). A code never changes meaning once shipped.
 * - `external_effect.unknown`: the write's fate is unknown; the effect is fenced and never replayed (not retryable).
 * - `external_effect.not_executed`: a provider adapter proved the write never happened and never will (retryable as a NEW tool call).
 * - `driver.command_driver_terminal`: the Driver that held the command ended before it finished (not retryable).
 * - `runtime.turn_interrupted`: the run's Driver ended mid-turn (retryable by resending).
 * - `mcp.tool_call_failed`: the MCP call failed before the provider could run (retryable).
 */
export const RunErrorCodeSchema = z.enum([
  "external_effect.unknown",
  "external_effect.not_executed",
  "driver.command_driver_terminal",
  "runtime.turn_interrupted",
  "mcp.tool_call_failed",
  "mcp.server_unavailable",
]);
/** One of {@link RunErrorCodeSchema}. */
export type RunErrorCode = z.infer<typeof RunErrorCodeSchema>;

/**
 * The error a command or a run ends with: `{code, message, retryable, details}`.
 * `details` is a small JSON object (for example `{effectId}`), at most {@link MAX_ERROR_DETAILS_BYTES}
 * bytes (4 KiB) of JSON, nested at most 400 levels; never a stack trace. `message` is 1–2000
 * characters of well-formed text without NUL.
 */
export const RunErrorSchema = z.object({
  code: RunErrorCodeSchema,
  message: textSchema(1, 2000),
  retryable: z.boolean(),
  details: safeJsonObjectSchema({ maxBytes: MAX_ERROR_DETAILS_BYTES }),
});
/** See {@link RunErrorSchema}. */
export type RunError = z.infer<typeof RunErrorSchema>;

/** The run error for a run whose Driver ended mid-turn (Mosoo's wording, DESIGN.md §8). */
export function turnInterruptedError(details: Record<string, unknown> = {}): RunError {
  return {
    code: "runtime.turn_interrupted",
    message: "This turn was interrupted before it completed. Please resend your last request.",
    retryable: true,
    details,
  };
}

/** The command error for a command whose Driver ended before the command was terminal. */
export function commandDriverTerminalError(details: Record<string, unknown> = {}): RunError {
  return {
    code: "driver.command_driver_terminal",
    message: "The Driver that held this command ended before the command finished.",
    retryable: false,
    details,
  };
}

/** The command error for an effect whose outcome is unknown and fenced; `details.effectId` names it. */
export function effectUnknownError(effectId: string, details: Record<string, unknown> = {}): RunError {
  return {
    code: "external_effect.unknown",
    message:
      "The tool call may or may not have taken effect at the provider. It is fenced and will not be retried; an operator must resolve it.",
    retryable: false,
    details: { ...details, effectId },
  };
}

/** The command error for an effect a provider adapter proved was never executed; `details.effectId` names it. */
export function effectNotExecutedError(effectId: string, details: Record<string, unknown> = {}): RunError {
  return {
    code: "external_effect.not_executed",
    message: "The provider confirmed this tool call never took effect. It may be sent again as a new tool call.",
    retryable: true,
    details: { ...details, effectId },
  };
}
