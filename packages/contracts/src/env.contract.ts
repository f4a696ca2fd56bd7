// The `MOSOO_*` environment variables of every Mosoo program, one schema per program, and the check for unknown names.
import { z } from "zod";
import { strictDecimalString, strictIntegerString } from "./input-safety.contract.js";

/**
 * The `MOSOO_*` environment variables of every Mosoo program, one zod schema per program. They live
 * here (not in each app) so that every program knows every other program's names: the API, the
 * Driver and the CLI each warn at startup about a `MOSOO_*` name that no schema below declares (a
 * typo such as `MOSOO_PORTT` would otherwise be ignored silently), without warning about a name
 * that belongs to a sibling program started from the same shell. Adding a variable to a schema is
 * all it takes for it to be known.
 *
 * Integers are parsed strictly ({@link strictIntegerString}): `MOSOO_PORT=0x50` is refused, not port 80.
 */
/**
 * A bearer secret set in the environment (`MOSOO_OPERATOR_TOKEN`, `MOSOO_DRIVER_ENROLLMENT_TOKEN`):
 * whitespace around it is ignored (a trailing newline from a secrets file), then at least 16
 * characters, none of them whitespace (`\s`, Unicode spaces included) or a control character
 * (`\p{Cc}`). The API reads a credential as one `\S+` token after `Bearer`,
 * so a secret with such a character inside could never authenticate: it is refused at startup
 * (`config.invalid: <variable>: ...`; the secret itself is never echoed).
 */
const bearerSecretString = () =>
  z
    .string()
    .trim()
    .min(16, "must be at least 16 characters (spaces do not count)")
    .refine((s) => !/[\s\p{Cc}]/u.test(s), "may not contain whitespace or control characters (a bearer credential is one token)");

/** The `sslmode` values node-postgres (pg-connection-string 2.x) understands; any other is refused rather than ignored. */
const PG_SSL_MODES = ["disable", "prefer", "require", "verify-ca", "verify-full", "no-verify"] as const;

/**
 * A PostgreSQL connection URL (`postgres://` or `postgresql://user:password@host:port/database`,
 * query options such as `sslmode` allowed) that `URL` can parse, with a port in 1–65535 and an
 * `sslmode` (when given) of {@link PG_SSL_MODES}. Refused otherwise at startup with
 * `config.invalid: MOSOO_DATABASE_URL: ...` naming the part that is wrong; the URL itself is never
 * echoed (it may carry a password).
 */
