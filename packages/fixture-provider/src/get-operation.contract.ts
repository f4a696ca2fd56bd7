// The fixture provider's `getOperation` lookup tool: its argument, and its found or not-found (fenced or not) answer.
import { z } from "zod";
import { CloseIssueToolResultSchema } from "./close-issue.contract.js";
import { MAX_IDEMPOTENCY_KEY_LENGTH, CreateIssueToolResultSchema } from "./create-issue.contract.js";

/** Arguments of `getOperation`: the idempotency key to look up (1–256 characters). */
export const GetOperationArgsSchema = z.object({
  idempotencyKey: z.string().min(1).max(MAX_IDEMPOTENCY_KEY_LENGTH),
});
/** See {@link GetOperationArgsSchema}. */
export type GetOperationArgs = z.infer<typeof GetOperationArgsSchema>;

const FoundCommon = {
  found: z.literal(true),
  idempotencyKey: z.string(),
  operationId: z.string().min(1),
  requestFingerprint: z.string().regex(/^[0-9a-f]{64}$/),
  committedAt: z.iso.datetime(),
};

/**
 * `getOperation` found a committed write for the key: which write tool committed it (`createIssue`
 * or `closeIssue`), the recorded request fingerprint (64 hex, sha-256 of the RFC 8785 form of the
 * arguments), when it committed (ISO 8601), the operation id (the issue id for `createIssue`, the
 * closure id for `closeIssue`) and the exact `CallToolResult` that tool returned for it.
 */
export const GetOperationFoundSchema = z.union([
  z.object({ ...FoundCommon, toolName: z.literal("createIssue"), result: CreateIssueToolResultSchema }),
  z.object({ ...FoundCommon, toolName: z.literal("closeIssue"), result: CloseIssueToolResultSchema }),
]);
/** See {@link GetOperationFoundSchema}. */
export type GetOperationFound = z.infer<typeof GetOperationFoundSchema>;

/**
 * `getOperation` found no write for the key. `fenced: true` means the key holds a tombstone and can
 * never commit (a promise, durable in the provider's database); `fenced: false` means a write sent
 * earlier could still land. `observedAt` is when the provider answered (ISO 8601).
 */
export const GetOperationNotFoundSchema = z.object({
  found: z.literal(false),
  idempotencyKey: z.string(),
  fenced: z.boolean(),
  observedAt: z.iso.datetime(),
});
/** See {@link GetOperationNotFoundSchema}. */
export type GetOperationNotFound = z.infer<typeof GetOperationNotFoundSchema>;

/**
 * The answer of `getOperation`, carried as the tool result's `structuredContent` (and as the JSON
 * text of its single text block). Discriminated by `found`.
 */
export const GetOperationAnswerSchema = z.union([GetOperationFoundSchema, GetOperationNotFoundSchema]);
/** See {@link GetOperationAnswerSchema}. */
export type GetOperationAnswer = z.infer<typeof GetOperationAnswerSchema>;
