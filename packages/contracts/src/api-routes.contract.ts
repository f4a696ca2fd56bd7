import { z } from "zod";
import { EffectClaimSchema } from "./effect-claim.contract.js";
import { UlidSchema } from "./ids.contract.js";
import {
  CommandUpdateRequestSchema,
  CommandUpdateResponseSchema,
  ConnectDriverResponseSchema,
  ConnectionRequestSchema,
  EffectClaimRequestSchema,
  EffectCompleteRequestSchema,
  EffectDeadlineMissedRequestSchema,
  EffectLateResultRequestSchema,
  EffectMarkUnknownRequestSchema,
  EffectTransitionResponseSchema,
  FinalizationSummarySchema,
  HeartbeatResponseSchema,
  NextCommandQuerySchema,
  NextCommandResponseSchema,
  RegisterDriverRequestSchema,
  RegisterDriverResponseSchema,
} from "./driver-protocol.contract.js";
import { CreateRunRequestSchema, CreateRunResponseSchema, EnqueueToolCallRequestSchema, EnqueueToolCallResponseSchema, RunEventsQuerySchema } from "./run-api.contract.js";
import { defineRoute, type ApiRoute } from "./route-table.contract.js";

const runId = z.object({ runId: UlidSchema });
const effectId = z.object({ effectId: UlidSchema });
const commandId = z.object({ commandId: UlidSchema });
/** A JSON object body, as the operator clients send it; the API checks it against its operator contract (`apps/api/src/modules/*`/operator.contract.ts). */
const operatorBody = z.record(z.string(), z.unknown());
/** The operator list's query, as the clients send it (strings); the API checks it against `OperatorListQuerySchema`. */
const operatorQuery = z.record(z.string(), z.string());
const OPERATOR_NOTE = "the body/query is checked by the API's operator contract (OperatorListQuerySchema, Operator*RequestSchema), which needs the adapter package's limits";

/** The driver-protocol's effect reports share a shape: `POST /v1/drivers/effects/:effectId/<report>` → `EffectTransitionResponse`. */
const effectReport = <const P extends string, B extends z.ZodType>(path: P, body: B) =>
  defineRoute({
    method: "POST",
    path,
    params: effectId,
    body,
    response: EffectTransitionResponseSchema,
    status: [200],
    auth: { kind: "driver" },
    errors: ["effect.not_found", "driver.connection_superseded"],
    idempotent: true,
  });

/**
 * The run API (docs/DESIGN.md §10): the agent side of the control plane, behind API keys with scopes.
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
    errors: ["run.not_found", "run.not_active", "tool_call.conflict"],
    idempotent: false,
    note: "200 when a retry with the same toolCallId replays the first enqueue (replayed: true)",
  }),
  getRun: defineRoute({ method: "GET", path: "/v1/runs/:runId", params: runId, status: [200], auth: { kind: "api_key", scope: "runs:read" }, errors: ["run.not_found"], idempotent: true }),
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

/**
 * The Driver protocol (docs/DESIGN.md §10; the schemas' docs in `driver-protocol.contract.ts`). Keys
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
    errors: ["command.not_found", "command.terminal", "effect.not_found", "driver.connection_superseded"],
    idempotent: true,
    note: "a compare-and-set: a retried claim that finds the effect executing fences it unknown (a needless fence at worst, never a duplicate write)",
  }),
  effectComplete: effectReport("/v1/drivers/effects/:effectId/complete", EffectCompleteRequestSchema),
  effectMarkUnknown: effectReport("/v1/drivers/effects/:effectId/mark-unknown", EffectMarkUnknownRequestSchema),
  effectDeadlineMissed: effectReport("/v1/drivers/effects/:effectId/deadline-missed", EffectDeadlineMissedRequestSchema),
  effectLateResult: effectReport("/v1/drivers/effects/:effectId/late-result", EffectLateResultRequestSchema),
} as const satisfies Record<string, ApiRoute>;

/** `POST /api/operator/effects/:effectId/<action>`: an operator action on one effect, with `{actor, reason, ...}`. */
const operatorAction = <const P extends string>(path: P, errors: readonly string[], status: readonly number[]) =>
  defineRoute({ method: "POST", path, params: effectId, body: operatorBody, status, auth: { kind: "operator" }, errors, idempotent: false, note: OPERATOR_NOTE });

