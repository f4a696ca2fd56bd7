// Helpers adapter authors use to build their lookup answers: confirmed succeeded, confirmed not executed, still unknown.
import type { McpToolResult } from "@mosoo/contracts";
import type { LookupRequest } from "./adapter.contract.js";
import type { LookupOutcomeInput } from "./lookup-outcome.contract.js";
import type { Receipt } from "./receipt.contract.js";

/** A receipt as an adapter writes it: `observedAt` defaults to now (ISO 8601). */
export type ReceiptInput = Omit<Receipt, "observedAt"> & { observedAt?: string };

/**
 * `confirmed_succeeded` for `request` (echoes its tool and key), with the provider's `result` and
 * `receipt` (put the provider's recorded request fingerprint in it whenever it has one, docs/DESIGN.md §5).
 */
export function confirmedSucceeded(request: LookupRequest, result: McpToolResult, receipt: ReceiptInput = {}): LookupOutcomeInput {
  return {
    outcome: "confirmed_succeeded",
    toolName: request.toolName,
    idempotencyKey: request.idempotencyKey,
    result,
    receipt: { observedAt: new Date().toISOString(), ...receipt },
  };
}

/**
 * `confirmed_not_executed` for `request`: answer it only under the plain-miss rule of the README
 * ("The rule for a plain miss"): with `lookup_fences_key` only when the provider says the key is now
 * fenced; with `max_in_flight` on a plain miss (the runtime refuses it until
 * `lastDispatchedAtMs + maxInFlightMs`, `in_flight_window`). Never while the provider says "pending".
 */
export function confirmedNotExecuted(request: LookupRequest, receipt: ReceiptInput = {}): LookupOutcomeInput {
  return {
    outcome: "confirmed_not_executed",
    toolName: request.toolName,
    idempotencyKey: request.idempotencyKey,
    receipt: { observedAt: new Date().toISOString(), ...receipt },
  };
}

/** `still_unknown` with an adapter reason code (`^[a-z][a-z0-9_]{0,63}$`) and an optional `retryAfterMs` (ms). */
export function stillUnknown(reasonCode: string, retryAfterMs?: number): LookupOutcomeInput {
  return retryAfterMs === undefined ? { outcome: "still_unknown", reasonCode } : { outcome: "still_unknown", reasonCode, retryAfterMs };
}
