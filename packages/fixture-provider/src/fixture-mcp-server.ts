import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { IDEMPOTENCY_KEY_META } from "@mosoo/contracts";
import { CLOSE_ISSUE_TOOL, CloseIssueArgsSchema, ClosedIssueSchema } from "./close-issue.contract.js";
import { CREATE_ISSUE_TOOL, CreateIssueArgsSchema, CreatedIssueSchema, GET_OPERATION_TOOL } from "./create-issue.contract.js";
import type { FixtureProviderService } from "./fixture-provider.service.js";
import { GetOperationArgsSchema } from "./get-operation.contract.js";

/** Name and version the fixture MCP server reports in `initialize`. */
export const FIXTURE_SERVER_INFO = { name: "mosoo-fixture-provider", version: "0.1.0" } as const;

/**
 * Builds an MCP server (official SDK `McpServer`) exposing `createIssue`, `closeIssue` and `getOperation`, backed
 * by `provider`. Connect it to any transport: `StdioServerTransport`, or one stateless
 * `WebStandardStreamableHTTPServerTransport` per HTTP request (the HTTP server does that). Many
 * servers may share one provider.
 */
export function createFixtureMcpServer(provider: FixtureProviderService): McpServer {
  const server = new McpServer(FIXTURE_SERVER_INFO);
  server.registerTool(
    CREATE_ISSUE_TOOL,
    {
      title: "Create an issue",
      description:
        `Creates an issue. Requires an idempotency key in _meta["${IDEMPOTENCY_KEY_META}"]: the same key with the same ` +
        "arguments returns the recorded issue without a second write; with other arguments it is refused (idempotency_conflict).",
      inputSchema: CreateIssueArgsSchema,
      outputSchema: CreatedIssueSchema,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) => provider.createIssue(args, extra._meta),
  );
  server.registerTool(
    CLOSE_ISSUE_TOOL,
    {
      title: "Close an issue",
      description:
        `Closes an issue (the compensating action of createIssue). Requires its own idempotency key in _meta["${IDEMPOTENCY_KEY_META}"], ` +
        "with the same replay, conflict and fence rules as createIssue; getOperation reports it under that key.",
      inputSchema: CloseIssueArgsSchema,
      outputSchema: ClosedIssueSchema,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) => provider.closeIssue(args, extra._meta),
  );
  server.registerTool(
    GET_OPERATION_TOOL,
    {
      title: "Look up a write by idempotency key",
      description:
        "Reports whether a createIssue or closeIssue committed under this idempotency key, with its request fingerprint and exact result. " +
        "When the provider fences on lookup miss, a miss makes the key unusable forever (fenced: true).",
      inputSchema: GetOperationArgsSchema,
      annotations: { readOnlyHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) => provider.getOperation(args.idempotencyKey),
  );
  return server;
}
