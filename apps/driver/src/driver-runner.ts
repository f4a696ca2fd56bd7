// Wires a Driver from its resolved options (API client, state file, result outbox, MCP clients), and its logger.
import { pino, type DestinationStream, type Logger } from "pino";
import { DriverApiClient, type ApiRetryOptions } from "./api-client.js";
import {
  DEFAULT_API_RETRY_BUDGET_MS,
  DEFAULT_API_RETRY_MAX_DELAY_MS,
  type DriverOptions,
  type LogLevel,
  type McpConfig,
} from "./driver-config.contract.js";
import { loadMcpConfigFile } from "./driver-config.loader.js";
import { DriverLoop } from "./driver-loop.service.js";
import { DriverStateRepository } from "./driver-state.repository.js";
import { McpConnections } from "./mcp-connections.js";
import { ResultOutboxRepository } from "./result-outbox.repository.js";

/**
 * The Driver's logger: pino JSON lines (ISO `time`, `service: "mosoo-driver"`), to stdout unless
 * `destination` is given (tests pass a stream to read the lines back).
 */
export function createDriverLogger(level: LogLevel, destination?: DestinationStream): Logger {
  // Logs never carry credentials (docs/DESIGN.md §10): the Driver's token and any header it might log.
  const redact = {
    paths: [
      "authorization",
      "driverToken",
      "token",
      "*.authorization",
      "*.driverToken",
      "*.token",
      "headers.authorization",
      "*.headers.authorization",
      "*.*.token",
    ],
    censor: "[redacted]",
  };
  const options = { level, base: { service: "mosoo-driver" }, timestamp: pino.stdTimeFunctions.isoTime, redact };
  return destination ? pino(options, destination) : pino(options);
}

/** Extra wiring of {@link createDriver}, mostly for tests. */
export interface CreateDriverExtras {
  /** The MCP config; when absent it is read from `options.mcpConfigFile`. */
  mcpConfig?: McpConfig | undefined;
  /** API retry policy override (tests: fast retries), applied over the options' `apiRetryBudgetMs` / `apiRetryMaxDelayMs`. */
  apiRetry?: Partial<ApiRetryOptions> | undefined;
  /** Poll/reconnect backoff override, ms. */
  backoffMs?: { min: number; max: number } | undefined;
}

/**
 * Wires a {@link DriverLoop} from resolved options: API client (fetch + p-retry with the options'
 * retry policy, fail-over over `options.apiUrls`), state file repository, the result outbox next to
 * it (`<state file>.outbox/`), lazily connected MCP clients.
 * @throws DriverConfigError (`config.invalid`) when the MCP config file cannot be read or is invalid.
 */
export async function createDriver(options: DriverOptions, logger: Logger, extras: CreateDriverExtras = {}): Promise<DriverLoop> {
  const mcpConfig = extras.mcpConfig ?? (await loadMcpConfigFile(options.mcpConfigFile));
  const client = new DriverApiClient({
    apiUrls: options.apiUrls,
    logger,
    retry: {
      budgetMs: options.apiRetryBudgetMs ?? DEFAULT_API_RETRY_BUDGET_MS,
      maxTimeoutMs: options.apiRetryMaxDelayMs ?? DEFAULT_API_RETRY_MAX_DELAY_MS,
      ...extras.apiRetry,
    },
    enrollmentToken: options.enrollmentToken,
  });
  return new DriverLoop({
    apiFor: (token) => (token ? client.withDriverToken(token) : client),
    stateRepository: new DriverStateRepository(options.stateFile),
    outbox: ResultOutboxRepository.besideStateFile(options.stateFile),
    resultReportBudgetMs: options.resultReportBudgetMs,
    mcp: new McpConnections(mcpConfig, { logger }),
    logger,
    apiUrls: options.apiUrls,
    currentApiUrl: () => client.currentApiUrl,
    name: options.name,
    toolTimeoutMs: options.toolTimeoutMs,
    pollWaitMs: options.pollWaitMs,
    finalizeOnExit: options.finalizeOnExit,
    backoffMs: extras.backoffMs,
  });
}
