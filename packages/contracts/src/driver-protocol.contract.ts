// The Driver protocol's request and answer schemas and its route table: register, connect, poll commands, claim and report effects.
import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import { McpExecuteCommandResultRequestSchema, McpExecuteCommandSchema, ToolNameSchema } from "./mcp-execute.contract.js";
import { McpTaskIdSchema } from "./mcp-task.contract.js";
import { REQUEST_FINGERPRINT_PATTERN } from "./request-fingerprint.js";
import { RunErrorSchema } from "./run-error.contract.js";
import { identifierSchema, safeJsonObjectSchema, strictIntegerInput, textSchema } from "./input-safety.contract.js";
import { CommandStatusSchema, DriverInstanceStatusSchema, EffectStatusSchema } from "./statuses.contract.js";
import { EffectClaimSchema } from "./effect-claim.contract.js";
import { TraceContextSchema } from "./trace-context.contract.js";
import { defineRoute, type ApiRoute, type RouteBody } from "./route-table.contract.js";

/**
 * The Driver protocol: HTTP+JSON between a Driver process and the API. `register`
 * needs `Authorization: Bearer <enrollment token>` (the API's `MOSOO_DRIVER_ENROLLMENT_TOKEN`), every
 * other route `Authorization: Bearer <driver token>` (any case of the scheme); a Driver only ever sees and changes its
 * own instance's commands and effects. Requests that carry `connectionId` are refused with
 * `driver.connection_superseded` (409) once a newer connection of the same instance exists.
 * Every request body schema here is strict (zod `strictObject`, nested `result` and `error` too): a
 * field the protocol does not define is refused with 400 `request.invalid` naming it, never ignored;
 * the Driver checks what it sends against the same schemas. Methods, paths and credentials
 * of each route: {@link DRIVER_API} at the end of this file.
 */

/** A Driver's bearer token: `mdt_<driverInstanceId>_<secret>`. Only its sha-256 is stored. */
export const DriverTokenSchema = z.string().regex(/^mdt_[0-7][0-9A-HJKMNP-TV-Z]{25}_[A-Za-z0-9_-]{32,128}$/, "malformed driver token");

/**
 * Register a Driver instance. Without `driverInstanceId` a new instance is created (with the
 * enrollment token or the operator token); with it, the instance is re-registered (its old token is
 * revoked), which needs that instance's own token or the operator token (else 403 `auth.forbidden`,
 * so no one takes over an identity). Re-registering is refused with
 * `effect.fence_retained` (409) while any of its effects is `executing` or `unknown`.
 */
export const RegisterDriverRequestSchema = z.strictObject({
  name: identifierSchema(1, 100),
  driverInstanceId: UlidSchema.optional(),
});
/** See {@link RegisterDriverRequestSchema}. */
export type RegisterDriverRequest = z.infer<typeof RegisterDriverRequestSchema>;
/** The token is shown this one time; the API keeps only its hash. */
export const RegisterDriverResponseSchema = z.object({ driverInstanceId: UlidSchema, driverToken: DriverTokenSchema });
/** See {@link RegisterDriverResponseSchema}. */
export type RegisterDriverResponse = z.infer<typeof RegisterDriverResponseSchema>;

/** Connect (or reconnect): a new `connectionId` each time; earlier connections are superseded. */
export const ConnectDriverResponseSchema = z.object({
  driverInstanceId: UlidSchema,
  connectionId: UlidSchema,
  /** Heartbeat time-to-live in ms: miss it and the sweep finalizes the instance. */
  heartbeatTtlMs: z.number().int().positive(),
  /** Commands without a terminal receipt that will be delivered again on this connection (see `CommandQueueService` in command-queue.service.ts). */
  pendingCommandCount: z.number().int().nonnegative(),
});
/** See {@link ConnectDriverResponseSchema}. */
export type ConnectDriverResponse = z.infer<typeof ConnectDriverResponseSchema>;

/** Any request bound to one connection. */
export const ConnectionRequestSchema = z.strictObject({ connectionId: UlidSchema });
/** See {@link ConnectionRequestSchema}. */
export type ConnectionRequest = z.infer<typeof ConnectionRequestSchema>;

