// The run API's request and answer schemas and its route table: create runs, enqueue tool calls, read runs, events and tool calls.
import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import { CallIdSchema, ServerIdSchema, ToolNameSchema } from "./mcp-execute.contract.js";
import { CommandStatusSchema, EffectResolutionSchema, EffectStatusSchema } from "./statuses.contract.js";
import { TurnToolCallStatusSchema } from "./turn-account.contract.js";
import { safeJsonObjectSchema, strictIntegerString } from "./input-safety.contract.js";
import { defineRoute, type ApiRoute } from "./route-table.contract.js";

/**
 * Create a run leased to a Driver instance. Without `sessionId` a new session is created.
 * A Driver instance holds at most one active run (409 `run.driver_busy`). Strict: any other field
 * is refused (400 `request.invalid`, `Unrecognized key: "..."`), never ignored.
 */
export const CreateRunRequestSchema = z.strictObject({ driverInstanceId: UlidSchema, sessionId: UlidSchema.optional() });
/** See {@link CreateRunRequestSchema}. */
export type CreateRunRequest = z.infer<typeof CreateRunRequestSchema>;
/** The created run and its session. */
export const CreateRunResponseSchema = z.object({ runId: UlidSchema, sessionId: UlidSchema });
/** See {@link CreateRunResponseSchema}. */
export type CreateRunResponse = z.infer<typeof CreateRunResponseSchema>;

/**
 * Enqueue one `mcp.execute` tool call on an active run. The effect's intent (with its
 * idempotency key and request fingerprint) commits in the same transaction as the command
 * (see `recordIntent` in effect-intent.service.ts); with no active run nothing is queued (409 `run.not_active`).
 * `arguments` at most 256 KiB once encoded, finite numbers only, nested at most 400 levels, no
 * `__proto__`/`constructor`/`prototype` key anywhere (refused, never dropped).
 * `toolCallId` makes the request idempotent within the run: a retry with the same `toolCallId`
 * and the same server, tool and arguments returns the first enqueue (`replayed: true`, nothing new
 * is queued); with anything different it is refused (409 `tool_call.conflict`). Without it, every
 * request is a new tool call. Repeat guard (see `guardRepeat` in repeat-guard.policy.ts; opt-in per MCP server,
 * `MOSOO_REPEAT_GUARD`): the same server, tool and arguments as a recent write of the same session is
 * refused (409 `tool_call.repeat_refused`, `details` {effectId, status, toolCallId, windowMs}) unless
 * `repeatOfEffectId` names that earlier effect (a deliberate repeat, recorded on the new effect; a
 * `repeatOfEffectId` that names no such effect of the session: 409 `tool_call.repeat_invalid`).
 * Strict: any other top-level field is refused (400 `request.invalid`, `Unrecognized key: "..."`), never ignored.
 */
export const EnqueueToolCallRequestSchema = z.strictObject({
  serverId: ServerIdSchema,
  toolName: ToolNameSchema,
  arguments: safeJsonObjectSchema(),
  toolCallId: CallIdSchema.optional(),
  requestId: CallIdSchema.optional(),
  repeatOfEffectId: UlidSchema.optional(),
});
/** See {@link EnqueueToolCallRequestSchema}. */
export type EnqueueToolCallRequest = z.infer<typeof EnqueueToolCallRequestSchema>;
/** The queued tool call: its command, its effect and the effect's idempotency key (sent to the provider), and the command's per-Driver `seq`. */
export const EnqueueToolCallResponseSchema = z.object({
  commandId: UlidSchema,
  effectId: UlidSchema,
  idempotencyKey: UlidSchema,
  seq: z.number().int().positive(),
  /** True when this answers a retry of an already queued tool call (same run and `toolCallId`). */
  replayed: z.boolean(),
});
/** See {@link EnqueueToolCallResponseSchema}. */
export type EnqueueToolCallResponse = z.infer<typeof EnqueueToolCallResponseSchema>;

/** Query of the replayable run event stream: events with `seq > afterSeq` (a strict decimal integer ≥ 0; `0x10`, `1e2` refused). */
export const RunEventsQuerySchema = z.object({ afterSeq: strictIntegerString(0, Number.MAX_SAFE_INTEGER).default(0) });
/** See {@link RunEventsQuerySchema}. */
export type RunEventsQuery = z.infer<typeof RunEventsQuerySchema>;

const runId = z.object({ runId: UlidSchema });

