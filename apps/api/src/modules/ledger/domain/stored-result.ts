// What an effect's stored tool result says about the tool's own verdict: an MCP error result or not.
import { McpExecuteCommandResultSchema } from "@mosoo/contracts";

/**
 * Whether `resultJson` (an effect's stored MCP tool result, JSON text) is an MCP error result:
 * `true` for `isError: true` (the provider answered, the tool reported a failure; MCP specification
 * 2025-11-25, "Tools": error results), `false` for a result without it, `undefined` when there is no
 * stored result or it is not a tool result. Pure, never throws.
 */
export function storedResultIsToolError(resultJson: string | null): boolean | undefined {
  if (resultJson === null) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(resultJson) as unknown;
  } catch {
    return undefined;
  }
  const parsed = McpExecuteCommandResultSchema.safeParse(value);
  return parsed.success ? parsed.data.isError === true : undefined;
}
