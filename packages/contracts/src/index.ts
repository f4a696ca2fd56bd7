// The contracts package's public entry: every shared schema, route table, limit and helper of the API, Driver and CLI.
export { UlidSchema, newUlid, ulidFloor } from "./ids.contract.js";
export type { Ulid } from "./ids.contract.js";
export {
  RunErrorCodeSchema,
  RunErrorSchema,
  turnInterruptedError,
  turnInterruptedAfterWritesError,
  commandDriverTerminalError,
  effectUnknownError,
  runEffectsUnknownError,
  UnknownEffectIdsSchema,
  effectNotExecutedError,
} from "./run-error.contract.js";
export type { RunError, RunErrorCode } from "./run-error.contract.js";
export {
  TURN_TOOL_CALL_STATUSES,
  TurnToolCallStatusSchema,
  WRITTEN_TURN_STATUSES,
  TurnToolCallSchema,
  TurnAccountSchema,
} from "./turn-account.contract.js";
export type { TurnToolCallStatus, TurnToolCall, TurnAccount } from "./turn-account.contract.js";
export {
  IDEMPOTENCY_KEY_META,
  ArgumentsJsonSchema,
  ServerIdSchema,
  ToolNameSchema,
  CallIdSchema,
  McpExecuteCommandSchema,
  McpExecuteCommandResultSchema,
  McpExecuteCommandResultRequestSchema,
  McpToolResultSchema,
  toMcpExecuteCommandResult,
} from "./mcp-execute.contract.js";
export type { McpExecuteCommand, McpExecuteCommandResult, McpToolResult } from "./mcp-execute.contract.js";
export {
  TraceContextSchema,
  TraceparentSchema,
  TracestateSchema,
  TRACEPARENT_LENGTH,
  MAX_TRACESTATE_LENGTH,
} from "./trace-context.contract.js";
export type { TraceContext } from "./trace-context.contract.js";
export { fingerprintArguments, REQUEST_FINGERPRINT_PATTERN } from "./request-fingerprint.js";
export { KeyPlacementSchema, KeyPlacementNameSchema, DEFAULT_KEY_PLACEMENT } from "./key-placement.contract.js";
export type { KeyPlacement } from "./key-placement.contract.js";
export {
  COMMAND_STATUSES,
  CommandStatusSchema,
  TERMINAL_COMMAND_STATUSES,
  EFFECT_STATUSES,
  EffectStatusSchema,
  EFFECT_RESOLUTIONS,
  EffectResolutionSchema,
  ATTEMPT_STATUSES,
  AttemptStatusSchema,
  RUN_STATUSES,
  RunStatusSchema,
  DRIVER_INSTANCE_STATUSES,
  DriverInstanceStatusSchema,
  // the run-event and reconciliation-record lists, which statuses.contract.ts re-exports for the store's CHECKs
  RUN_EVENT_TYPES,
  TERMINAL_RUN_EVENT_TYPES,
  RECONCILIATION_TRIGGERS,
  RECONCILIATION_OUTCOMES,
  OPERATOR_ATTENTION_REASONS,
  OPERATOR_ACTIONS,
  OPERATOR_REFUSAL_CODES,
} from "./statuses.contract.js";
export type {
  CommandStatus,
  EffectStatus,
  EffectResolution,
  AttemptStatus,
  RunStatus,
  DriverInstanceStatus,
  RunEventType,
  ReconciliationTrigger,
  ReconciliationOutcome,
  OperatorAttentionReason,
  OperatorAction,
  OperatorRefusalCode,
} from "./statuses.contract.js";
export { OPERATOR_SCOPES } from "./reconciliation-records.contract.js";
export type { OperatorScope } from "./reconciliation-records.contract.js";
export { MAX_PROVIDER_RECEIPT_BYTES, MAX_ARGUMENTS_BYTES, MAX_RECEIPT_BYTES, MAX_RESULT_BYTES } from "./limits.contract.js";
export { EffectClaimSchema, SendWithinMsSchema, sendDeadlinePassed } from "./effect-claim.contract.js";
export type { EffectClaim } from "./effect-claim.contract.js";
export { ApiErrorBodySchema } from "./api-error.contract.js";
export type { ApiErrorBody } from "./api-error.contract.js";
export {
  DriverTokenSchema,
  RegisterDriverRequestSchema,
  RegisterDriverResponseSchema,
  ConnectDriverResponseSchema,
  ConnectionRequestSchema,
  HeartbeatResponseSchema,
  NextCommandQuerySchema,
  DriverCommandEnvelopeSchema,
  NextCommandResponseSchema,
  CommandUpdateRequestSchema,
  TransitionOutcomeSchema,
  CommandUpdateResponseSchema,
  EffectClaimRequestSchema,
  EffectCompleteRequestSchema,
  EffectMarkUnknownRequestSchema,
  EffectDeadlineMissedRequestSchema,
  EffectLateResultRequestSchema,
  EffectTaskCreatedRequestSchema,
  EffectTransitionResponseSchema,
  FinalizationSummarySchema,
} from "./driver-protocol.contract.js";
export type {
  RegisterDriverRequest,
  RegisterDriverResponse,
  ConnectDriverResponse,
  ConnectionRequest,
  HeartbeatResponse,
  NextCommandQuery,
  DriverCommandEnvelope,
  NextCommandResponse,
  CommandUpdateRequest,
  TransitionOutcome,
  CommandUpdateResponse,
  EffectClaimRequest,
  EffectCompleteRequest,
  EffectMarkUnknownRequest,
  EffectDeadlineMissedRequest,
  EffectLateResultRequest,
  EffectTaskCreatedRequest,
  EffectTransitionResponse,
  FinalizationSummary,
} from "./driver-protocol.contract.js";
export {
  CreateRunRequestSchema,
  CreateRunResponseSchema,
  EnqueueToolCallRequestSchema,
  EnqueueToolCallResponseSchema,
  RunEventsQuerySchema,
  ToolCallViewSchema,
} from "./run-api.contract.js";
export type {
  CreateRunRequest,
  CreateRunResponse,
  EnqueueToolCallRequest,
  EnqueueToolCallResponse,
  RunEventsQuery,
  ToolCallView,
} from "./run-api.contract.js";
export {
  MAX_JSON_DEPTH,
  FORBIDDEN_JSON_KEYS,
  MAX_ERROR_DETAILS_BYTES,
  isWellFormedText,
  hasControlOrBidi,
  hasFormatCharacter,
  identifierCharsProblem,
  CONTROL_OR_BIDI_MESSAGE,
  FORMAT_CHARACTER_MESSAGE,
  decodeUtf8Strict,
  INVALID_UTF8_MESSAGE,
  findJsonProblem,
  formatJsonProblem,
  identifierSchema,
  textSchema,
  safeJsonObjectSchema,
  strictIntegerString,
  strictIntegerInput,
  strictDecimalString,
} from "./input-safety.contract.js";
export type { JsonProblem } from "./input-safety.contract.js";
export {
  ApiEnvSchema,
  CliEnvSchema,
  DriverEnvSchema,
  ToolingEnvSchema,
  KNOWN_MOSOO_ENV_NAMES,
  unknownMosooEnvNames,
} from "./env.contract.js";
export { MAX_BODY_BYTES, AUTH_ERRORS, defineRoute, routePath, routeQueryString, matchRoute } from "./route-table.contract.js";
export type { ApiRoute, RouteAuth, RouteMethod, RouteInput, RouteOutput, RouteBody } from "./route-table.contract.js";
export { API_ROUTES, RUN_API, DRIVER_API, OPERATOR_API, CONSOLE_API, SYSTEM_API, ReadinessSchema } from "./api-routes.contract.js";
export { OPERATOR_ACTION_ROUTES, CONSOLE_ACTION_ROUTES } from "./operator-routes.contract.js";
export { operatorActionSegment } from "./operator-action-path.js";
export type { ApiRouteName, Readiness } from "./api-routes.contract.js";
export type { DriverRouteName, DriverRequestBody } from "./driver-protocol.contract.js";
export {
  OperatorListQuerySchema,
  OperatorReconcileRequestSchema,
  OperatorResolveRequestSchema,
  OperatorCompensateRequestSchema,
  OperatorEffectSummarySchema,
  OperatorEffectPageSchema,
  OperatorEffectDetailSchema,
  OperatorReconcileAnswerSchema,
  QueuedCompensationSchema,
  OperatorStatsSchema,
  LOOKUP_OUTCOME_WINDOW_MS,
  ConsoleStatsSchema,
  ConsoleSessionSchema,
  OPERATOR_ACTION_TABLE,
  OPERATOR_ACTION_NAMES,
} from "./operator-api.contract.js";
export type {
  OperatorListQuery,
  OperatorReconcileRequest,
  OperatorResolveRequest,
  OperatorCompensateRequest,
  OperatorEffectSummary,
  OperatorEffectPage,
  OperatorEffectDetail,
  OperatorReconcileAnswer,
  QueuedCompensation,
  OperatorStats,
  ConsoleStats,
  ConsoleSession,
  OperatorActionName,
  OperatorActionRequest,
  OperatorActionSent,
  OperatorActionAnswer,
} from "./operator-api.contract.js";
export { callRoute, RouteCallError } from "./route-client.js";
export type { RouteCallOptions } from "./route-client.js";
export { buildOpenApiDocument, COMMON_ROUTE_ERRORS } from "./openapi-document.js";
export type { OpenApiOptions } from "./openapi-document.js";
export {
  MAX_MCP_TASK_ID_LENGTH,
  MCP_TASK_ID_PATTERN,
  McpTaskIdSchema,
  acceptsToolCallsAsTasks,
  taskCallableToolNames,
} from "./mcp-task.contract.js";
export type { McpTaskId } from "./mcp-task.contract.js";
export { usageErrorWithoutValues } from "./cli-usage-error.js";
export { API_HEAP_FLAGS } from "./api-process.contract.js";
