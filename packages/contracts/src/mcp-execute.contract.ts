// The `mcp.execute` command and its result as the run sees them, the MCP tool result the runtime reads, and the key's `_meta` name.
import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import { findJsonProblem, formatJsonProblem, identifierSchema, textSchema } from "./input-safety.contract.js";

/**
 * The `_meta` key under which the runtime sends an effect's idempotency key on MCP `tools/call`.
 * MCP reserves `_meta` for implementation metadata and allows namespaced keys
 * (MCP spec 2025-06-18, "General fields: `_meta`").
 */
export const IDEMPOTENCY_KEY_META = "io.mosoo/idempotency-key";

/**
 * A JSON object encoded as a string (the tool call's arguments), at most 256 KiB, that passes the
 * shared JSON rules (`findJsonProblem`: depth ≤ 400, no `__proto__`/`constructor`/`prototype` key,
 * well-formed strings).
 */
export const ArgumentsJsonSchema = z
  .string()
  .max(256 * 1024)
  .superRefine((s, ctx) => {
    let v: unknown;
    try {
      v = JSON.parse(s);
    } catch {
      v = undefined;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      ctx.addIssue({ code: "custom", message: "argumentsJson must be a JSON object encoded as a string" });
      return;
    }
    const problem = findJsonProblem(v);
    if (problem) ctx.addIssue({ code: "custom", message: `argumentsJson: ${formatJsonProblem(problem)}` });
  });

/** An MCP server id as named in the Driver's and the API's config: 1–64 chars of `[A-Za-z0-9_.-]`. */
export const ServerIdSchema = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "serverId must be 1-64 characters of A-Z a-z 0-9 _ . -");
/**
 * An MCP tool name: 1–128 chars (MCP tool names are free strings; we bound them), well-formed
 * UTF-16, no control, bidi or other format (Unicode Cf) characters.
 */
export const ToolNameSchema = identifierSchema(1, 128);
/** A request id or tool call id of the agent's turn: 1–128 chars, an identifier (no control, bidi or other format characters; well-formed). */
export const CallIdSchema = identifierSchema(1, 128);

/**
 * The `mcp.execute` command (Mosoo shape, docs/DESIGN.md §8): call `toolName` on MCP server `serverId`
 * with `argumentsJson`. `requestId` and `toolCallId` come from the agent's turn.
 */
export const McpExecuteCommandSchema = z.object({
  commandId: UlidSchema,
  requestId: CallIdSchema,
  serverId: ServerIdSchema,
  toolCallId: CallIdSchema,
  toolName: ToolNameSchema,
  argumentsJson: ArgumentsJsonSchema,
});
/** See {@link McpExecuteCommandSchema}. */
export type McpExecuteCommand = z.infer<typeof McpExecuteCommandSchema>;

/**
 * The result of an `mcp.execute` command as the run sees it (docs/DESIGN.md §8). `outputText` at most
 * 1 MiB of well-formed UTF-16 (NUL allowed: it is stored as JSON).
 */
export const McpExecuteCommandResultSchema = z.object({
  outputText: textSchema(0, 1024 * 1024, { allowNul: true }),
  requestId: CallIdSchema,
  serverId: ServerIdSchema,
  toolName: ToolNameSchema,
  isError: z.boolean().optional(),
});
/** See {@link McpExecuteCommandResultSchema}. */
export type McpExecuteCommandResult = z.infer<typeof McpExecuteCommandResultSchema>;

/**
 * {@link McpExecuteCommandResultSchema} as a Driver sends it (a command's `completed` update, an
 * effect's `complete` and `late-result`): strict, so a field the runtime does not know is refused
 * (400 `request.invalid`, `result: Unrecognized key: "..."`) instead of being dropped.
 * The loose schema stays for what the runtime reads back (stored results, the API's answers).
 */
export const McpExecuteCommandResultRequestSchema = z.strictObject(McpExecuteCommandResultSchema.shape);

/**
 * The parts of an MCP `CallToolResult` (MCP spec 2025-06-18, `tools/call`) the runtime reads:
 * `content` blocks (text blocks carry `text`), optional `structuredContent`, `isError` and `_meta`.
 * Other fields pass through untouched.
 */
export const McpToolResultSchema = z.looseObject({
  content: z.array(z.looseObject({ type: z.string() })).default([]),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
  _meta: z.record(z.string(), z.unknown()).optional(),
});
/** See {@link McpToolResultSchema}. */
export type McpToolResult = z.infer<typeof McpToolResultSchema>;

/**
 * Turns an MCP tool result into the command result the run sees: the text blocks joined by
 * newlines (or the JSON of `structuredContent` when there is no text block).
 */
export function toMcpExecuteCommandResult(
  toolResult: McpToolResult,
  command: Pick<McpExecuteCommand, "requestId" | "serverId" | "toolName">,
): McpExecuteCommandResult {
  const texts = toolResult.content
    .filter((block): block is { type: "text"; text: string } => block.type === "text" && typeof block["text"] === "string")
    .map((block) => block.text);
  const outputText = texts.length > 0 ? texts.join("\n") : toolResult.structuredContent ? JSON.stringify(toolResult.structuredContent) : "";
  return {
    outputText,
    requestId: command.requestId,
    serverId: command.serverId,
    toolName: command.toolName,
    ...(toolResult.isError ? { isError: true } : {}),
  };
}