const postgresUrlString = () =>
  z
    .string()
    .trim()
    .superRefine((s, ctx) => {
      const scheme = /^postgres(ql)?:\/\/([^/?#]*)/.exec(s);
      if (!scheme) return void ctx.addIssue({ code: "custom", message: "must be a postgres:// or postgresql:// URL" });
      const port = /:(\d+)$/.exec(scheme[2]!.replace(/^.*@/, ""))?.[1];
      if (port !== undefined && (Number(port) < 1 || Number(port) > 65_535)) {
        return void ctx.addIssue({ code: "custom", message: `the port must be 1-65535 (got ${port})` });
      }
      if (!URL.canParse(s)) return void ctx.addIssue({ code: "custom", message: "must be a postgres:// or postgresql:// URL" });
      const sslmode = new URL(s).searchParams.get("sslmode");
      if (sslmode !== null && !(PG_SSL_MODES as readonly string[]).includes(sslmode)) {
        ctx.addIssue({
          code: "custom",
          message: `sslmode must be one of ${PG_SSL_MODES.join(", ")} (got ${JSON.stringify(sslmode.slice(0, 40))})`,
        });
      }
    });

/** Bounds of a repeat guard window (ms): 1 s to 30 days. */
const REPEAT_GUARD_WINDOW_MS = { min: 1_000, max: 30 * 86_400_000 } as const;

/**
 * `MOSOO_REPEAT_GUARD`: the MCP servers whose tool calls the repeat guard watches (see `guardRepeat` in repeat-guard.policy.ts),
 * each with its window in ms: `serverId=windowMs` pairs, comma-separated (`tracker=600000,payments=86400000`).
 * Unset or empty: off for every server. A server id that is not one (1–64 of A–Z a–z 0–9 _ . -), a window
 * that is not a strict integer within 1 000–2 592 000 000 ms, or a server named twice is refused.
 */
function repeatGuardString() {
  return z.string().transform((text, ctx) => {
    const windows: Record<string, number> = Object.create(null) as Record<string, number>;
    if (text.trim() === "") return windows;
    for (const part of text.split(",").map((p) => p.trim())) {
      if (part === "") {
        ctx.addIssue({ code: "custom", message: "an empty entry (a stray comma) is not allowed" });
        return z.NEVER;
      }
      const m = /^([A-Za-z0-9_.-]{1,64})=(\d{1,10})$/.exec(part);
      if (m && ["__proto__", "constructor", "prototype"].includes(m[1]!)) {
        ctx.addIssue({ code: "custom", message: `the server id ${JSON.stringify(m[1])} is not allowed` });
        return z.NEVER;
      }
      const windowMs = m ? Number(m[2]) : NaN;
      if (!m || windowMs < REPEAT_GUARD_WINDOW_MS.min || windowMs > REPEAT_GUARD_WINDOW_MS.max) {
        ctx.addIssue({
          code: "custom",
          message: `each entry is serverId=windowMs with a window of ${REPEAT_GUARD_WINDOW_MS.min}-${REPEAT_GUARD_WINDOW_MS.max} ms (got ${JSON.stringify(part.slice(0, 80))})`,
        });
        return z.NEVER;
      }
      if (Object.hasOwn(windows, m[1]!)) {
        ctx.addIssue({ code: "custom", message: `server ${m[1]} is named twice` });
        return z.NEVER;
      }
      windows[m[1]!] = windowMs;
    }
    return windows;
  });
}

export const ApiEnvSchema = z.object({
  MOSOO_DB_FILE: z.string().min(1).default("./var/mosoo.db"),
  // Set, the store is this PostgreSQL database (any number of API instances) instead of the SQLite file.
  MOSOO_DATABASE_URL: postgresUrlString().optional(),
  // Connections of this instance's PostgreSQL pool (default 10; sizing rule in the API's postgres-store.ts and README).
  MOSOO_DATABASE_POOL_SIZE: strictIntegerString(1, 1_000).optional(),
  // The PostgreSQL query bound in ms (statement_timeout; the client gives up 1 s later): past it a request answers 503 store.busy (default 5000).
  MOSOO_DATABASE_QUERY_TIMEOUT_MS: strictIntegerString(100, 600_000).optional(),
  MOSOO_HOST: z.string().min(1).default("127.0.0.1"),
  MOSOO_PORT: strictIntegerString(0, 65535).default(8787),
  MOSOO_HEARTBEAT_TTL_MS: strictIntegerString(500, 3_600_000).default(15_000),
  // See `sendDeadlinePassed` in effect-claim.contract.ts: the Driver sends tools/call at most this long after it sent the claim request.
  MOSOO_SEND_DEADLINE_MS: strictIntegerString(100, 600_000).default(10_000),
  MOSOO_SWEEP_INTERVAL_MS: strictIntegerString(100, 3_600_000).default(2_000),
  // SIGTERM drain: in-flight requests may finish this long (ms) before every connection is closed.
  MOSOO_SHUTDOWN_GRACE_MS: strictIntegerString(0, 600_000).default(10_000),
  // See `guardRepeat` in repeat-guard.policy.ts: opt-in per MCP server, off by default (serverId=windowMs,...).
  MOSOO_REPEAT_GUARD: repeatGuardString().default({}),
  MOSOO_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  MOSOO_EFFECT_RECONCILIATION: z.enum(["off", "on"]).default("off"),
  MOSOO_RECONCILIATION_BINDINGS_FILE: z.string().min(1).optional(),
  // Below the Driver's 30 s request timeout: an inline lookup runs inside the Driver's claim request.
  MOSOO_LOOKUP_TIMEOUT_MS: strictIntegerString(100, 20_000).default(5_000),
  MOSOO_RECONCILIATION_CONCURRENCY: strictIntegerString(1, 64).default(4),
  MOSOO_LOOKUP_BACKOFF_INITIAL_MS: strictIntegerString(10, 86_400_000).default(1_000),
  MOSOO_LOOKUP_BACKOFF_MAX_MS: strictIntegerString(10, 86_400_000).default(300_000),
  MOSOO_LOOKUP_BACKOFF_FACTOR: strictDecimalString(1, 10).default(2),
  MOSOO_MAX_LOOKUPS: strictIntegerString(1, 1_000).default(8),
  // Group commit of reconciliation outcomes (see `ReconciliationOutcomeWriter.commit` in reconciliation-outcome-writer.service.ts): outcomes per transaction, and the wait (ms) for more.
  MOSOO_GROUP_COMMIT_MAX: strictIntegerString(1, 1_024).default(64),
  MOSOO_GROUP_COMMIT_WINDOW_MS: strictIntegerString(0, 1_000).default(2),
  // The old-generation heap limit of each adapter process (adapters are untrusted code: `createIsolatedAdapterHost` in the API's adapter-sandbox.host.ts).
  MOSOO_ADAPTER_HEAP_MB: strictIntegerString(16, 4_096).default(64),
  // CPU time (ms) one adapter call may use before its process is killed.
  MOSOO_ADAPTER_CPU_MS: strictIntegerString(50, 600_000).default(2_000),
  // Bound on loading and building one bound adapter in its process at startup (module import + create()).
  MOSOO_ADAPTER_LOAD_TIMEOUT_MS: strictIntegerString(1_000, 120_000).default(15_000),
  // Operator credentials: the token is one credential with every scope; the file holds named,
  // scoped ones (see the API's operator-credentials.contract.ts); both may be set.
  MOSOO_OPERATOR_TOKEN: bearerSecretString().optional(),
  MOSOO_OPERATOR_TOKEN_NAME: z.string().min(1).default("operator"),
  MOSOO_OPERATOR_CREDENTIALS_FILE: z.string().min(1).optional(),
  // Refused operator credentials (console sign-in, operator bearer) per client address per minute; past it, 429.
  MOSOO_OPERATOR_AUTH_FAILURES: strictIntegerString(1, 100_000).default(10),
  // Credentials of the run API and of Driver registration; see the API's api-keys.contract.ts.
  MOSOO_API_KEYS: z.string().optional(),
  MOSOO_API_KEYS_FILE: z.string().min(1).optional(),
  MOSOO_DRIVER_ENROLLMENT_TOKEN: bearerSecretString().optional(),
  MOSOO_METRICS_PUBLIC: z.enum(["off", "on"]).default("off"),
  MOSOO_DRIVER_REGISTER_RATE: strictIntegerString(1, 100_000).default(30),
  MOSOO_DRIVER_UNCONNECTED_TTL_MS: strictIntegerString(1_000, 30 * 86_400_000).default(3_600_000),
});

/**
 * Variables the operator CLI (`npm run effects`) reads besides the API's (it shares the API's for
 * `--db`): `MOSOO_API_URL` (default of `--api-url`); `MOSOO_OPERATOR_TOKEN` (default of `--token`).
 */
export const CliEnvSchema = z.object({
  MOSOO_API_URL: z.string().min(1).optional(),
  MOSOO_OPERATOR_TOKEN: z.string().optional(),
});

/**
 * Variables the Driver reads (otherwise it is configured by command-line options):
 * `MOSOO_DRIVER_ENROLLMENT_TOKEN`, the token it registers with; `MOSOO_API_URLS` (comma-separated) and
 * `MOSOO_API_URL`, its API URLs when no `--api-url` is given (the Driver validates them itself).
 */
export const DriverEnvSchema = z.object({
  MOSOO_DRIVER_ENROLLMENT_TOKEN: z.string().optional(),
  MOSOO_API_URLS: z.string().optional(),
  MOSOO_API_URL: z.string().optional(),
});

/**
 * Variables of the repository's own scripts: `MOSOO_BENCH_QUICK=1`, `MOSOO_BENCH_CPU_PROF=1` (`npm run bench`);
 * `MOSOO_TEST_DATABASE_URL`, the PostgreSQL server the tests use (set by the api tests' globalSetup, which
 * starts a throwaway one, and inherited by every process a test spawns; set it yourself to use your own);
 * `MOSOO_CRASH_MATRIX_FULL=1`, the whole crash-point matrix on PostgreSQL too (`npm run test:crash-matrix:pg`).
 */
export const ToolingEnvSchema = z.object({
  MOSOO_BENCH_QUICK: z.string().optional(),
  MOSOO_BENCH_CPU_PROF: z.string().optional(),
  MOSOO_TEST_DATABASE_URL: z.string().optional(),
  MOSOO_CRASH_MATRIX_FULL: z.string().optional(),
});

/** Every `MOSOO_*` name some Mosoo program reads: the keys of the schemas above. */
export const KNOWN_MOSOO_ENV_NAMES: ReadonlySet<string> = new Set(
  [ApiEnvSchema, CliEnvSchema, DriverEnvSchema, ToolingEnvSchema].flatMap((schema) => Object.keys(schema.shape)),
);

/**
 * The `MOSOO_*` names set in `env` that no Mosoo program reads (sorted), e.g. a misspelt
 * `MOSOO_PORTT`. Programs print them on one warning line at startup and carry on.
 */
export function unknownMosooEnvNames(env: Record<string, string | undefined>): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith("MOSOO_") && !KNOWN_MOSOO_ENV_NAMES.has(name))
    .sort();
}
