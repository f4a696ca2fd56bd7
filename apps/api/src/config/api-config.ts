import { resolve } from "node:path";
import { z } from "zod";

/**
 * The API's configuration, read from the environment (see the README's config table). Every
 * variable is validated; an invalid one stops startup with one line naming it.
 */
export const ApiConfigSchema = z.object({
  MOSOO_DB_FILE: z.string().min(1).default("./var/mosoo.db"),
  MOSOO_HOST: z.string().min(1).default("127.0.0.1"),
  MOSOO_PORT: z.coerce.number().int().min(0).max(65535).default(8787),
  MOSOO_HEARTBEAT_TTL_MS: z.coerce.number().int().min(500).max(3_600_000).default(15_000),
  // DESIGN.md §3 rule 12: the Driver sends tools/call at most this long after it sent the claim request.
  MOSOO_SEND_DEADLINE_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  MOSOO_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(2_000),
  MOSOO_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  MOSOO_EFFECT_RECONCILIATION: z.enum(["off", "on"]).default("off"),
  MOSOO_RECONCILIATION_BINDINGS_FILE: z.string().min(1).optional(),
  // Below the Driver's 30 s request timeout: an inline lookup runs inside the Driver's claim request.
  MOSOO_LOOKUP_TIMEOUT_MS: z.coerce.number().int().min(100).max(20_000).default(5_000),
  MOSOO_RECONCILIATION_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  MOSOO_LOOKUP_BACKOFF_INITIAL_MS: z.coerce.number().int().min(10).max(86_400_000).default(1_000),
  MOSOO_LOOKUP_BACKOFF_MAX_MS: z.coerce.number().int().min(10).max(86_400_000).default(300_000),
  MOSOO_LOOKUP_BACKOFF_FACTOR: z.coerce.number().min(1).max(10).default(2),
  MOSOO_MAX_LOOKUPS: z.coerce.number().int().min(1).max(1_000).default(8),
  // The old-generation heap limit of each adapter worker thread (DESIGN.md §4: adapters are untrusted code).
  MOSOO_ADAPTER_HEAP_MB: z.coerce.number().int().min(16).max(4_096).default(64),
  MOSOO_OPERATOR_TOKEN: z.string().trim().min(16, "must be at least 16 characters (spaces do not count)").optional(),
});

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
