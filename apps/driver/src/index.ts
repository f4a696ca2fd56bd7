// The Driver package's public entry: the API client, configuration, loop, MCP connections and command handler.
export { DEFAULT_API_RETRY, DriverApiClient } from "./api-client.js";
export { ApiEndpointPool } from "./api-endpoints.js";
export {
  ApiContractError,
  ApiRequestError,
  ApiUnavailableError,
  isConnectionLostError,
  isInstanceFinalizedError,
  isRetryableApiError,
} from "./api-errors.js";
export type { ApiDelivery, ApiUnavailableErrorOptions } from "./api-errors.js";
export type { ApiRetryOptions, DriverApi, DriverApiClientOptions, DriverCallOptions, DriverCommandApi, DriverRoute } from "./api-client.js";
export {
  ApiUrlListSchema,
  ApiUrlSchema,
  MAX_API_URLS,
  normalizeApiUrl,
  DEFAULT_POLL_WAIT_MS,
  DEFAULT_TOOL_TIMEOUT_MS,
  DriverOptionsSchema,
  DriverStateSchema,
  LOG_LEVELS,
  McpConfigSchema,
  McpHttpServerConfigSchema,
  McpServerConfigSchema,
  McpStdioServerConfigSchema,
} from "./driver-config.contract.js";
export type {
  DriverOptions,
  DriverState,
  LogLevel,
  McpConfig,
  McpHttpServerConfig,
  McpServerConfig,
  McpStdioServerConfig,
} from "./driver-config.contract.js";
export { DriverConfigError, formatZodIssues, loadMcpConfigFile, parseMcpConfig, resolveApiUrls } from "./driver-config.loader.js";
export type { ApiUrlSources } from "./driver-config.loader.js";
export { DRIVER_STATE_FILE_MODE, DriverStateRepository } from "./driver-state.repository.js";
export { ResultOutboxRepository } from "./result-outbox.repository.js";
export type { PendingResult, UnreadableOutboxFile } from "./result-outbox.repository.js";
export { DEFAULT_RESULT_REPORT_BUDGET_MS, drainResultOutbox, reportProviderResult } from "./result-report.service.js";
export type { ResultReportDeps, ResultReportOutcome } from "./result-report.service.js";
export { createMcpTransport, McpConnections, McpServerUnavailableError, placeIdempotencyKey } from "./mcp-connections.js";
export type {
  McpConnectionsOptions,
  McpToolCallOptions,
  McpToolCaller,
  McpToolCallRequest,
  McpTransportFactory,
} from "./mcp-connections.js";
export { handleMcpExecuteCommand } from "./mcp-execute.handler.js";
export { serverUnavailableError } from "./mcp-command-terminal.service.js";
export { MAX_OUTPUT_TEXT_LENGTH, MAX_RECEIPT_BYTES } from "./mcp-tool-result.service.js";
export type { McpExecuteHandlerDeps, McpExecuteOutcome } from "./mcp-execute.handler.js";
export { DriverLoop } from "./driver-loop.service.js";
export type { DriverLoopOptions, DriverStopReason } from "./driver-loop.service.js";
export { createDriver, createDriverLogger } from "./driver-runner.js";
export type { CreateDriverExtras } from "./driver-runner.js";
