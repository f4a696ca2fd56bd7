import { resolve } from "node:path";
import type { z } from "zod";
import { ApiEnvSchema } from "@mosoo/contracts";
export { unknownMosooEnvNames } from "@mosoo/contracts";

/**
 * The API's configuration, read from the environment (see the README's config table). Every
 * variable is validated (integers strictly: `MOSOO_PORT=0x50` is refused); an invalid one stops
 * startup with one line naming it. The schema is `ApiEnvSchema` of `@mosoo/contracts`, next to the
 * Driver's and the CLI's, so each program knows every `MOSOO_*` name (unknown ones are reported at
 * startup: {@link unknownMosooEnvNames}).
 */
export const ApiConfigSchema = ApiEnvSchema;

/** The parsed configuration: `dbFile` path, `host`, `port` (0 = any free port), times in ms, `logLevel`. */
export interface ApiConfig {
  dbFile: string;
  host: string;
  port: number;
  heartbeatTtlMs: number;
  /**
   * Send-by deadline of every `execute` claim (ms, DESIGN.md §3 rule 12): the Driver never sends
   * `tools/call` later than this after it sent the claim request; a `max_in_flight` window runs
   * until the claim + this + the adapter's `maxInFlightMs`.
   */
  sendDeadlineMs: number;
  sweepIntervalMs: number;
  logLevel: z.infer<typeof ApiConfigSchema>["MOSOO_LOG_LEVEL"];
  /** Bearer token of the operator routes (`/api/operator/*`, only with reconciliation on); without it they answer 403 `auth.operator_disabled`. */
  operatorToken: string | undefined;
  /** The opt-in reconciliation of unknown effects (DESIGN.md §4–§6); `enabled: false` is exactly the #412 baseline. */
  reconciliation: {
    enabled: boolean;
    /** Path of the JSON bindings file (MCP server id → adapter id + options), if any. */
    bindingsFile: string | undefined;
    lookupTimeoutMs: number;
    concurrency: number;
    backoff: { initialMs: number; maxMs: number; factor: number };
    maxLookups: number;
    /** Old-generation heap limit (MB) of each worker thread that runs adapter code (`MOSOO_ADAPTER_HEAP_MB`). */
    adapterHeapMb: number;
  };
}

/** A configuration error: `message` is one line naming the variable (`config.invalid: MOSOO_PORT: ...`). */
export class ConfigError extends Error {
  readonly code = "config.invalid";
}

/**
 * Parses the configuration from `env` (usually `process.env`); empty strings count as unset.
 * Relative file paths are resolved against `env.INIT_CWD` (the folder npm was run in) or the cwd.
 * @throws ConfigError on the first invalid variable.
 */
export function loadApiConfig(env: Record<string, string | undefined>): ApiConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith("MOSOO_") && v !== ""));
  const parsed = ApiConfigSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? "environment");
    const got = name.endsWith("_TOKEN") ? "" : ` (got ${JSON.stringify(env[name])})`; // never echo a secret
    throw new ConfigError(`config.invalid: ${name}: ${issue?.message ?? "invalid value"}${got}`);
  }
  const c = parsed.data;
  // Relative paths are relative to where the user ran the command (npm/pnpm scripts run in the
  // package folder and record the caller's folder in INIT_CWD).
  const base = env["INIT_CWD"] ?? process.cwd();
  if (c.MOSOO_LOOKUP_BACKOFF_MAX_MS < c.MOSOO_LOOKUP_BACKOFF_INITIAL_MS) {
    throw new ConfigError(`config.invalid: MOSOO_LOOKUP_BACKOFF_MAX_MS: must be >= MOSOO_LOOKUP_BACKOFF_INITIAL_MS (${c.MOSOO_LOOKUP_BACKOFF_INITIAL_MS})`);
  }
  return {
    dbFile: c.MOSOO_DB_FILE === ":memory:" ? c.MOSOO_DB_FILE : resolve(base, c.MOSOO_DB_FILE),
    host: c.MOSOO_HOST,
    port: c.MOSOO_PORT,
    heartbeatTtlMs: c.MOSOO_HEARTBEAT_TTL_MS,
    sendDeadlineMs: c.MOSOO_SEND_DEADLINE_MS,
    sweepIntervalMs: c.MOSOO_SWEEP_INTERVAL_MS,
    logLevel: c.MOSOO_LOG_LEVEL,
    operatorToken: c.MOSOO_OPERATOR_TOKEN,
    reconciliation: {
      enabled: c.MOSOO_EFFECT_RECONCILIATION === "on",
      bindingsFile: c.MOSOO_RECONCILIATION_BINDINGS_FILE === undefined ? undefined : resolve(base, c.MOSOO_RECONCILIATION_BINDINGS_FILE),
      lookupTimeoutMs: c.MOSOO_LOOKUP_TIMEOUT_MS,
      concurrency: c.MOSOO_RECONCILIATION_CONCURRENCY,
      backoff: { initialMs: c.MOSOO_LOOKUP_BACKOFF_INITIAL_MS, maxMs: c.MOSOO_LOOKUP_BACKOFF_MAX_MS, factor: c.MOSOO_LOOKUP_BACKOFF_FACTOR },
      maxLookups: c.MOSOO_MAX_LOOKUPS,
      adapterHeapMb: c.MOSOO_ADAPTER_HEAP_MB,
    },
  };
}
