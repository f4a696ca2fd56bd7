// The API's configuration, read and validated from the environment, with the credentials files it names.
import { resolve } from "node:path";
import { z } from "zod";
import { ApiEnvSchema } from "@mosoo/contracts";
import { parseApiKeysEnv, readApiKeysFile, type ApiKey } from "./api-keys.contract.js";
import { loadOperatorCredentials } from "./operator-credentials.contract.js";
import type { OperatorCredentials } from "../modules/operator/domain/operator-credential.js";
export { unknownMosooEnvNames } from "@mosoo/contracts";

/**
 * The API's configuration, read from the environment (docs/configuration.md, generated from the env contract). Every
 * variable is validated (integers strictly: `MOSOO_PORT=0x50` is refused); an invalid one stops
 * startup with one line naming it. The schema is `ApiEnvSchema` of `@mosoo/contracts`, next to the
 * Driver's and the CLI's, so each program knows every `MOSOO_*` name (unknown ones are reported at
 * startup: {@link unknownMosooEnvNames}).
 */
export const ApiConfigSchema = ApiEnvSchema;

/** The credentials the HTTP layer checks (see `CredentialGuard` in credential-guard.ts). Secrets are kept in memory only. */
export interface AuthConfig {
  /** The run API's keys (from `MOSOO_API_KEYS` and `MOSOO_API_KEYS_FILE`, both may be set; names unique). */
  apiKeys: ApiKey[];
  /** The token a new Driver registers with; without it only the operator token registers Drivers. */
  driverEnrollmentToken: string | undefined;
  /** `GET /metrics` without credentials (`MOSOO_METRICS_PUBLIC=on`). */
  metricsPublic: boolean;
  /**
   * Per client address per minute, each of two budgets (rate-limiter-flexible, `RegistrationRateLimit`):
   * correctly authenticated registrations, and attempts with a refused credential; past either,
   * that kind answers 429 `request.rate_limited`. Refused attempts never spend the accepted budget.
   */
  driverRegisterPerMinute: number;
  /** A Driver registration that never connected is purged by the maintenance sweep this long (ms) after registering. */
  driverUnconnectedTtlMs: number;
  /**
   * The operator credentials (`MOSOO_OPERATOR_TOKEN`, `MOSOO_OPERATOR_CREDENTIALS_FILE`), held as
   * sha-256 digests; none configured: the operator routes answer 403 `auth.operator_disabled` and the console is off.
   */
  operators: OperatorCredentials;
  /**
   * Refused operator credentials (console sign-in, operator bearer) per client address per 60 s
   * (`MOSOO_OPERATOR_AUTH_FAILURES`); past it such a refusal answers 429 `request.rate_limited`.
   */
  operatorAuthFailuresPerMinute: number;
}

