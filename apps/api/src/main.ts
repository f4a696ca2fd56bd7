// The API's process entry: checks the configuration, store path and bindings file first, then serves until SIGINT or SIGTERM.
import { ConfigError, loadApiConfig, unknownMosooEnvNames } from "./config/api-config.js";
import { checkDbFilePath, readBindingsFileText } from "./config/startup-checks.js";

/**
 * Process entry of the API: config from the environment (see README), then serve until SIGINT/SIGTERM.
 * The configuration, the store path and the bindings file are checked before the rest of the API is
 * even loaded (a dynamic import), so a bad one ends the process within a second or two with one line
 * `config.invalid: ...` and exit code 2, never a hang (a store under `/proc`, a FIFO).
 * `MOSOO_*` names no Mosoo program reads are reported on one warning line.
 */
async function main(): Promise<void> {
  if (process.argv.includes("--help") || process.argv.includes("-h")) {
    process.stdout.write(
      "mosoo-api: the Mosoo control plane (run API, Driver protocol, effect ledger).\n" +
        "Configured by environment variables (see README.md, 'Configuration'): MOSOO_DB_FILE (the embedded SQLite store,\n" +
        "the default) or MOSOO_DATABASE_URL (a PostgreSQL store, postgres://...; several API instances may share it)\n" +
        "with MOSOO_DATABASE_POOL_SIZE (connections per instance, default 10), MOSOO_HOST,\n" +
        "MOSOO_PORT, MOSOO_HEARTBEAT_TTL_MS, MOSOO_SWEEP_INTERVAL_MS, MOSOO_LOG_LEVEL, and for the opt-in\n" +
        "reconciliation of unknown effects MOSOO_EFFECT_RECONCILIATION (off|on), MOSOO_RECONCILIATION_BINDINGS_FILE,\n" +
        "MOSOO_LOOKUP_TIMEOUT_MS, MOSOO_RECONCILIATION_CONCURRENCY, MOSOO_LOOKUP_BACKOFF_INITIAL_MS,\n" +
        "MOSOO_LOOKUP_BACKOFF_MAX_MS, MOSOO_LOOKUP_BACKOFF_FACTOR, MOSOO_MAX_LOOKUPS, MOSOO_ADAPTER_HEAP_MB,\n" +
        "MOSOO_ADAPTER_CPU_MS, MOSOO_ADAPTER_LOAD_TIMEOUT_MS, MOSOO_GROUP_COMMIT_MAX, MOSOO_GROUP_COMMIT_WINDOW_MS; the Driver's send-by\n" +
        "deadline on each claim: MOSOO_SEND_DEADLINE_MS;\n" +
        "MOSOO_OPERATOR_TOKEN enables the operator routes (see also: npm run effects -- --help).\n" +
        "Credentials (README.md, 'Credentials'): MOSOO_API_KEYS (name:secret:scope+scope,...) or MOSOO_API_KEYS_FILE\n" +
        "for the run API, MOSOO_DRIVER_ENROLLMENT_TOKEN for Driver registration, MOSOO_METRICS_PUBLIC (off|on),\n" +
        "MOSOO_DRIVER_REGISTER_RATE, MOSOO_DRIVER_UNCONNECTED_TTL_MS. A non-loopback MOSOO_HOST needs API keys.\n",
    );
    return;
  }
  let config;
  try {
    config = loadApiConfig(process.env);
    if (config.databaseUrl === undefined) checkDbFilePath(config.dbFile);
    if (config.reconciliation.bindingsFile) readBindingsFileText(config.reconciliation.bindingsFile);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const [{ createLogger }, { startApi }, { startTracing }] = await Promise.all([
    import("./platform/logger.js"),
    import("./server.js"),
    import("@mosoo/telemetry"),
  ]);
  const logger = createLogger(config.logLevel);
  // OpenTelemetry traces (docs/OPERATIONS.md "Traces"): the SDK starts only when OTEL_EXPORTER_OTLP_ENDPOINT
  // (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; otherwise every span is a no-op.
  const tracing = await startTracing({ serviceName: "mosoo-api" });
  if (tracing.enabled) logger.info("tracing.started");
  const unknown = unknownMosooEnvNames(process.env);
  if (unknown.length > 0)
    logger.warn({ names: unknown }, `config.unknown_variables: no Mosoo program reads ${unknown.join(", ")} (a typo?)`);
  let api;
  try {
    api = await startApi(config, logger);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`api.start_failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
  const stop = () => {
    logger.info("api.stopping");
    api.close().then(
      async () => {
        await tracing.shutdown();
        logger.info("api.stopped");
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err: String(err) }, "api.stop_failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

void main();
