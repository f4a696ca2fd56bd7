/**
 * The `mosoo-driver` command line (CLI only: parse, validate, wire, run). Exit codes: 0 after a
 * graceful stop, 1 when the connection is lost or startup fails, 2 on bad input (one line on stderr).
 */
import { resolve } from "node:path";
import { hostname } from "node:os";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import {
  DEFAULT_API_RETRY_BUDGET_MS,
  DEFAULT_API_RETRY_MAX_DELAY_MS,
  DEFAULT_POLL_WAIT_MS,
  DEFAULT_TOOL_TIMEOUT_MS,
  DriverOptionsSchema,
  LOG_LEVELS,
} from "./driver-config.contract.js";
import { DriverConfigError, formatZodIssues, resolveApiUrls } from "./driver-config.loader.js";
import { createDriver, createDriverLogger } from "./driver-runner.js";
import { DEFAULT_RESULT_REPORT_BUDGET_MS } from "./result-report.service.js";
import { unknownMosooEnvNames, usageErrorWithoutValues } from "@mosoo/contracts";
import { startTracing } from "@mosoo/telemetry";

const EXIT_BAD_INPUT = 2;

const HELP_AFTER = `
Example:
  mosoo-driver --api-url http://127.0.0.1:8787 --mcp-config ./mcp-servers.json \\
    --state-file ./var/driver-state.json --tool-timeout-ms 30000

API URLs: --api-url may be repeated (or take a comma-separated list); without it the Driver reads
  MOSOO_API_URLS (comma-separated), else MOSOO_API_URL. Several URLs must be instances of ONE API
  deployment sharing one database (PostgreSQL). The Driver uses the first, and when one cannot be
  reached (connection refused/reset, timeout) moves to the next and stays there (sticky until
  failure), keeping its instance, token and connection. Each switch is logged as api.failover
  (fromUrl, toUrl). http/https only; no user:password@, query or fragment; at most 16; none twice.

MCP config file (--mcp-config), validated at startup:
  {"servers": {
     "issues": {"type": "http", "url": "http://127.0.0.1:3917/mcp", "headers": {"authorization": "Bearer …"}},
     "files":  {"type": "stdio", "command": "node", "args": ["server.js"], "env": {"KEY": "v"}, "cwd": "/srv"}}}
  ("headers", "env" and "cwd" are optional.) Each server may also name where it takes the effect's
  idempotency key: "idempotencyKey": {"in": "meta" | "argument", "name": "<name>"} (default: the
  "_meta" key io.mosoo/idempotency-key; see docs/operating.md, "The Driver").

State file (--state-file): {apiUrl, driverInstanceId, driverToken}, written atomically, mode 0600.
  Absent: the Driver registers a new instance and writes it (apiUrl: the first API URL). Present:
  it reconnects as that instance (after a crash, just start again with the same file: the API
  redelivers every command that has no terminal receipt); its apiUrl must be one of the API URLs.

Environment: MOSOO_DRIVER_ENROLLMENT_TOKEN, the API's enrollment token, is sent when the Driver
  registers a new instance (no state file yet); once registered it uses its own token from the
  state file. MOSOO_API_URLS / MOSOO_API_URL: see API URLs above.

Provider results: a result the provider returned is written (fsynced) to <state file>.outbox/ before
  it is sent, and reported until the API answers it, with backoff and jitter, for
  --result-report-budget-ms (default 180000: a database failover fits in it); a restarted Driver
  reports what the outbox holds before it pulls commands. Past the budget the result is given up
  (error line effect.result_report_given_up naming the effect), the effect is left to the fence, and the
  outbox keeps the result for the Driver's next start, which reports it again as late evidence.
  Every other idempotent request is retried the same way for --api-retry-budget-ms (default 30000).

Signals: SIGTERM/SIGINT stop polling and let the command in hand finish; a second signal exits at
  once (130). A graceful stop does NOT finalize the instance unless --finalize-on-exit is given.

Exit codes: 0 graceful stop; 1 connection lost (401, or superseded by a newer connection) or startup
  failure (e.g. no API URL answered); 2 bad input (missing flag or API URL, a bad API URL list,
  unreadable/invalid config or state file).

Logs: pino JSON lines on stdout.`;

function parsePositiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) <= 0) throw new InvalidArgumentError("expected a positive integer (milliseconds)");
  return Number(value);
}

function parseNonNegativeInt(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a non-negative integer (milliseconds)");
  return Number(value);
}

/** commander's collector of a repeatable option: every value, in order. */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function badInput(message: string): never {
  process.stderr.write(`mosoo-driver: ${message.replace(/\s*\n\s*/g, " ").trim()}\n`);
  process.exit(EXIT_BAD_INPUT);
}

