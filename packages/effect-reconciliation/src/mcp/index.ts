/**
 * `@mosoo/effect-reconciliation/mcp`: MCP client helpers for adapters (official SDK), kept out of
 * the package's core, which imports no network library (docs/DESIGN.md §2):
 * - `callLookupTool`, `withMcpClient`, `listMcpTools`: the typed helper for MCP lookups;
 * - `conventionAdapterFactory` (built-in id `mcp-convention`): the zero-code convention adapter;
 * - `McpEndpointUrlSchema`: an adapter option naming a provider's MCP endpoint (http(s), no port fetch refuses).
 * @module
 */
export { callLookupTool, withMcpClient, listMcpTools } from "./mcp-lookup.js";
export { McpEndpointUrlSchema } from "./mcp-endpoint-url.js";
export {
  CONVENTION_ADAPTER_ID,
  ConventionAdapterOptionsSchema,
  conventionAdapterFactory,
  conventionDeclaration,
  discoverConvention,
} from "./convention-adapter.js";