/** True for a host name or address that only this machine can reach (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === "::ffff:127.0.0.1";
}

/** The parsed configuration: `dbFile` path, `host`, `port` (0 = any free port), times in ms, `logLevel`. */
export interface ApiConfig {
  dbFile: string;
  /**
   * `MOSOO_DATABASE_URL`: when set, the store is this PostgreSQL database instead of `dbFile`
   * (`storeConfigFrom` in platform/db/store-factory.ts decides). Never logged.
   */
  databaseUrl: string | undefined;
  /** `MOSOO_DATABASE_POOL_SIZE`: connections of the PostgreSQL pool of this process (undefined: the store's default, 10). */
  databasePoolSize: number | undefined;
  /** `MOSOO_DATABASE_QUERY_TIMEOUT_MS`: the PostgreSQL query bound, ms (undefined: the store's default, 5 000). */
  databaseQueryTimeoutMs?: number | undefined;
  host: string;
  port: number;
  heartbeatTtlMs: number;
  /**
   * Send-by deadline of every `execute` claim (ms, see `decideDeadlineMissed` in effect-lifecycle.machine.ts): the Driver never sends
   * `tools/call` later than this after it sent the claim request; a `max_in_flight` window runs
   * until the claim + this + the adapter's `maxInFlightMs`.
   */
  sendDeadlineMs: number;
  /** `MOSOO_REPEAT_GUARD`: per guarded MCP server id, the repeat guard's window (ms; see `guardRepeat` in repeat-guard.policy.ts). Empty: off. */
  repeatGuard: ReadonlyMap<string, number>;
  sweepIntervalMs: number;
  /** On SIGTERM: how long (ms) in-flight requests may finish before every connection is closed (`MOSOO_SHUTDOWN_GRACE_MS`, default 10 000). */
  shutdownGraceMs: number;
  logLevel: z.infer<typeof ApiConfigSchema>["MOSOO_LOG_LEVEL"];
  /** Credentials of the run API, the operators, Driver registration and `/metrics`. */
  auth: AuthConfig;
  /** The opt-in reconciliation of unknown effects (docs/DESIGN.md §4–§6); `enabled: false` is exactly the baseline fence. */
  reconciliation: {
    enabled: boolean;
    /** Path of the JSON bindings file (MCP server id → adapter id + options), if any. */
    bindingsFile: string | undefined;
    lookupTimeoutMs: number;
    concurrency: number;
    backoff: { initialMs: number; maxMs: number; factor: number };
    maxLookups: number;
    /** Group commit of outcomes: at most `maxBatch` per transaction, the first waiting at most `windowMs` (ms) for others (`MOSOO_GROUP_COMMIT_MAX`, `MOSOO_GROUP_COMMIT_WINDOW_MS`). */
    groupCommit: { maxBatch: number; windowMs: number };
    /** Old-generation heap limit (MB) of each process that runs adapter code (`MOSOO_ADAPTER_HEAP_MB`). */
    adapterHeapMb: number;
    /** CPU time (ms) one adapter call may use before its process is killed (`MOSOO_ADAPTER_CPU_MS`). */
    adapterCpuMs: number;
    /** Bound (ms) on loading and building one bound adapter in its process at startup (`MOSOO_ADAPTER_LOAD_TIMEOUT_MS`). */
    adapterLoadTimeoutMs: number;
  };
}

/**
 * Every credential kind has its own secret (docs/DESIGN.md §10): an API key whose secret is an
 * operator token or the enrollment token, or an operator token equal to the enrollment token, would
 * let a holder of one credential act as another kind (a run-API client as an operator, a Driver
 * enrollment as an API key). Names the variables (and credential names), never the secret.
 * @throws ConfigError `config.invalid: <variable>: ... reuses the secret of <other variable> ...`.
 */
function checkSecretsDistinct(
  apiKeys: ApiKey[],
  fromFile: ReadonlySet<string>,
  operatorTokens: ReadonlyArray<{ token: string; source: string }>,
  enrollmentToken: string | undefined,
): void {
  const others: Array<[string, string | undefined]> = [
    ...operatorTokens.map((o): [string, string] => [o.source, o.token]),
    ["MOSOO_DRIVER_ENROLLMENT_TOKEN", enrollmentToken],
  ];
  for (const key of apiKeys) {
    for (const [name, secret] of others) {
      if (secret !== undefined && key.secret === secret) {
        const source = fromFile.has(key.name) ? "MOSOO_API_KEYS_FILE" : "MOSOO_API_KEYS";
        throw new ConfigError(
          `config.invalid: ${source}: key ${key.name} reuses the secret of ${name}; every credential needs its own secret`,
        );
      }
    }
  }
  const operator = operatorTokens.find((o) => o.token === enrollmentToken);
  if (operator !== undefined) {
    throw new ConfigError(
      `config.invalid: MOSOO_DRIVER_ENROLLMENT_TOKEN: reuses the secret of ${operator.source}; every credential needs its own secret`,
    );
  }
}

/** A configuration error: `message` is one line naming the variable (`config.invalid: MOSOO_PORT: ...`). */
export class ConfigError extends Error {
  readonly code = "config.invalid";
}

/**
 * The settings whose value a `config.invalid` line may repeat (`(got "70000")`): numbers and fixed
 * words, never a credential, a URL or a free-form string. Any setting not listed here is named with
 * the reason only, so a secret pasted into the wrong variable is never echoed (docs/DESIGN.md §10).
 */