function buildProgram(): Command {
  return new Command()
    .name("mosoo-driver")
    .description("Mosoo Driver: pulls mcp.execute commands from the Mosoo API and calls the tools on your MCP servers, once per claim.")
    .option(
      "--api-url <url>",
      "base URL of the Mosoo API, e.g. http://127.0.0.1:8787; repeat it (or comma-separate) for several instances of one deployment (default: MOSOO_API_URLS, else MOSOO_API_URL)",
      collect,
    )
    .requiredOption("--mcp-config <file>", "JSON file that names the MCP servers, by serverId (required; format below)")
    .option(
      "--name <name>",
      "Driver instance name, sent when registering a new instance (1-100 chars)",
      `driver-${hostname()}`.slice(0, 100),
    )
    .option("--state-file <path>", "where the Driver identity (instance id + token) is kept", "./var/driver-state.json")
    .option(
      "--tool-timeout-ms <ms>",
      "timeout of one MCP tool call in ms; on expiry the effect is fenced as unknown",
      parsePositiveInt,
      DEFAULT_TOOL_TIMEOUT_MS,
    )
    .option(
      "--api-retry-budget-ms <ms>",
      "how long one idempotent API request is retried (backoff with jitter) before it fails, ms",
      parseNonNegativeInt,
      DEFAULT_API_RETRY_BUDGET_MS,
    )
    .option(
      "--api-retry-max-delay-ms <ms>",
      "longest delay between two retries of an API request, ms",
      parsePositiveInt,
      DEFAULT_API_RETRY_MAX_DELAY_MS,
    )
    .option(
      "--result-report-budget-ms <ms>",
      "how long a provider's result is reported to an API that cannot take it before it is given up (and the effect left to the fence), ms; at least 1000",
      parsePositiveInt,
      DEFAULT_RESULT_REPORT_BUDGET_MS,
    )
    .addOption(new Option("--log-level <level>", "minimum log level").choices(LOG_LEVELS).default("info"))
    .option(
      "--finalize-on-exit",
      "on SIGTERM/SIGINT also POST finalize (the instance is gone for good) and delete the state file (kept while the outbox holds a result, which the next start reports)",
      false,
    )
    .addHelpText("after", HELP_AFTER)
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      outputError: (text, write) =>
        write(
          `mosoo-driver: ${usageErrorWithoutValues(text)
            .replace(/\s*\n\s*/g, " ")
            .trim()}\n`,
        ),
    });
}

async function main(): Promise<void> {
  const program = buildProgram();
  try {
    program.parse(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : EXIT_BAD_INPUT);
    throw error;
  }
  const raw = program.opts<Record<string, unknown>>();
  // Relative paths mean "relative to where the user ran the command": npm/pnpm scripts run in the
  // package folder, and record the caller's folder in INIT_CWD.
  const base = process.env["INIT_CWD"] ?? process.cwd();
  const fromCaller = (value: unknown) => (typeof value === "string" && value !== "" ? resolve(base, value) : value);
  let apiUrls: string[];
  try {
    apiUrls = resolveApiUrls({ flags: (raw["apiUrl"] as string[] | undefined) ?? [], env: process.env }).urls;
  } catch (error) {
    if (error instanceof DriverConfigError) badInput(`${error.code}: ${error.message}`);
    throw error;
  }
  const parsed = DriverOptionsSchema.safeParse({
    apiUrls,
    name: raw["name"],
    stateFile: fromCaller(raw["stateFile"]),
    mcpConfigFile: fromCaller(raw["mcpConfig"]),
    toolTimeoutMs: raw["toolTimeoutMs"],
    pollWaitMs: DEFAULT_POLL_WAIT_MS,
    logLevel: raw["logLevel"],
    finalizeOnExit: raw["finalizeOnExit"] === true,
    apiRetryBudgetMs: raw["apiRetryBudgetMs"],
    apiRetryMaxDelayMs: raw["apiRetryMaxDelayMs"],
    resultReportBudgetMs: raw["resultReportBudgetMs"],
    // a secret: from the environment, never a flag (flags show in `ps`)
    enrollmentToken: process.env["MOSOO_DRIVER_ENROLLMENT_TOKEN"] || undefined,
  });
  if (!parsed.success) badInput(`invalid option: ${formatZodIssues(parsed.error)}`);
  const options = parsed.data;
  const logger = createDriverLogger(options.logLevel);
  const unknownEnv = unknownMosooEnvNames(process.env);
  if (unknownEnv.length > 0)
    logger.warn({ names: unknownEnv }, `config.unknown_variables: no Mosoo program reads ${unknownEnv.join(", ")} (a typo?)`);

  // OpenTelemetry traces (docs/OPERATIONS.md "Traces"): the SDK starts only when OTEL_EXPORTER_OTLP_ENDPOINT
  // (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; otherwise every span is a no-op.
  const tracing = await startTracing({ serviceName: "mosoo-driver" });
  if (tracing.enabled) logger.info("tracing.started");

  let driver;
  try {
    driver = await createDriver(options, logger);
  } catch (error) {
    if (error instanceof DriverConfigError) badInput(`${error.code}: ${error.message}`);
    throw error;
  }

  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal }, "driver.forced_exit");
      process.exit(130);
    }
    driver.stop(signal);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  try {
    const reason = await driver.run();
    await tracing.shutdown();
    process.exit(reason.exitCode);
  } catch (error) {
    if (error instanceof DriverConfigError) badInput(`${error.code}: ${error.message}`);
    throw error;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`mosoo-driver: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