/** Answer to a heartbeat: the heartbeat TTL in ms (send the next one well within it). */
export const HeartbeatResponseSchema = z.object({ heartbeatTtlMs: z.number().int().positive() });
/** See {@link HeartbeatResponseSchema}. */
export type HeartbeatResponse = z.infer<typeof HeartbeatResponseSchema>;

/**
 * The API's view of the calling Driver instance (`GET /v1/drivers/self`, `mosoo-driver --status`):
 * its status, its current connection (null before the first connect), its last heartbeat and when the
 * sweep would finalize it without another (`heartbeatExpiresAtMs` = last heartbeat + `heartbeatTtlMs`,
 * ms since the epoch; null before the first connect), how many of its effects are `executing` and
 * `unknown` (the ones fenced until reconciled or resolved) and how many of its
 * commands have no terminal receipt yet (redelivered on its next connection, rule 11).
 */
const DriverSelfResponseSchema = z.object({
  driverInstanceId: UlidSchema,
  name: z.string(),
  status: DriverInstanceStatusSchema,
  connectionId: UlidSchema.nullable(),
  lastHeartbeatAtMs: z.number().int().nonnegative().nullable(),
  heartbeatTtlMs: z.number().int().positive(),
  heartbeatExpiresAtMs: z.number().int().nonnegative().nullable(),
  effects: z.object({ executing: z.number().int().nonnegative(), unknown: z.number().int().nonnegative() }),
  pendingCommandCount: z.number().int().nonnegative(),
});

/**
 * Query of the long-poll for the next command: waits up to `waitMs` (0–30 000 ms, a strict decimal
 * integer: `0x10`, `1e2`, `+5` refused) for one. A number is accepted too (the Driver builds the query from one).
 */
export const NextCommandQuerySchema = z.object({
  connectionId: UlidSchema,
  waitMs: strictIntegerInput(0, 30_000).default(0),
});
/** See {@link NextCommandQuerySchema}. */
export type NextCommandQuery = z.infer<typeof NextCommandQuerySchema>;

/**
 * A command as delivered to a Driver. `redelivery` is true when an earlier connection already received it.
 * `traceContext`: the W3C trace context of the request that enqueued it (stored with the command, so a
 * redelivery carries it too), absent when that request was not traced; the Driver continues the trace.
 */
export const DriverCommandEnvelopeSchema = z.object({
  commandId: UlidSchema,
  seq: z.number().int().positive(),
  runId: UlidSchema,
  type: z.literal("mcp.execute"),
  status: CommandStatusSchema,
  redelivery: z.boolean(),
  payload: McpExecuteCommandSchema,
  traceContext: TraceContextSchema.optional(),
});
/** See {@link DriverCommandEnvelopeSchema}. */
export type DriverCommandEnvelope = z.infer<typeof DriverCommandEnvelopeSchema>;
/** Answer of the long-poll: the next command, or `null` when none came within `waitMs` (or the API is stopping). */
export const NextCommandResponseSchema = z.object({ command: DriverCommandEnvelopeSchema.nullable() });
/** See {@link NextCommandResponseSchema}. */
export type NextCommandResponse = z.infer<typeof NextCommandResponseSchema>;

/**
 * A command status update from the Driver. `completed` needs the result (and, for
 * `mcp.execute`, an effect that already `succeeded`); `failed` needs a RunError.
 */
export const CommandUpdateRequestSchema = z.discriminatedUnion("status", [
  z.strictObject({ connectionId: UlidSchema, status: z.literal("accepted") }),
  z.strictObject({ connectionId: UlidSchema, status: z.literal("completed"), result: McpExecuteCommandResultRequestSchema }),
  z.strictObject({ connectionId: UlidSchema, status: z.literal("failed"), error: RunErrorSchema }),
]);
/** See {@link CommandUpdateRequestSchema}. */
export type CommandUpdateRequest = z.infer<typeof CommandUpdateRequestSchema>;

/**
 * The typed outcome of a compare-and-set transition: `applied` (it changed), `duplicate` (it was
 * already in that state; nothing changed), `rejected` (illegal from the current state; nothing changed).
 */
