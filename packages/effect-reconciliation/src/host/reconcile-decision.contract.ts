// The reconcile step's decisions (ineligible, confirmed, still unknown) and the reason codes the runtime may give.
import type { McpToolResult } from "@mosoo/contracts";
import { z } from "zod";
import type { AdapterReasonCode } from "../author/lookup-outcome.contract.js";
import type { Receipt } from "../author/receipt.contract.js";

/**
 * Why an effect was not looked up at all (no adapter call was made; see `ReconciliationAdmission` in reconciliation-admission.policy.ts):
 * - `invalid_input`: the effect, `nowMs` or `timeoutMs` handed to the runtime is malformed
 *   (a host bug; looking up with it could fail open, e.g. a `NaN` time passes every window check);
 * - `invalid_declaration`: the bound adapter's declaration fails `AdapterDeclarationSchema`;
 * - `server_mismatch`: the binding is for another MCP server than the effect's;
 * - `undeclared_tool`: the adapter does not declare lookup for the effect's tool;
 * - `never_dispatched`: the effect has no dispatch time, so nothing can have reached the provider
 *   (and there is no time to measure the windows from).
 * Checked in this order.
 */
export const INELIGIBLE_REASON_CODES = [
  "invalid_input",
  "invalid_declaration",
  "server_mismatch",
  "undeclared_tool",
  "never_dispatched",
] as const;
/** See {@link INELIGIBLE_REASON_CODES}. */
export const IneligibleReasonCodeSchema = z.enum(INELIGIBLE_REASON_CODES);
/** See {@link INELIGIBLE_REASON_CODES}. */
export type IneligibleReasonCode = z.infer<typeof IneligibleReasonCodeSchema>;

/**
 * Why the runtime answered `still_unknown` on its own authority (docs/DESIGN.md §5, fail-closed):
 * - `adapter_error`: `lookup` threw or rejected;
 * - `adapter_crashed`: the code running `lookup` died under it (an isolated worker ended by an
 *   uncaught exception, a floating rejection, `process.exit` or its heap limit; see
 *   `AdapterCrashedError`). Counts as a lookup (docs/DESIGN.md §5);
 * - `lookup_timeout`: `lookup` did not settle within `timeoutMs` (the runtime stopped waiting, and an
 *   isolating host terminated the worker running it);
 * - `lookup_interrupted`: the host process stopped while the lookup ran (found at the next start:
 *   the lookup had been recorded as started, durably, before the adapter ran, so it counts);
 * - `lookup_cancelled`: the caller's own `signal` aborted first;
 * - `invalid_adapter_output`: the answer failed `LookupOutcomeSchema` (including a receipt over
 *   `MAX_RECEIPT_BYTES` or a result over `MAX_RESULT_BYTES`);
 * - `answer_mismatch`: a confirmed answer names another tool or idempotency key than the effect's;
 * - `key_conflict`: the provider recorded another request fingerprint under the key (operator attention);
 * - `retention_expired`: `confirmed_not_executed` although the provider may already have forgotten
 *   the key (operator attention);
 * - `in_flight_window`: `confirmed_not_executed` from a provider without a fence before
 *   `lastDispatchedAtMs + sendWithinMs + maxInFlightMs` (the claim's send-by deadline, see `sendDeadlinePassed` in effect-claim.contract.ts, plus the
 *   adapter's maximum in-flight time): a late commit could still land (next lookup scheduled then);
 * - `retention_contradicted`: `confirmed_not_executed` from a provider without a fence, but the same
 *   adapter did not confirm the retention canary, a key known to have committed that is at least as
 *   old and inside the declared retention window: the provider forgets sooner than
 *   it declared (operator attention);
 * - `retention_unverified`: the same miss, but no retention canary could be asked (none fits the
 *   window) or its lookup proved nothing (timeout, crash, the adapter's own `still_unknown`).
 */
export const RUNTIME_REASON_CODES = [
  "adapter_error",
  "adapter_crashed",
  "lookup_timeout",
  "lookup_interrupted",
  "lookup_cancelled",
  "invalid_adapter_output",
  "answer_mismatch",
  "key_conflict",
  "retention_expired",
  "in_flight_window",
  "retention_contradicted",
  "retention_unverified",
] as const;
/** See {@link RUNTIME_REASON_CODES}. */
export const RuntimeReasonCodeSchema = z.enum(RUNTIME_REASON_CODES);
/** See {@link RUNTIME_REASON_CODES}. */
export type RuntimeReasonCode = z.infer<typeof RuntimeReasonCodeSchema>;

/** The adapter that produced an outcome, recorded with it. */
export interface AdapterRef {
  id: string;
  version: string;
}

/** No lookup was made; the effect stays as it is (the baseline fence). `error` is one line, no stack. */
export interface IneligibleDecision {
  decision: "ineligible";
  reasonCode: IneligibleReasonCode;
  error?: string;
}

/**
 * A validated proof that the write happened: persist `result` (the provider's MCP tool result,
 * at most `MAX_RESULT_BYTES`) and `receipt` with `adapter` in one transaction (see `ReconciliationOutcomeWriter.commit` in reconciliation-outcome-writer.service.ts).
 * `result` and `receipt` are JSON copies, detached from the adapter's objects.
 */
export interface ConfirmedSucceededDecision {
  decision: "confirmed_succeeded";
  result: McpToolResult;
  receipt: Receipt;
  adapter: AdapterRef;
}

/** A validated proof that the write did not and can no longer happen (docs/DESIGN.md §5). */
export interface ConfirmedNotExecutedDecision {
  decision: "confirmed_not_executed";
  receipt: Receipt;
  adapter: AdapterRef;
}

interface StillUnknownDecisionBase {
  decision: "still_unknown";
  adapter: AdapterRef;
  /** True when automatic lookups cannot resolve it as things stand (`key_conflict`, `retention_expired`, `retention_contradicted`). */
  operatorAttention: boolean;
  /** ms since the epoch before which another lookup is pointless, when known. */
  nextLookupNotBeforeMs?: number;
  /** One line, no stack: what went wrong (runtime reasons only). */
  error?: string;
  /** The receipt of a refused, schema-valid answer: evidence for an operator, never proof. */
  receipt?: Receipt;
}

/** `still_unknown` decided by the runtime; see {@link RUNTIME_REASON_CODES}. */
export interface RuntimeStillUnknownDecision extends StillUnknownDecisionBase {
  reasonSource: "runtime";
  reasonCode: RuntimeReasonCode;
}

/**
 * `still_unknown` answered by the adapter itself, its reason code passed through. `reasonSource`
 * tells it apart from a runtime reason even when the adapter reuses a runtime code's spelling.
 */
export interface AdapterStillUnknownDecision extends StillUnknownDecisionBase {
  reasonSource: "adapter";
  reasonCode: AdapterReasonCode;
}

/** See {@link RuntimeStillUnknownDecision} and {@link AdapterStillUnknownDecision}. */
export type StillUnknownDecision = RuntimeStillUnknownDecision | AdapterStillUnknownDecision;

/**
 * The result of one reconcile step, discriminated on `decision`. Only the two `confirmed_*`
 * decisions may change an effect's status (see `judgeOutcome` in fail-closed-checks.ts).
 */
export type ReconcileDecision = IneligibleDecision | ConfirmedSucceededDecision | ConfirmedNotExecutedDecision | StillUnknownDecision;
