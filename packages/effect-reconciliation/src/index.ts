/**
 * `@mosoo/effect-reconciliation`: what a reconciliation adapter's author writes against (docs/DESIGN.md §4,
 * the package README "Write an adapter"). An adapter package imports only this entry (and
 * `@mosoo/effect-reconciliation/testing` from its tests). The host's machinery (registry, loader,
 * reconcile step, fail-closed checks, the built-in convention adapter) is `@mosoo/effect-reconciliation/host`.
 *
 * @example
 * export const acmeAdapterFactory: ReconciliationAdapterFactory = {
 *   declaration: DECLARATION,
 *   create(options) {
 *     const { url } = Options.parse(options); // Options = z.strictObject({ url: McpEndpointUrlSchema })
 *     return {
 *       declaration: DECLARATION,
 *       async lookup(request, { signal }) {
 *         const a = await callLookupTool(url, "getByKey", { key: request.idempotencyKey }, ConventionLookupAnswerSchema, signal);
 *         if (a.found) return confirmedSucceeded(request, a.result, { requestFingerprint: a.requestFingerprint });
 *         return a.fenced ? confirmedNotExecuted(request) : stillUnknown("not_found_unfenced");
 *       },
 *     };
 *   },
 * };
 * @module
 */

/** The factory an adapter package exports: a static `declaration` plus `create(options)`. */
export type { ReconciliationAdapterFactory } from "./author/adapter.contract.js";
/** An adapter: its `declaration`, a read-only `lookup` by idempotency key, and `planCompensation?`. */
export type { ReconciliationAdapter } from "./author/adapter.contract.js";
/** What an adapter declares: id, version, tools, retention window (ms), key fencing, compensations. */
export type { AdapterDeclaration } from "./author/adapter.contract.js";
/** The question a lookup answers: effect, server, tool, idempotency key, fingerprint, dispatch times (ms). */
export type { LookupRequest } from "./author/adapter.contract.js";
/** A lookup's context: the abort `signal` (the runtime's timeout) and the `logger`. */
export type { LookupContext } from "./author/adapter.contract.js";
/** The structured logger an adapter receives (pino's argument order; a call never throws). */
export type { AdapterLogger } from "./author/adapter.contract.js";
/** What `planCompensation` receives: the `succeeded` effect to undo. */
export type { CompensationPlanRequest } from "./author/adapter.contract.js";

/** Builds a `confirmed_succeeded` answer that echoes the request's tool and key. */
export { confirmedSucceeded } from "./author/lookup-outcome.builders.js";
/** Builds a `confirmed_not_executed` answer (only under the README's plain-miss rule). */
export { confirmedNotExecuted } from "./author/lookup-outcome.builders.js";
/** Builds a `still_unknown` answer with an adapter reason code and an optional `retryAfterMs` (ms). */
export { stillUnknown } from "./author/lookup-outcome.builders.js";
/** A receipt as an adapter writes it (`observedAt` defaults to now; at most 4096 bytes as JSON). */
export type { ReceiptInput } from "./author/lookup-outcome.builders.js";

/** The `_meta` name under which a provider's tool advertises the idempotency convention. */
export { IDEMPOTENCY_CONVENTION_META } from "./author/idempotency-convention.contract.js";
/** The convention a provider advertises: lookup tool, key argument, retention (ms), fencing. */
export { IdempotencyConventionSchema } from "./author/idempotency-convention.contract.js";
/** What a convention lookup tool answers (`found: true` with the result, or `found: false` with `fenced`). */
export { ConventionLookupAnswerSchema } from "./author/idempotency-convention.contract.js";

/** The typed MCP lookup helper: calls a provider's lookup tool and parses its answer with a zod schema. */
export { callLookupTool } from "./author/mcp-lookup.js";
/** An adapter option naming a provider's MCP endpoint: http(s), no port `fetch` refuses. */
export { McpEndpointUrlSchema } from "./author/mcp-endpoint-url.js";

/** The request fingerprint the runtime compares against (README "Fingerprint format"); from `@mosoo/contracts`. */
export { fingerprintArguments } from "@mosoo/contracts";
