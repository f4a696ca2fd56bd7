// The fixture provider's `createIssue` write tool: its arguments, the exact MCP result it returns, and its tool error codes.
import { z } from "zod";

/** Name of the write tool. */
export const CREATE_ISSUE_TOOL = "createIssue";
/** Name of the lookup-by-idempotency-key tool. */
export const GET_OPERATION_TOOL = "getOperation";

/** `_meta` key of a `createIssue` result carrying the provider's operation id (the issue id). */
export const PROVIDER_OPERATION_ID_META = "io.mosoo/provider-operation-id";
/** `_meta` key of a `createIssue` result carrying when the write committed (ISO 8601, UTC). */
export const COMMITTED_AT_META = "io.mosoo/committed-at";

/** Longest idempotency key the provider accepts (characters). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;

/**
 * Arguments of `createIssue`: `title` 1–500 characters, `body` up to 100 000 characters. Unknown
 * keys are refused (an invalid-arguments tool error), so the fingerprint the provider records is the
 * fingerprint of exactly what the caller sent.
 */
export const CreateIssueArgsSchema = z
  .object({
    title: z.string().min(1).max(500),
    body: z.string().max(100_000),
  })
  .strict();
/** See {@link CreateIssueArgsSchema}. */
export type CreateIssueArgs = z.infer<typeof CreateIssueArgsSchema>;

/** `structuredContent` of a successful `createIssue`: the issue id (a ULID), its number (1, 2, …) and title. */
export const CreatedIssueSchema = z.object({
  issueId: z.string().min(1),
  number: z.number().int().positive(),
  title: z.string(),
});
/** See {@link CreatedIssueSchema}. */
export type CreatedIssue = z.infer<typeof CreatedIssueSchema>;

/**
 * The exact MCP `CallToolResult` a successful `createIssue` returns, and that `getOperation`
 * reports as `result` for a recorded key:
 * `{content: [{type: "text", text: "Created issue #<number>: <title>"}], structuredContent: CreatedIssue,
 *   _meta: {"io.mosoo/provider-operation-id": issueId, "io.mosoo/committed-at": iso}}`.
 */
export const CreateIssueToolResultSchema = z.object({
  content: z.array(z.object({ type: z.literal("text"), text: z.string() })).min(1),
  structuredContent: CreatedIssueSchema,
  _meta: z.object({
    [PROVIDER_OPERATION_ID_META]: z.string().min(1),
    [COMMITTED_AT_META]: z.iso.datetime(),
  }),
});
/** See {@link CreateIssueToolResultSchema}. */
export type CreateIssueToolResult = z.infer<typeof CreateIssueToolResultSchema>;

/**
 * Stable codes that open the text of the provider's tool errors (`isError: true`), followed by `: ` and a message:
 * - `idempotency_key_required`: `createIssue` without `_meta["io.mosoo/idempotency-key"]` (or an empty one);
 * - `idempotency_key_invalid`: the key is not a string, or longer than 256 characters;
 * - `idempotency_conflict`: the key was already used with different arguments (another fingerprint);
 * - `idempotency_key_fenced`: a lookup fenced the key; it can never commit;
 * - `provider_unavailable`: the `failBeforeCommit` fault, or the provider is shutting down;
 * - `issue_not_found`: `closeIssue` names an issue that does not exist;
 * - `issue_already_closed`: `closeIssue` names an issue another key already closed.
 * None of them writes anything. (`idempotency_conflict` also answers a key already used by the other write tool.)
 */
export const FIXTURE_TOOL_ERROR_CODES = [
  "idempotency_key_required",
  "idempotency_key_invalid",
  "idempotency_conflict",
  "idempotency_key_fenced",
  "provider_unavailable",
  "issue_not_found",
  "issue_already_closed",
] as const;
/** One of {@link FIXTURE_TOOL_ERROR_CODES}. */
export type FixtureToolErrorCode = (typeof FIXTURE_TOOL_ERROR_CODES)[number];

/**
 * Builds the `CallToolResult` of a committed `createIssue` (the shape of {@link CreateIssueToolResultSchema}).
 * @param issue the created issue.
 * @param committedAt when the write committed, ISO 8601.
 */
export function buildCreateIssueResult(issue: CreatedIssue, committedAt: string): CreateIssueToolResult {
  return {
    content: [{ type: "text", text: `Created issue #${issue.number}: ${issue.title}` }],
    structuredContent: { issueId: issue.issueId, number: issue.number, title: issue.title },
    _meta: { [PROVIDER_OPERATION_ID_META]: issue.issueId, [COMMITTED_AT_META]: committedAt },
  };
}
