// Schedules the next automatic lookup of a still-unknown effect (exponential backoff), or stops lookups for an operator.
import retry from "retry";
import type { OperatorAttentionReason } from "@mosoo/contracts";

/** Exponential backoff between automatic lookups of one effect: first delay, cap (ms) and factor. */
export interface LookupBackoff {
  initialMs: number;
  maxMs: number;
  factor: number;
}

/** When the next automatic lookup is due, or why none is scheduled (an operator must act). */
export type LookupSchedule =
  { nextLookupAtMs: number; operatorAttention: null } | { nextLookupAtMs: null; operatorAttention: OperatorAttentionReason };

/**
 * Schedules the next lookup after a `still_unknown` answer (pure; docs/DESIGN.md §6.3 and
 * anchors.md §5.4: "not found" is confirmed by further lookups spread over time, never one read).
 * - `operatorAttention` from the reconcile step (`key_conflict`, `retention_expired`, `retention_contradicted`) stops lookups;
 * - after `maxLookups` lookups in all, lookups stop with `lookup_bound_reached`;
 * - otherwise the delay is the `retry` package's exponential backoff for the `lookupCount`-th
 *   lookup (no jitter), and never earlier than `notBeforeMs` (an adapter's retry-after or the end of
 *   the provider's in-flight window).
 * @param lookupCount lookups made so far, including the one just answered (≥ 1).
 */
export function scheduleNextLookup(input: {
  lookupCount: number;
  maxLookups: number;
  nowMs: number;
  backoff: LookupBackoff;
  notBeforeMs?: number | undefined;
  attention?: OperatorAttentionReason | null;
}): LookupSchedule {
  if (input.attention) return { nextLookupAtMs: null, operatorAttention: input.attention };
  if (input.lookupCount >= input.maxLookups) return { nextLookupAtMs: null, operatorAttention: "lookup_bound_reached" };
  const delay = retry.createTimeout(Math.max(0, input.lookupCount - 1), {
    minTimeout: input.backoff.initialMs,
    maxTimeout: input.backoff.maxMs,
    factor: input.backoff.factor,
    randomize: false,
  });
  return { nextLookupAtMs: Math.max(input.nowMs + delay, input.notBeforeMs ?? 0), operatorAttention: null };
}
