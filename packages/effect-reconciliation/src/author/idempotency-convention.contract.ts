// The zero-code idempotency convention: the `tools/list` metadata a provider advertises and what its lookup tool answers.
import { KeyPlacementSchema, McpToolResultSchema, REQUEST_FINGERPRINT_PATTERN, ToolNameSchema } from "@mosoo/contracts";
import { z } from "zod";
import { KeyFencingSchema } from "./adapter.contract.js";

/** The `_meta` name of a `tools/list` entry under which a provider advertises the convention. */
export const IDEMPOTENCY_CONVENTION_META = "io.mosoo/idempotency";

/**
 * The zero-code convention (read by `conventionAdapterFactory` in convention-adapter.ts; README "The idempotency convention"):
 * a write tool's `tools/list` entry carries `_meta["io.mosoo/idempotency"]` =
 * - `version`: `1`;
 * - `lookupTool`: the tool that looks a key up (answers {@link ConventionLookupAnswerSchema});
 * - `lookupKeyArgument`: the argument of `lookupTool` that takes the key (default `idempotencyKey`);
 * - `retentionMs`: how long (positive integer, ms) the provider remembers a key;
 * - `fencing`: `{kind: "lookup_fences_key"}` (a miss makes the key unusable forever) or
 *   `{kind: "max_in_flight", maxInFlightMs}` (after it, a request sent earlier can no longer commit
 *   nor stay invisible to the lookup);
 * - `keyPlacement?`: where the provider reads the key (`KeyPlacementSchema`; default
 *   `_meta["io.mosoo/idempotency-key"]`). Informative for the Driver's config, which must agree.
 * Strict: unknown keys make the advertisement invalid (that tool is then not covered).
 */
export const IdempotencyConventionSchema = z.strictObject({
  version: z.literal(1),
  lookupTool: ToolNameSchema,
  lookupKeyArgument: z.string().min(1).max(128).default("idempotencyKey"),
  retentionMs: z.number().int().positive(),
  fencing: KeyFencingSchema,
  keyPlacement: KeyPlacementSchema.optional(),
});
/** See {@link IdempotencyConventionSchema}. */
export type IdempotencyConvention = z.infer<typeof IdempotencyConventionSchema>;

/**
 * What a convention lookup tool answers, as its result's `structuredContent` (extra keys ignored):
 * - `{found: true, toolName, idempotencyKey, result, requestFingerprint?, operationId?}`: the write
 *   committed under the key; `result` is the exact MCP tool result it returned; `requestFingerprint`
 *   is the fingerprint the provider recorded (64 lowercase hex, README "Fingerprint format");
 * - `{found: false, idempotencyKey, fenced, pending?}`: nothing committed (yet). `pending: true`:
 *   the provider is still processing the key (never "not executed"); `fenced: true`: the key can
 *   never commit (a tombstone).
 */
export const ConventionLookupAnswerSchema = z.union([
  z.object({
    found: z.literal(true),
    toolName: ToolNameSchema,
    idempotencyKey: z.string().min(1),
    result: McpToolResultSchema,
    requestFingerprint: z.string().regex(REQUEST_FINGERPRINT_PATTERN).optional(),
    operationId: z.string().min(1).max(256).optional(),
  }),
  z.object({ found: z.literal(false), idempotencyKey: z.string().min(1), fenced: z.boolean(), pending: z.boolean().optional() }),
]);
/** See {@link ConventionLookupAnswerSchema}. */
export type ConventionLookupAnswer = z.infer<typeof ConventionLookupAnswerSchema>;
