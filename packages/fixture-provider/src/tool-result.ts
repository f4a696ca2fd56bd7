// Builds the fixture provider's tool error results, whose one text block starts with a stable code.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FixtureToolErrorCode } from "./create-issue.contract.js";

/**
 * A tool error result (`isError: true`) whose single text block reads `<code>: <message>`. It carries
 * no `structuredContent` (an MCP client would validate it against the tool's output schema).
 */
export function toolError(code: FixtureToolErrorCode, message: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: `${code}: ${message}` }] };
}
