// Shapes a provider's `tools/call` result into what the API accepts: output cut to size and made well-formed, a receipt the API would refuse left out.
import {
  findJsonProblem,
  formatJsonProblem,
  isWellFormedText,
  MAX_PROVIDER_RECEIPT_BYTES,
  toMcpExecuteCommandResult,
  type McpExecuteCommand,
  type McpExecuteCommandResult,
  type McpToolResult,
} from "@mosoo/contracts";
import type { Logger } from "pino";

/** Largest `outputText` the contracts accept (1 MiB, in UTF-16 code units as zod counts them). */
export const MAX_OUTPUT_TEXT_LENGTH = 1024 * 1024;
/** Largest receipt (`result._meta` as JSON) the API keeps: `MAX_PROVIDER_RECEIPT_BYTES` of @mosoo/contracts (16 KiB). */
export const MAX_RECEIPT_BYTES = MAX_PROVIDER_RECEIPT_BYTES;

/**
 * The command result and the receipt of a parsed `tools/call` result, as the API will take them:
 * - `outputText` over {@link MAX_OUTPUT_TEXT_LENGTH} is cut (logged `tool.output_truncated`), then any
 *   lone surrogate becomes U+FFFD (the API refuses text that is not well-formed UTF-16);
 * - the receipt (`result._meta`, opaque and optional) is left out (`null`, logged `effect.receipt_dropped`)
 *   when the API would refuse it (too deep, a forbidden key, a lone surrogate, over {@link MAX_RECEIPT_BYTES})
 *   rather than costing the record of a call that did run.
 * Logs `tool.returned` (with `durationMs` since `startedAtMs`, on `performance.now()`) first.
 */
export function shapeToolResult(
  toolResult: McpToolResult,
  payload: McpExecuteCommand,
  log: Logger,
  attempt: number,
  startedAtMs: number,
): { result: McpExecuteCommandResult; receipt: Record<string, unknown> | null } {
  let result = toMcpExecuteCommandResult(toolResult, payload);
  log.info({ attempt, isError: result.isError ?? false, durationMs: Math.round(performance.now() - startedAtMs) }, "tool.returned");
  if (result.outputText.length > MAX_OUTPUT_TEXT_LENGTH) {
    log.warn({ length: result.outputText.length, max: MAX_OUTPUT_TEXT_LENGTH }, "tool.output_truncated");
    result = { ...result, outputText: result.outputText.slice(0, MAX_OUTPUT_TEXT_LENGTH) };
  }
  // The API refuses text that is not well-formed UTF-16; a provider's lone
  // surrogate (or one left by the cut above) becomes U+FFFD so the result can still be recorded.
  if (!isWellFormedText(result.outputText)) result = { ...result, outputText: toWellFormed(result.outputText) };
  let receipt: Record<string, unknown> | null = toolResult._meta ?? null;
  // The receipt is opaque and optional: one the API would refuse (too deep, a forbidden key, a lone
  // surrogate, too large) is left out rather than costing the record of a call that did run.
  const receiptProblem = receipt ? findJsonProblem(receipt) : null;
  if (receiptProblem) {
    log.warn({ problem: formatJsonProblem(receiptProblem) }, "effect.receipt_dropped");
    receipt = null;
  } else if (receipt && Buffer.byteLength(JSON.stringify(receipt), "utf8") > MAX_RECEIPT_BYTES) {
    log.warn({ max: MAX_RECEIPT_BYTES }, "effect.receipt_dropped");
    receipt = null;
  }
  return { result, receipt };
}

/** `text` cut to `max` characters (with `…`), made well-formed and without NUL: it goes into a RunError or a reason the API validates. */
export function truncate(text: string, max: number): string {
  const cut = text.length <= max ? text : `${text.slice(0, max - 1)}…`;
  return toWellFormed(cut).replaceAll("\u0000", "\uFFFD");
}

/** `s` with every lone surrogate replaced by U+FFFD (`String.prototype.toWellFormed`, Node 20+). */
function toWellFormed(s: string): string {
  return (s as string & { toWellFormed(): string }).toWellFormed();
}