export const TransitionOutcomeSchema = z.enum(["applied", "duplicate", "rejected"]);
/** See {@link TransitionOutcomeSchema}. */
export type TransitionOutcome = z.infer<typeof TransitionOutcomeSchema>;
/** Answer to a command update: the typed outcome, the command's status after it, and why when `rejected`. */
export const CommandUpdateResponseSchema = z.object({
  outcome: TransitionOutcomeSchema,
  status: CommandStatusSchema,
  reason: z.string().optional(),
});
/** See {@link CommandUpdateResponseSchema}. */
export type CommandUpdateResponse = z.infer<typeof CommandUpdateResponseSchema>;

/** Claim the effect of an `mcp.execute` command; answered with an `EffectClaim`. */
export const EffectClaimRequestSchema = z.strictObject({ connectionId: UlidSchema, commandId: UlidSchema });
/** See {@link EffectClaimRequestSchema}. */
export type EffectClaimRequest = z.infer<typeof EffectClaimRequestSchema>;

/**
 * Store the provider's result for attempt `attempt`. `receipt` is the result's `_meta`, kept as
 * opaque data (never proof of anything), at most 16 KiB of JSON, nested at most 400 levels, no
 * `__proto__`/`constructor`/`prototype` key, well-formed strings.
 */
export const EffectCompleteRequestSchema = z.strictObject({
  connectionId: UlidSchema,
  attempt: z.number().int().positive(),
  result: McpExecuteCommandResultRequestSchema,
  receipt: safeJsonObjectSchema().nullable(),
});
/** See {@link EffectCompleteRequestSchema}. */
export type EffectCompleteRequest = z.infer<typeof EffectCompleteRequestSchema>;

/** The Driver lost track of attempt `attempt` (e.g. the MCP transport broke mid-call): fence it as `unknown`. */
export const EffectMarkUnknownRequestSchema = z.strictObject({
  connectionId: UlidSchema,
  attempt: z.number().int().positive(),
  reason: textSchema(1, 500),
});
/** See {@link EffectMarkUnknownRequestSchema}. */
export type EffectMarkUnknownRequest = z.infer<typeof EffectMarkUnknownRequestSchema>;

/**
 * The send-by deadline of attempt `attempt`'s `execute` claim passed before the Driver sent
 * `tools/call` (see `sendDeadlinePassed` in effect-claim.contract.ts): nothing was sent, and the Driver never will send it.
 * `elapsedMs` is how long after sending the claim request the Driver read the answer (its own
 * monotonic clock, ms). The API settles the effect `not_executed` (resolution `deadline_missed`) when
 * it is still `executing` at that attempt, or `unknown` with that attempt the fenced one; the
 * command fails `external_effect.not_executed` (retryable as a new tool call). Refused 409
 * `effect.not_attempt_connection` unless `connectionId` made the attempt, and 409
 * `effect.attempt_sent` once the Driver reported that attempt sent or failed mid-send (`complete` /
 * `mark-unknown`): a missed deadline proves non-execution only because nothing was sent.
 */
export const EffectDeadlineMissedRequestSchema = z.strictObject({
  connectionId: UlidSchema,
  attempt: z.number().int().positive(),
  elapsedMs: z.number().int().nonnegative(),
});
/** See {@link EffectDeadlineMissedRequestSchema}. */
export type EffectDeadlineMissedRequest = z.infer<typeof EffectDeadlineMissedRequestSchema>;

/**
 * The provider accepted attempt `attempt` as an MCP task (a task-augmented `tools/call`, MCP 2025-11-25)
 * and answered with `taskId` ({@link McpTaskIdSchema}). The Driver reports it BEFORE it waits for the
 * task's result, so a crash after this point leaves a handle the runtime can ask the provider about
 * (`tasks/get` / `tasks/result`, the built-in `mcp-tasks` reconciler). The API stores it on the effect
 * once: the same id again is `duplicate`; another id is refused 409 `effect.task_id_conflict`; an
 * attempt that is not the effect's latest is answered `rejected`; neither changes anything. Accepted while the effect is
 * `executing` or `unknown` at that attempt (a fence meanwhile does not make the handle less true),
 * from the connection that made the attempt even after a newer one superseded it. Marks the attempt
 * sent (a later `deadline-missed` is refused: a task exists, so the request reached the provider).
 */
