// The turn's account: what became of every tool call of a run whose turn was interrupted (see `turnInterruptedRunError` in turn-account.ts).
import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import { CallIdSchema, ServerIdSchema, ToolNameSchema } from "./mcp-execute.contract.js";

/**
 * What became of one tool call of an interrupted turn, as the ledger says when the run ends:
 * - `succeeded`: the provider did the write (its result is stored); sending it again would repeat it;
 * - `failed`: the call ended with an error before the provider could run it (`errorCode` says which);
 * - `not_executed`: proven never done (a provider lookup, or a missed send-by deadline); may be sent again as a new tool call;
 * - `unknown`: it may or may not have happened; fenced, never sent again by the runtime;
 * - `compensated`: it succeeded and an operator's compensation undid it since (the write still happened);
 * - `never_sent`: the Driver ended before it was dispatched; may be sent again as a new tool call.
 */
export const TURN_TOOL_CALL_STATUSES = ["succeeded", "failed", "not_executed", "unknown", "compensated", "never_sent"] as const;
/** See {@link TURN_TOOL_CALL_STATUSES}. */
export const TurnToolCallStatusSchema = z.enum(TURN_TOOL_CALL_STATUSES);
/** See {@link TURN_TOOL_CALL_STATUSES}. */
export type TurnToolCallStatus = z.infer<typeof TurnToolCallStatusSchema>;

/** The statuses that make resending the turn unsafe: a write of the turn happened, or may have. */
export const WRITTEN_TURN_STATUSES: readonly TurnToolCallStatus[] = ["succeeded", "unknown", "compensated"];

/**
 * One line of the account: the tool call (`toolCallId`, the one the agent sent or the runtime generated),
 * its MCP server and tool, its effect, what became of it, and, for `failed`, the command's error code.
 * `compensatesEffectId` is set when this tool call was itself an operator's compensation of another effect.
 */
export const TurnToolCallSchema = z.strictObject({
  toolCallId: CallIdSchema,
  serverId: ServerIdSchema,
  toolName: ToolNameSchema,
  effectId: UlidSchema,
  status: TurnToolCallStatusSchema,
  errorCode: z.string().min(1).max(128).optional(),
  compensatesEffectId: UlidSchema.optional(),
});
/** See {@link TurnToolCallSchema}. */
export type TurnToolCall = z.infer<typeof TurnToolCallSchema>;

/**
 * `details.account` of a run error that ended an interrupted turn. `toolCalls` lists the turn's tool
 * calls in the order they were queued, as many as fit the error's 4 KiB details limit (the written ones,
 * `succeeded`/`unknown`/`compensated`, first); `counts` covers every tool call of the turn; `omitted` is how
 * many are not listed, and `rest` the route that lists each one (`GET /v1/runs/{runId}/tool-calls/{toolCallId}`,
 * or the whole run at `GET /v1/runs/{runId}`).
 */
export const TurnAccountSchema = z.strictObject({
  total: z.number().int().nonnegative(),
  counts: z.partialRecord(TurnToolCallStatusSchema, z.number().int().positive()),
  toolCalls: z.array(TurnToolCallSchema),
  omitted: z.number().int().nonnegative(),
  rest: z.string().min(1).max(256).optional(),
});
/** See {@link TurnAccountSchema}. */
export type TurnAccount = z.infer<typeof TurnAccountSchema>;