/**
 * `GET /v1/runs/:runId/tool-calls/:toolCallId`: what became of one tool call of a run, found by its
 * `toolCallId` (the one the agent sent, or the one the runtime generated and listed in the turn's
 * account): its command (`commandStatus`), its effect (`effectStatus`, `resolution`), `status` as the
 * turn's account names it (see `turnInterruptedRunError` in turn-account.ts) once the call has an answer,
 * or `in_flight` while its command is not terminal and its effect is `intent` or `executing` (queued, or
 * on its way to the provider on a live Driver: read it again; an `executing` effect becomes `unknown` only
 * when it is fenced), the stored `result` (an `McpExecuteCommandResult`,
 * when it succeeded) or the command's `error` (a `RunError`, when it failed), and `repeatOfEffectId` when
 * it was queued as a deliberate repeat of an earlier effect. Times in ms since the epoch.
 */
export const ToolCallViewSchema = z.object({
  runId: UlidSchema,
  toolCallId: CallIdSchema,
  serverId: ServerIdSchema,
  toolName: ToolNameSchema,
  commandId: UlidSchema,
  commandStatus: CommandStatusSchema,
  effectId: UlidSchema,
  effectStatus: EffectStatusSchema,
  resolution: EffectResolutionSchema.nullable(),
  status: z.union([TurnToolCallStatusSchema, z.literal("in_flight")]),
  result: z.unknown().nullable(),
  error: z.unknown().nullable(),
  repeatOfEffectId: UlidSchema.nullable(),
  createdAtMs: z.number().int(),
  updatedAtMs: z.number().int(),
});
/** See {@link ToolCallViewSchema}. */
export type ToolCallView = z.infer<typeof ToolCallViewSchema>;

/**
 * The run API: the agent side of the control plane, behind API keys with scopes.
 * Keys are the route names every client calls.
 */
export const RUN_API = {
  createRun: defineRoute({
    method: "POST",
    path: "/v1/runs",
    body: CreateRunRequestSchema,
    response: CreateRunResponseSchema,
    status: [201],
    auth: { kind: "api_key", scope: "runs:write" },
    errors: ["driver.not_found", "driver.finalized", "run.driver_busy", "session.not_found"],
    idempotent: false,
  }),
  enqueueToolCall: defineRoute({
    method: "POST",
    path: "/v1/runs/:runId/tool-calls",
    params: runId,
    body: EnqueueToolCallRequestSchema,
    response: EnqueueToolCallResponseSchema,
    status: [201, 200],
    auth: { kind: "api_key", scope: "runs:write" },
    errors: ["run.not_found", "run.not_active", "tool_call.conflict", "tool_call.repeat_refused", "tool_call.repeat_invalid"],
    idempotent: false,
    note: "200 when a retry with the same toolCallId replays the first enqueue (replayed: true)",
  }),
  getRun: defineRoute({
    method: "GET",
    path: "/v1/runs/:runId",
    params: runId,
    status: [200],
    auth: { kind: "api_key", scope: "runs:read" },
    errors: ["run.not_found"],
    idempotent: true,
  }),
  getToolCall: defineRoute({
    method: "GET",
    path: "/v1/runs/:runId/tool-calls/:toolCallId",
    params: z.object({ runId: UlidSchema, toolCallId: CallIdSchema }),
    response: ToolCallViewSchema,
    status: [200],
    auth: { kind: "api_key", scope: "runs:read" },
    errors: ["run.not_found", "tool_call.not_found"],
    idempotent: true,
  }),
  listRunEvents: defineRoute({
    method: "GET",
    path: "/v1/runs/:runId/events",
    params: runId,
    query: RunEventsQuerySchema,
    status: [200],
    auth: { kind: "api_key", scope: "runs:read" },
    errors: ["run.not_found"],
    idempotent: true,
  }),
  deleteRun: defineRoute({
    method: "DELETE",
    path: "/v1/runs/:runId",
    params: runId,
    response: null,
    status: [204],
    auth: { kind: "api_key", scope: "runs:delete", operatorToo: true },
    errors: ["run.not_found", "effect.fence_retained"],
    idempotent: false,
  }),
  deleteSession: defineRoute({
    method: "DELETE",
    path: "/v1/sessions/:sessionId",
    params: z.object({ sessionId: UlidSchema }),
    response: null,
    status: [204],
    auth: { kind: "api_key", scope: "runs:delete", operatorToo: true },
    errors: ["session.not_found", "effect.fence_retained"],
    idempotent: false,
  }),
  purgeDriver: defineRoute({
    method: "DELETE",
    path: "/v1/drivers/:driverInstanceId",
    params: z.object({ driverInstanceId: UlidSchema }),
    response: null,
    status: [204],
    auth: { kind: "api_key", scope: "runs:delete", operatorToo: true },
    errors: ["driver.not_found", "driver.not_finalized"],
    idempotent: false,
  }),
} as const satisfies Record<string, ApiRoute>;