export const EffectTaskCreatedRequestSchema = z.strictObject({
  connectionId: UlidSchema,
  attempt: z.number().int().positive(),
  taskId: McpTaskIdSchema,
});
/** See {@link EffectTaskCreatedRequestSchema}. */
export type EffectTaskCreatedRequest = z.infer<typeof EffectTaskCreatedRequestSchema>;

/**
 * Late evidence (see `decideLateEvidence` in effect-lifecycle.machine.ts): the provider's real result for attempt `attempt`, which the
 * Driver received after the effect was fenced `unknown` meanwhile (e.g. a redelivery while the call
 * was in flight). `idempotencyKey`, `toolName` and `requestFingerprint` (sha-256 hex of the canonical
 * arguments, `fingerprintArguments`) name the request the Driver sent; `receipt` is the result's
 * `_meta` (opaque, at most 16 KiB of JSON). The API settles an `unknown` effect `succeeded`
 * (resolution `reported_late`) when all three match; it never re-runs anything and never overrides
 * a different confirmed outcome (a contradiction is recorded and flagged for an operator).
 */
export const EffectLateResultRequestSchema = z.strictObject({
  connectionId: UlidSchema,
  attempt: z.number().int().positive(),
  idempotencyKey: UlidSchema,
  toolName: ToolNameSchema,
  requestFingerprint: z.string().regex(REQUEST_FINGERPRINT_PATTERN, "expected 64 lowercase hex characters"),
  result: McpExecuteCommandResultRequestSchema,
  receipt: z.record(z.string(), z.unknown()).nullable(),
});
/** See {@link EffectLateResultRequestSchema}. */
export type EffectLateResultRequest = z.infer<typeof EffectLateResultRequestSchema>;

/** Answer to an effect `complete` / `mark-unknown` / `deadline-missed` / `late-result`: the typed outcome, the effect's status after it, and why when `rejected`. */
export const EffectTransitionResponseSchema = z.object({
  outcome: TransitionOutcomeSchema,
  status: EffectStatusSchema,
  reason: z.string().optional(),
});
/** See {@link EffectTransitionResponseSchema}. */
export type EffectTransitionResponse = z.infer<typeof EffectTransitionResponseSchema>;

/** What a finalization repair changed (counts). Running it again reports zeros. */
export const FinalizationSummarySchema = z.object({
  effectsFenced: z.number().int().nonnegative(),
  commandsCompleted: z.number().int().nonnegative(),
  commandsFailed: z.number().int().nonnegative(),
  runsFailed: z.number().int().nonnegative(),
  effectsReconciled: z.number().int().nonnegative(),
});
/** See {@link FinalizationSummarySchema}. */
export type FinalizationSummary = z.infer<typeof FinalizationSummarySchema>;

const effectId = z.object({ effectId: UlidSchema });
const commandId = z.object({ commandId: UlidSchema });

/** The driver-protocol's effect reports share a shape: `POST /v1/drivers/effects/:effectId/<report>` → `EffectTransitionResponse`. */
const effectReport = <const P extends string, B extends z.ZodType>(
  path: P,
  body: B,
  auth: { kind: "driver" } | { kind: "driver_report" } = { kind: "driver" },
  /** Error codes of this report beyond `effect.not_found` and `driver.connection_superseded`. */
  moreErrors: readonly string[] = [],
) =>
  defineRoute({
    method: "POST",
    path,
    params: effectId,
    body,
    response: EffectTransitionResponseSchema,
    status: [200],
    auth,
    errors: ["effect.not_found", "driver.connection_superseded", ...moreErrors],
    idempotent: true,
  });

/**
 * The Driver protocol (the schemas' docs in `driver-protocol.contract.ts`). Keys
 * are the route names the Driver logs and its test fakes script (`effectComplete`, ...).
 * Requests that carry `connectionId` are refused 409 `driver.connection_superseded` once a newer
 * connection of the same instance exists.
 */