const ECHOABLE_SETTINGS: ReadonlySet<string> = new Set([
  "MOSOO_PORT",
  "MOSOO_DATABASE_POOL_SIZE",
  "MOSOO_DATABASE_QUERY_TIMEOUT_MS",
  "MOSOO_HEARTBEAT_TTL_MS",
  "MOSOO_SEND_DEADLINE_MS",
  "MOSOO_SWEEP_INTERVAL_MS",
  "MOSOO_SHUTDOWN_GRACE_MS",
  "MOSOO_LOG_LEVEL",
  "MOSOO_EFFECT_RECONCILIATION",
  "MOSOO_LOOKUP_TIMEOUT_MS",
  "MOSOO_RECONCILIATION_CONCURRENCY",
  "MOSOO_LOOKUP_BACKOFF_INITIAL_MS",
  "MOSOO_LOOKUP_BACKOFF_MAX_MS",
  "MOSOO_LOOKUP_BACKOFF_FACTOR",
  "MOSOO_MAX_LOOKUPS",
  "MOSOO_GROUP_COMMIT_MAX",
  "MOSOO_GROUP_COMMIT_WINDOW_MS",
  "MOSOO_ADAPTER_HEAP_MB",
  "MOSOO_ADAPTER_CPU_MS",
  "MOSOO_ADAPTER_LOAD_TIMEOUT_MS",
  "MOSOO_OPERATOR_AUTH_FAILURES",
  "MOSOO_METRICS_PUBLIC",
  "MOSOO_DRIVER_REGISTER_RATE",
  "MOSOO_DRIVER_UNCONNECTED_TTL_MS",
]);

/** The validated `MOSOO_*` settings (`c`) and the non-empty ones as given (`present`, to tell "set" from "defaulted"). */
interface ParsedEnv {
  c: z.infer<typeof ApiConfigSchema>;
  present: Record<string, string | undefined>;
}

/**
 * Step 1: keeps the non-empty `MOSOO_*` variables of `env` and validates them against `ApiConfigSchema`.
 * @throws ConfigError `config.invalid: <variable>: <reason>`, with ` (got "<value>")` only for {@link ECHOABLE_SETTINGS}.
 */
function parseEnv(env: Record<string, string | undefined>): ParsedEnv {
  const present = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith("MOSOO_") && v !== ""));
  const parsed = ApiConfigSchema.safeParse(present);
  if (parsed.success) return { c: parsed.data, present };
  const issue = parsed.error.issues[0];
  const name = String(issue?.path[0] ?? "environment");
  const got = ECHOABLE_SETTINGS.has(name) ? ` (got ${JSON.stringify(env[name])})` : ""; // never echo a possible secret
  throw new ConfigError(`config.invalid: ${name}: ${issue?.message ?? "invalid value"}${got}`);
}

/**
 * Step 2: the rules between settings: the backoff maximum is at least its start; `MOSOO_DB_FILE` and
 * `MOSOO_DATABASE_URL` are not both set; the PostgreSQL-only settings need `MOSOO_DATABASE_URL`.
 * @throws ConfigError naming the setting that breaks a rule.
 */
function checkSettingCombinations({ c, present }: ParsedEnv): void {
  if (c.MOSOO_LOOKUP_BACKOFF_MAX_MS < c.MOSOO_LOOKUP_BACKOFF_INITIAL_MS) {
    throw new ConfigError(
      `config.invalid: MOSOO_LOOKUP_BACKOFF_MAX_MS: must be >= MOSOO_LOOKUP_BACKOFF_INITIAL_MS (${c.MOSOO_LOOKUP_BACKOFF_INITIAL_MS})`,
    );
  }
  if (c.MOSOO_DATABASE_URL !== undefined && present["MOSOO_DB_FILE"] !== undefined) {
    throw new ConfigError(
      "config.invalid: MOSOO_DB_FILE: names a SQLite store while MOSOO_DATABASE_URL names a PostgreSQL one; set only one of them",
    );
  }
  if (c.MOSOO_DATABASE_QUERY_TIMEOUT_MS !== undefined && c.MOSOO_DATABASE_URL === undefined) {
    throw new ConfigError(
      "config.invalid: MOSOO_DATABASE_QUERY_TIMEOUT_MS: only applies to a PostgreSQL store; set MOSOO_DATABASE_URL too, or unset it",
    );
  }
  if (c.MOSOO_DATABASE_POOL_SIZE !== undefined && c.MOSOO_DATABASE_URL === undefined) {
    throw new ConfigError(
      "config.invalid: MOSOO_DATABASE_POOL_SIZE: only applies to a PostgreSQL store; set MOSOO_DATABASE_URL too, or unset it",
    );
  }
}

