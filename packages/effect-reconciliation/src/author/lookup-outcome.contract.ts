// The schemas of an adapter's lookup answer: confirmed succeeded, confirmed not executed, or still unknown with a reason code.
import { ToolNameSchema, UlidSchema } from "@mosoo/contracts";
import { z } from "zod";
import { BoundedMcpToolResultSchema, ReceiptSchema } from "./receipt.contract.js";

/** The pattern of every reason code, runtime's or adapter's: `^[a-z][a-z0-9_]{0,63}$`. */
export const REASON_CODE_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * A reason code chosen by an adapter for its own `still_unknown` answer (e.g. `rate_limited`,
 * `provider_unavailable`): any string matching {@link REASON_CODE_PATTERN}. Branded so that it is
 * never confused, at the type level, with a runtime's `RuntimeReasonCode`; a decision also says
 * which side chose its code (`reasonSource`), so an adapter reusing a runtime code's spelling is
 * still told apart.
 */
export const AdapterReasonCodeSchema = z
  .string()
  .regex(REASON_CODE_PATTERN, "reason code must match ^[a-z][a-z0-9_]{0,63}$")
  .brand<"AdapterReasonCode">();
/** See {@link AdapterReasonCodeSchema}. */
export type AdapterReasonCode = z.infer<typeof AdapterReasonCodeSchema>;

/**
 * "The provider has the write for this key": echoes `toolName` and `idempotencyKey` (the runtime
 * refuses an answer about another tool or key), carries the provider's MCP tool `result` (at most
 * `MAX_RESULT_BYTES`) and a `receipt`.
 */
export const ConfirmedSucceededOutcomeSchema = z.strictObject({
  outcome: z.literal("confirmed_succeeded"),
  toolName: ToolNameSchema,
  idempotencyKey: UlidSchema,
  result: BoundedMcpToolResultSchema,
  receipt: ReceiptSchema,
});

/**
 * "The write for this key did not happen and can no longer happen". Echoes
 * `toolName` and `idempotencyKey`; carries a `receipt`. When to answer it (the plain-miss rule,
 * README "The rule for a plain miss"):
 * - the adapter declares `lookup_fences_key`: only when the provider says the key is now fenced
 *   (tombstoned); on an unfenced "not found" answer `still_unknown`;
 * - the adapter declares `max_in_flight`: on a plain "not found". The promise is the declaration's:
 *   the runtime refuses it (`in_flight_window`) until `lastDispatchedAtMs + maxInFlightMs`;
 * - never while the provider reports the key pending / in progress, nor after a lookup that failed
 *   or was aborted (answer `still_unknown` or throw).
 * The runtime still checks the retention window and the in-flight time (§5).
 */
export const ConfirmedNotExecutedOutcomeSchema = z.strictObject({
  outcome: z.literal("confirmed_not_executed"),
  toolName: ToolNameSchema,
  idempotencyKey: UlidSchema,
  receipt: ReceiptSchema,
});

/**
 * "I cannot tell (yet)": an adapter {@link AdapterReasonCodeSchema reason code} and, optionally,
 * `retryAfterMs` (positive integer, milliseconds): the earliest useful time of the next lookup,
 * relative to the lookup's `nowMs`.
 */
export const StillUnknownOutcomeSchema = z.strictObject({
  outcome: z.literal("still_unknown"),
  reasonCode: AdapterReasonCodeSchema,
  retryAfterMs: z.number().int().positive().optional(),
});

/**
 * What a valid adapter answer looks like, discriminated on `outcome`:
 * `confirmed_succeeded` | `confirmed_not_executed` | `still_unknown`. All objects are strict
 * (unknown keys are refused). Passing this schema is necessary, not sufficient: the runtime's
 * fail-closed checks (§5) still apply; see `reconcileEffect`.
 */
export const LookupOutcomeSchema = z.discriminatedUnion("outcome", [
  ConfirmedSucceededOutcomeSchema,
  ConfirmedNotExecutedOutcomeSchema,
  StillUnknownOutcomeSchema,
]);
/** A parsed adapter answer; see {@link LookupOutcomeSchema}. */
export type LookupOutcome = z.infer<typeof LookupOutcomeSchema>;
/** What an adapter may return (the schema's input: plain strings, `result.content` optional). */
export type LookupOutcomeInput = z.input<typeof LookupOutcomeSchema>;
/** The `confirmed_succeeded` branch of {@link LookupOutcome}. */
export type ConfirmedSucceededOutcome = z.infer<typeof ConfirmedSucceededOutcomeSchema>;
/** The `confirmed_not_executed` branch of {@link LookupOutcome}. */
export type ConfirmedNotExecutedOutcome = z.infer<typeof ConfirmedNotExecutedOutcomeSchema>;
/** The `still_unknown` branch of {@link LookupOutcome}. */
export type StillUnknownOutcome = z.infer<typeof StillUnknownOutcomeSchema>;
