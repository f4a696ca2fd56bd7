// The fixture provider's compensating `closeIssue` tool: its arguments, its structured result and the exact MCP result it returns.
import { z } from "zod";
import { COMMITTED_AT_META, PROVIDER_OPERATION_ID_META } from "./create-issue.contract.js";

/** Name of the compensating write tool: closes an issue that `createIssue` created. */
export const CLOSE_ISSUE_TOOL = "closeIssue";

/**
 * Arguments of `closeIssue`: `issueId` (the id `createIssue` answered, 1–64 characters) and an
 * optional `reason` (at most 1000 characters, default `""`). Unknown keys are refused, so the
 * fingerprint the provider records is the fingerprint of exactly what the caller sent.
 */
export const CloseIssueArgsSchema = z
  .object({
    issueId: z.string().min(1).max(64),
    reason: z.string().max(1000).optional(),
  })
  .strict();
/** See {@link CloseIssueArgsSchema}. */
export type CloseIssueArgs = z.infer<typeof CloseIssueArgsSchema>;

/** `structuredContent` of a successful `closeIssue`: the closed issue, its number, and the closure's own id (a ULID). */
export const ClosedIssueSchema = z.object({
  issueId: z.string().min(1),
  number: z.number().int().positive(),
  closureId: z.string().min(1),
});
/** See {@link ClosedIssueSchema}. */
export type ClosedIssue = z.infer<typeof ClosedIssueSchema>;

/**
 * The exact MCP `CallToolResult` a successful `closeIssue` returns, and that `getOperation` reports
 * as `result` for its key: `{content: [{type: "text", text: "Closed issue #<number>"}],
 * structuredContent: ClosedIssue, _meta: {"io.mosoo/provider-operation-id": closureId, "io.mosoo/committed-at": iso}}`.
 */
export const CloseIssueToolResultSchema = z.object({
  content: z.array(z.object({ type: z.literal("text"), text: z.string() })).min(1),
  structuredContent: ClosedIssueSchema,
  _meta: z.object({
    [PROVIDER_OPERATION_ID_META]: z.string().min(1),
    [COMMITTED_AT_META]: z.iso.datetime(),
  }),
});
/** See {@link CloseIssueToolResultSchema}. */
export type CloseIssueToolResult = z.infer<typeof CloseIssueToolResultSchema>;

/**
 * Builds the `CallToolResult` of a committed `closeIssue` (the shape of {@link CloseIssueToolResultSchema}).
 * @param closed the closed issue and the closure id.
 * @param committedAt when the closure committed, ISO 8601.
 */
export function buildCloseIssueResult(closed: ClosedIssue, committedAt: string): CloseIssueToolResult {
  return {
    content: [{ type: "text", text: `Closed issue #${closed.number}` }],
    structuredContent: { issueId: closed.issueId, number: closed.number, closureId: closed.closureId },
    _meta: { [PROVIDER_OPERATION_ID_META]: closed.closureId, [COMMITTED_AT_META]: committedAt },
  };
}