/**
 * Step 3: the run API's keys, from `MOSOO_API_KEYS` then the file `MOSOO_API_KEYS_FILE` (resolved against `base`);
 * `fileKeyNames` are the names that came from the file.
 * @throws ConfigError on an unparsable entry, an unreadable or invalid file, or a name in both.
 */
function loadApiKeys(c: ParsedEnv["c"], base: string): { apiKeys: ApiKey[]; fileKeyNames: Set<string> } {
  const apiKeys: ApiKey[] = [];
  const fileKeyNames = new Set<string>();
  if (c.MOSOO_API_KEYS !== undefined) {
    const fromEnv = parseApiKeysEnv(c.MOSOO_API_KEYS);
    if ("error" in fromEnv) throw new ConfigError(`config.invalid: MOSOO_API_KEYS: ${fromEnv.error}`);
    apiKeys.push(...fromEnv.keys);
  }
  if (c.MOSOO_API_KEYS_FILE !== undefined) {
    const fromFile = readApiKeysFile(resolve(base, c.MOSOO_API_KEYS_FILE));
    if ("error" in fromFile) throw new ConfigError(`config.invalid: MOSOO_API_KEYS_FILE: ${fromFile.error}`);
    for (const k of fromFile.keys) {
      if (apiKeys.some((e) => e.name === k.name))
        throw new ConfigError(`config.invalid: MOSOO_API_KEYS_FILE: key ${k.name} is also in MOSOO_API_KEYS`);
      apiKeys.push(k);
      fileKeyNames.add(k.name);
    }
  }
  return { apiKeys, fileKeyNames };
}

/**
 * Step 4: the credentials, API keys and operator tokens, checked for a secret shared between kinds,
 * and the fail-closed host rule (docs/DESIGN.md §10): a port other machines can reach is never served without run API keys.
 * @throws ConfigError from {@link loadApiKeys}, `loadOperatorCredentials`, {@link checkSecretsDistinct}, or for `MOSOO_HOST`.
 */
function loadCredentials(c: ParsedEnv["c"], base: string): { apiKeys: ApiKey[]; operators: OperatorCredentials } {
  const { apiKeys, fileKeyNames } = loadApiKeys(c, base);
  const operators = loadOperatorCredentials({
    token: c.MOSOO_OPERATOR_TOKEN,
    tokenName: c.MOSOO_OPERATOR_TOKEN_NAME,
    file: c.MOSOO_OPERATOR_CREDENTIALS_FILE === undefined ? undefined : resolve(base, c.MOSOO_OPERATOR_CREDENTIALS_FILE),
  });
  if ("error" in operators) throw new ConfigError(`config.invalid: ${operators.error}`);
  checkSecretsDistinct(apiKeys, fileKeyNames, operators.tokens, c.MOSOO_DRIVER_ENROLLMENT_TOKEN);
  if (!isLoopbackHost(c.MOSOO_HOST) && apiKeys.length === 0) {
    throw new ConfigError(
      `config.invalid: MOSOO_HOST: ${c.MOSOO_HOST} is not a loopback address; set MOSOO_API_KEYS or MOSOO_API_KEYS_FILE before binding to it`,
    );
  }
  return { apiKeys, operators: operators.credentials };
}