/** The operator routes (docs/DESIGN.md §7), behind the operator token, while `MOSOO_EFFECT_RECONCILIATION` is on. */
export const OPERATOR_API = {
  operatorList: defineRoute({ method: "GET", path: "/api/operator/effects", query: operatorQuery, status: [200], auth: { kind: "operator" }, errors: [], idempotent: true, note: OPERATOR_NOTE }),
  operatorShow: defineRoute({ method: "GET", path: "/api/operator/effects/:effectId", params: effectId, status: [200], auth: { kind: "operator" }, errors: ["effect.not_found"], idempotent: true }),
  operatorReconcile: operatorAction("/api/operator/effects/:effectId/reconcile", ["effect.not_found", "effect.not_reconcilable"], [200]),
  operatorResolve: operatorAction("/api/operator/effects/:effectId/resolve", ["effect.not_found", "effect.not_unknown"], [200]),
  operatorCompensate: operatorAction(
    "/api/operator/effects/:effectId/compensate",
    ["effect.not_found", "effect.not_succeeded", "compensation.not_declared", "compensation.exists", "compensation.plan_failed", "compensation.driver_unavailable", "driver.not_found"],
    [202],
  ),
} as const satisfies Record<string, ApiRoute>;

/**
 * The operator console's JSON API (docs/DESIGN.md §7, §10): the same operator service, behind the
 * console's session cookie (and `X-CSRF-Token` on a POST); the body never names the actor (the
 * session's is used). The console's pages, assets and form posts are not JSON routes and are not here.
 */
export const CONSOLE_API = {
  consoleSession: defineRoute({ method: "GET", path: "/console/api/session", status: [200], auth: { kind: "console_session" }, errors: [], idempotent: true }),
  consoleList: defineRoute({ method: "GET", path: "/console/api/effects", query: operatorQuery, status: [200], auth: { kind: "console_session" }, errors: [], idempotent: true, note: OPERATOR_NOTE }),
  consoleStats: defineRoute({ method: "GET", path: "/console/api/stats", status: [200], auth: { kind: "console_session" }, errors: [], idempotent: true }),
  consoleEvents: defineRoute({
    method: "GET",
    path: "/console/api/events",
    status: [200],
    auth: { kind: "console_session" },
    errors: [],
    idempotent: true,
    note: "server-sent events (text/event-stream): ready, then change or ping",
  }),
  consoleShow: defineRoute({ method: "GET", path: "/console/api/effects/:effectId", params: effectId, status: [200], auth: { kind: "console_session" }, errors: ["effect.not_found"], idempotent: true }),
  consoleReconcile: defineRoute({
    method: "POST",
    path: "/console/api/effects/:effectId/reconcile",
    params: effectId,
    body: operatorBody,
    status: [200],
    auth: { kind: "console_session" },
    errors: OPERATOR_API.operatorReconcile.errors,
    idempotent: false,
    note: OPERATOR_NOTE,
  }),
  consoleResolve: defineRoute({
    method: "POST",
    path: "/console/api/effects/:effectId/resolve",
    params: effectId,
    body: operatorBody,
    status: [200],
    auth: { kind: "console_session" },
    errors: OPERATOR_API.operatorResolve.errors,
    idempotent: false,
    note: OPERATOR_NOTE,
  }),
  consoleCompensate: defineRoute({
    method: "POST",
    path: "/console/api/effects/:effectId/compensate",
    params: effectId,
    body: operatorBody,
    status: [202],
    auth: { kind: "console_session" },
    errors: OPERATOR_API.operatorCompensate.errors,
    idempotent: false,
    note: OPERATOR_NOTE,
  }),
} as const satisfies Record<string, ApiRoute>;

/** The API's own routes: liveness and Prometheus metrics (text, not JSON). */
export const SYSTEM_API = {
  health: defineRoute({ method: "GET", path: "/health", response: z.object({ status: z.literal("ok") }), status: [200], auth: { kind: "public" }, errors: [], idempotent: true }),
  metrics: defineRoute({ method: "GET", path: "/metrics", status: [200], auth: { kind: "metrics" }, errors: [], idempotent: true, note: "Prometheus text format" }),
} as const satisfies Record<string, ApiRoute>;

/**
 * THE route table: every JSON route of the API, once (docs/DESIGN.md §10). The API mounts each entry
 * (and a test checks both ways that the mounted routes and this table are the same set); the Driver,
 * the operator CLI, the e2e harness and the test helpers derive their requests from it.
 */
export const API_ROUTES = { ...SYSTEM_API, ...RUN_API, ...DRIVER_API, ...OPERATOR_API, ...CONSOLE_API } as const;
/** The name of a route of {@link API_ROUTES}. */
export type ApiRouteName = keyof typeof API_ROUTES;
/** The name of a Driver-protocol route ({@link DRIVER_API}). */
export type DriverRouteName = keyof typeof DRIVER_API;
