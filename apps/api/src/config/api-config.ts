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
  MOSOO_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(2_000),
  MOSOO_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

/** The parsed configuration: `dbFile` path, `host`, `port` (0 = any free port), times in ms, `logLevel`. */
export interface ApiConfig {
  dbFile: string;
  host: string;
  port: number;
  heartbeatTtlMs: number;
  sweepIntervalMs: number;
  logLevel: z.infer<typeof ApiConfigSchema>["MOSOO_LOG_LEVEL"];
}

/** A configuration error: `message` is one line naming the variable (`config.invalid: MOSOO_PORT: ...`). */
export class ConfigError extends Error {
  readonly code = "config.invalid";
}

/**
 * Parses the configuration from `env` (usually `process.env`); empty strings count as unset.
 * @throws ConfigError on the first invalid variable.
 */
export function loadApiConfig(env: Record<string, string | undefined>): ApiConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith("MOSOO_") && v !== ""));
  const parsed = ApiConfigSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? "environment");
    throw new ConfigError(`config.invalid: ${name}: ${issue?.message ?? "invalid value"} (got ${JSON.stringify(env[name])})`);
  }
  const c = parsed.data;
  return {
    dbFile: c.MOSOO_DB_FILE,
    host: c.MOSOO_HOST,
    port: c.MOSOO_PORT,
    heartbeatTtlMs: c.MOSOO_HEARTBEAT_TTL_MS,
    sweepIntervalMs: c.MOSOO_SWEEP_INTERVAL_MS,
    logLevel: c.MOSOO_LOG_LEVEL,
  };
}
