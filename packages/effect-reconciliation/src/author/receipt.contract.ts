// The receipt an adapter hands back as evidence of what it read at the provider, and the size-bounded MCP tool result schema.
import {
  findJsonProblem,
  formatJsonProblem,
  MAX_RECEIPT_BYTES,
  MAX_RESULT_BYTES,
  McpToolResultSchema,
  REQUEST_FINGERPRINT_PATTERN,
} from "@mosoo/contracts";
import { z } from "zod";
import { jsonByteLength } from "./json-size.js";

/** The receipt and result bounds live in `@mosoo/contracts` (the operator API checks them too); re-exported for adapter authors. */
export { MAX_RECEIPT_BYTES, MAX_RESULT_BYTES };

/** The longest `providerOperationId` in a receipt: 256 characters. */
export const MAX_PROVIDER_OPERATION_ID_LENGTH = 256;

/**
 * What an adapter read at the provider, as evidence for its answer. A strict object
 * (unknown keys are refused, so a misspelled `requestFingerprint` cannot silently skip the
 * `key_conflict` check):
 * - `providerOperationId?`: the provider's id for the write (e.g. an issue id), 1–256 characters;
 * - `observedAt`: when the adapter observed the answer, an ISO 8601 date-time (`Z` or an offset);
 * - `requestFingerprint?`: the fingerprint of the request the provider recorded under the key, 64
 *   lowercase hex (`REQUEST_FINGERPRINT_PATTERN`, sha-256 of the RFC 8785 canonical arguments);
 *   the runtime compares it with the effect's (`key_conflict`, docs/DESIGN.md §5);
 * - `detail?`: a small JSON object, opaque to the runtime, never proof of anything; a key a request
 *   body may not hold either (`__proto__`, `constructor`, `prototype`) or nesting past the JSON depth
 *   limit is refused, never silently dropped by the copy.
 *
 * The whole receipt serializes to at most {@link MAX_RECEIPT_BYTES} bytes.
 */
export const ReceiptSchema = z
  .strictObject({
    providerOperationId: z.string().min(1).max(MAX_PROVIDER_OPERATION_ID_LENGTH).optional(),
    observedAt: z.iso.datetime({ offset: true }),
    requestFingerprint: z.string().regex(REQUEST_FINGERPRINT_PATTERN, "expected 64 lowercase hex characters").optional(),
    detail: z
      .unknown()
      .superRefine((value, ctx) => {
        const problem = findJsonProblem(value);
        if (problem) ctx.addIssue({ code: "custom", message: formatJsonProblem(problem) });
      })
      .pipe(z.record(z.string(), z.json()))
      .optional(),
  })
  .superRefine((receipt, ctx) => {
    const bytes = jsonByteLength(receipt);
    if (bytes === null || bytes > MAX_RECEIPT_BYTES) {
      ctx.addIssue({
        code: "custom",
        message: `receipt must serialize to at most ${MAX_RECEIPT_BYTES} bytes of JSON (got ${bytes ?? "unserializable"})`,
      });
    }
  });
/** See {@link ReceiptSchema}. */
export type Receipt = z.infer<typeof ReceiptSchema>;

/**
 * An MCP tool result (`McpToolResultSchema` of `@mosoo/contracts`, MCP spec 2025-06-18 `tools/call`)
 * that serializes to JSON of at most {@link MAX_RESULT_BYTES} bytes. Unknown fields pass through.
 */
export const BoundedMcpToolResultSchema = McpToolResultSchema.superRefine((result, ctx) => {
  const bytes = jsonByteLength(result);
  if (bytes === null || bytes > MAX_RESULT_BYTES) {
    ctx.addIssue({
      code: "custom",
      message: `result must serialize to at most ${MAX_RESULT_BYTES} bytes of JSON (got ${bytes ?? "unserializable"})`,
    });
  }
});