export const DRIVER_API = {
  register: defineRoute({
    method: "POST",
    path: "/v1/drivers/register",
    body: RegisterDriverRequestSchema,
    response: RegisterDriverResponseSchema,
    status: [201],
    auth: { kind: "registration" },
    errors: ["effect.fence_retained", "driver.not_found"],
    idempotent: false,
    note: "not retried: a repeat would mint another instance",
  }),
  connect: defineRoute({
    method: "POST",
    path: "/v1/drivers/connect",
    response: ConnectDriverResponseSchema,
    status: [200],
    auth: { kind: "driver" },
    errors: [],
    idempotent: true,
    note: "each connect supersedes the earlier connections, so a retry at worst leaves one nobody uses",
  }),
  heartbeat: defineRoute({
    method: "POST",
    path: "/v1/drivers/heartbeat",
    body: ConnectionRequestSchema,
    response: HeartbeatResponseSchema,
    status: [200],
    auth: { kind: "driver" },
    errors: ["driver.connection_superseded"],
    idempotent: true,
  }),
  finalize: defineRoute({
    method: "POST",
    path: "/v1/drivers/finalize",
    body: ConnectionRequestSchema,
    response: FinalizationSummarySchema,
    status: [200],
    auth: { kind: "driver" },
    errors: [],
    idempotent: true,
    note: "the API finalizes the calling instance and does not read the body (the Driver sends its connectionId)",
  }),
  self: defineRoute({
    method: "GET",
    path: "/v1/drivers/self",
    response: DriverSelfResponseSchema,
    status: [200],
    auth: { kind: "driver" },
    errors: [],
    idempotent: true,
    note: "a read: changes nothing; a finalized instance is answered 409 driver.finalized by its credential",
  }),
  nextCommand: defineRoute({
    method: "GET",
    path: "/v1/drivers/commands/next",
    query: NextCommandQuerySchema,
    response: NextCommandResponseSchema,
    status: [200],
    auth: { kind: "driver" },
    errors: ["driver.connection_superseded"],
    idempotent: true,
    note: "a long-poll: waits up to waitMs for a command",
  }),
  commandUpdate: defineRoute({
    method: "POST",
    path: "/v1/drivers/commands/:commandId/update",
    params: commandId,
    body: CommandUpdateRequestSchema,
    response: CommandUpdateResponseSchema,
    status: [200],
    auth: { kind: "driver" },
    errors: ["command.not_found", "driver.connection_superseded"],
    idempotent: true,
  }),
  effectClaim: defineRoute({
    method: "POST",
    path: "/v1/drivers/effects/claim",
    body: EffectClaimRequestSchema,
    response: EffectClaimSchema,
    status: [200],
    auth: { kind: "driver" },
    errors: ["command.not_found", "command.terminal", "effect.not_found", "effect.claim_conflict", "driver.connection_superseded"],
    idempotent: true,
    note: "a compare-and-set: a retried claim that finds the effect executing fences it unknown (a needless fence at worst, never a duplicate write)",
  }),
  effectComplete: effectReport("/v1/drivers/effects/:effectId/complete", EffectCompleteRequestSchema, { kind: "driver_report" }),
  effectMarkUnknown: effectReport("/v1/drivers/effects/:effectId/mark-unknown", EffectMarkUnknownRequestSchema),
  effectDeadlineMissed: effectReport(
    "/v1/drivers/effects/:effectId/deadline-missed",
    EffectDeadlineMissedRequestSchema,
    { kind: "driver_report" },
    ["effect.not_attempt_connection", "effect.attempt_sent"],
  ),
  effectLateResult: effectReport("/v1/drivers/effects/:effectId/late-result", EffectLateResultRequestSchema, { kind: "driver_report" }),
  effectTaskCreated: effectReport("/v1/drivers/effects/:effectId/task", EffectTaskCreatedRequestSchema, { kind: "driver_report" }, [
    "effect.task_id_conflict",
  ]),
} as const satisfies Record<string, ApiRoute>;
/** The name of a Driver-protocol route ({@link DRIVER_API}). */
export type DriverRouteName = keyof typeof DRIVER_API;
/** The parsed body of Driver-protocol route `N` (what the API's service receives), e.g. `DriverRequestBody<"effectDeadlineMissed">`. */
export type DriverRequestBody<N extends DriverRouteName> = RouteBody<(typeof DRIVER_API)[N]>;