/** Step 5: the reconciliation part of {@link ApiConfig}; the bindings file path is resolved against `base`. */
function reconciliationConfig(c: ParsedEnv["c"], base: string): ApiConfig["reconciliation"] {
  return {
    enabled: c.MOSOO_EFFECT_RECONCILIATION === "on",
    bindingsFile: c.MOSOO_RECONCILIATION_BINDINGS_FILE === undefined ? undefined : resolve(base, c.MOSOO_RECONCILIATION_BINDINGS_FILE),
    lookupTimeoutMs: c.MOSOO_LOOKUP_TIMEOUT_MS,
    concurrency: c.MOSOO_RECONCILIATION_CONCURRENCY,
    backoff: {
      initialMs: c.MOSOO_LOOKUP_BACKOFF_INITIAL_MS,
      maxMs: c.MOSOO_LOOKUP_BACKOFF_MAX_MS,
      factor: c.MOSOO_LOOKUP_BACKOFF_FACTOR,
    },
    maxLookups: c.MOSOO_MAX_LOOKUPS,
    groupCommit: { maxBatch: c.MOSOO_GROUP_COMMIT_MAX, windowMs: c.MOSOO_GROUP_COMMIT_WINDOW_MS },
    adapterHeapMb: c.MOSOO_ADAPTER_HEAP_MB,
    adapterCpuMs: c.MOSOO_ADAPTER_CPU_MS,
    adapterLoadTimeoutMs: c.MOSOO_ADAPTER_LOAD_TIMEOUT_MS,
  };
}

/**
 * Parses the configuration from `env` (usually `process.env`); empty strings count as unset.
 * Relative file paths are resolved against `env.INIT_CWD` (the folder npm was run in) or the cwd.
 * Reads the keys file (`MOSOO_API_KEYS_FILE`) and the operator credentials file (`MOSOO_OPERATOR_CREDENTIALS_FILE`) when set.
 * @throws ConfigError on the first invalid variable (its value is echoed only for the numeric and fixed-word
 *   settings, {@link ECHOABLE_SETTINGS}; never a secret), a keys file that
 *   cannot be read or fails its schema, an empty `MOSOO_API_KEYS` entry, an operator credential that is
 *   weak, malformed or duplicated (name or token; see `loadOperatorCredentials`), a secret shared by two
 *   credential kinds (API key, operator token, enrollment token), a non-loopback `MOSOO_HOST` without any API key,
 *   `MOSOO_DB_FILE` and `MOSOO_DATABASE_URL` both set, or `MOSOO_DATABASE_POOL_SIZE` without `MOSOO_DATABASE_URL`.
 */
export function loadApiConfig(env: Record<string, string | undefined>): ApiConfig {
  const parsed = parseEnv(env);
  const { c } = parsed;
  // Relative paths are relative to where the user ran the command (npm/pnpm scripts run in the
  // package folder and record the caller's folder in INIT_CWD).
  const base = env["INIT_CWD"] ?? process.cwd();
  checkSettingCombinations(parsed);
  const { apiKeys, operators } = loadCredentials(c, base);
  return {
    dbFile: c.MOSOO_DB_FILE === ":memory:" ? c.MOSOO_DB_FILE : resolve(base, c.MOSOO_DB_FILE),
    databaseUrl: c.MOSOO_DATABASE_URL,
    databasePoolSize: c.MOSOO_DATABASE_POOL_SIZE,
    databaseQueryTimeoutMs: c.MOSOO_DATABASE_QUERY_TIMEOUT_MS,
    host: c.MOSOO_HOST,
    port: c.MOSOO_PORT,
    heartbeatTtlMs: c.MOSOO_HEARTBEAT_TTL_MS,
    sendDeadlineMs: c.MOSOO_SEND_DEADLINE_MS,
    repeatGuard: new Map(Object.entries(c.MOSOO_REPEAT_GUARD)),
    sweepIntervalMs: c.MOSOO_SWEEP_INTERVAL_MS,
    shutdownGraceMs: c.MOSOO_SHUTDOWN_GRACE_MS,
    logLevel: c.MOSOO_LOG_LEVEL,
    auth: {
      apiKeys,
      driverEnrollmentToken: c.MOSOO_DRIVER_ENROLLMENT_TOKEN,
      metricsPublic: c.MOSOO_METRICS_PUBLIC === "on",
      driverRegisterPerMinute: c.MOSOO_DRIVER_REGISTER_RATE,
      driverUnconnectedTtlMs: c.MOSOO_DRIVER_UNCONNECTED_TTL_MS,
      operators,
      operatorAuthFailuresPerMinute: c.MOSOO_OPERATOR_AUTH_FAILURES,
    },
    reconciliation: reconciliationConfig(c, base),
  };
}
