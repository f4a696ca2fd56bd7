// The Driver's configuration shapes: API URLs, the MCP servers config file, the state file and the resolved options.
import { DriverTokenSchema, FORBIDDEN_JSON_KEYS, KeyPlacementSchema, ServerIdSchema, UlidSchema } from "@mosoo/contracts";
import { z } from "zod";

/**
 * Refuses the names JavaScript objects treat specially (`__proto__`, `constructor`, `prototype`;
 * contracts' `FORBIDDEN_JSON_KEYS`) as a key of a config record. `JSON.parse` keeps `"__proto__"` as
 * an own key, but copying it into the parsed record sets the prototype: the entry would vanish
 * without a word; `constructor`/`prototype` would be found by a plain lookup on any object.
 */
const notReservedKey = <T extends z.ZodType<string>>(schema: T) =>
  schema.refine(
    (k) => !FORBIDDEN_JSON_KEYS.has(k),
    "__proto__, constructor and prototype are reserved by JavaScript objects and cannot name a config entry",
  );

/** A header or environment variable name: non-empty, not a {@link notReservedKey} name. */
const RecordKeySchema = notReservedKey(z.string().min(1));

/** An `http:` or `https:` URL. */
const HttpUrlSchema = z.url({ protocol: /^https?$/, error: "expected an http:// or https:// URL" });

/** Most API URLs one Driver accepts (instances of one deployment; a bound, not a tuning knob). */
export const MAX_API_URLS = 16;

/**
 * A base URL of the Mosoo API: an `http://` or `https://` URL without credentials (`user:pass@`:
 * `fetch` refuses such a URL, and the Driver authenticates with its bearer token), query or fragment
 * (paths are appended to it). Normalized by WHATWG URL parsing (host lower-cased, default port
 * dropped) without trailing `/`, so `HTTP://Api:80/` and `http://api` are the same URL. A path prefix
 * is kept (`http://gw/mosoo`).
 */
export const ApiUrlSchema = HttpUrlSchema.refine(
  (url) => !URL.canParse(url) || (new URL(url).username === "" && new URL(url).password === ""),
  "may not contain credentials (user:password@); the Driver authenticates with its own token",
)
  .refine(
    (url) => !URL.canParse(url) || (new URL(url).search === "" && new URL(url).hash === ""),
    "may not have a query (?…) or fragment (#…): it is a base URL the request paths are appended to",
  )
  .transform(normalizeApiUrl);

/**
 * The canonical form of an API base URL (see {@link ApiUrlSchema}): WHATWG-serialized, without
 * trailing `/`. A string that does not parse as a URL is returned without its trailing slashes.
 */
export function normalizeApiUrl(url: string): string {
  return (URL.canParse(url) ? new URL(url).href : url).replace(/\/+$/, "");
}

/**
 * The Driver's API URLs, in order of preference: every entry an {@link ApiUrlSchema}, 1 to
 * {@link MAX_API_URLS} of them, none listed twice (after normalization). They must all be instances
 * of ONE API deployment sharing one database: the Driver keeps its instance,
 * token and connection when it moves from one to the next (sticky until failure; see the Driver's
 * README, "Several API URLs").
 */
export const ApiUrlListSchema = z
  .array(ApiUrlSchema)
  .min(1, "at least one API URL is needed")
  .max(MAX_API_URLS, `at most ${MAX_API_URLS} API URLs`)
  .superRefine((urls, ctx) => {
    urls.forEach((url, i) => {
      if (urls.indexOf(url) !== i) ctx.addIssue({ code: "custom", path: [i], message: `the same URL as entry ${urls.indexOf(url) + 1}` });
    });
  });

/**
 * An MCP server reached over Streamable HTTP, e.g. `{"type": "http", "url": "http://127.0.0.1:3917/mcp"}`.
 * `headers` (optional) are sent with every request to the server (for example an `Authorization` header);
 * a header named `__proto__`, `constructor` or `prototype` is refused.
 * `idempotencyKey` (optional, every server type): where the server wants the idempotency key, see
 * `KeyPlacementSchema`: `{"in": "meta", "name": "io.mosoo/idempotency-key"}` (the default), another
 * `_meta` name, or `{"in": "argument", "name": "idempotency_key"}`. The same key goes there on every attempt.
 */
export const McpHttpServerConfigSchema = z.strictObject({
  type: z.literal("http"),
  url: HttpUrlSchema,
  headers: z.record(RecordKeySchema, z.string()).optional(),
  idempotencyKey: KeyPlacementSchema.optional(),
});
/** See {@link McpHttpServerConfigSchema}. */
export type McpHttpServerConfig = z.infer<typeof McpHttpServerConfigSchema>;

/**
 * An MCP server the Driver starts as a child process and talks to over stdio, e.g.
 * `{"type": "stdio", "command": "node", "args": ["server.js"], "env": {"KEY": "v"}}`.
 * `env` is added to the SDK's safe default environment (PATH, HOME, …); `cwd` defaults to the Driver's.
 */
export const McpStdioServerConfigSchema = z.strictObject({
  type: z.literal("stdio"),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(RecordKeySchema, z.string()).optional(),
  cwd: z.string().min(1).optional(),
  idempotencyKey: KeyPlacementSchema.optional(),
});
/** See {@link McpStdioServerConfigSchema}. */
export type McpStdioServerConfig = z.infer<typeof McpStdioServerConfigSchema>;

/** One configured MCP server, discriminated by `type` (`http` | `stdio`). */
export const McpServerConfigSchema = z.discriminatedUnion("type", [McpHttpServerConfigSchema, McpStdioServerConfigSchema]);
/** See {@link McpServerConfigSchema}. */
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

/**
 * The Driver's MCP config file (`--mcp-config <file>`): `{"servers": {"<serverId>": McpServerConfig}}`.
 * Server ids follow the contracts' `ServerIdSchema` (1–64 chars of `[A-Za-z0-9_.-]`) and must match
 * the `serverId` of the `mcp.execute` commands the API sends, and are not `__proto__`, `constructor`
 * or `prototype` (nor are `headers`/`env` names): such an entry would be dropped or mistaken for an
 * object's own machinery. Unknown keys are refused (typo guard).
 */
export const McpConfigSchema = z.strictObject({
  servers: z.record(notReservedKey(ServerIdSchema), McpServerConfigSchema),
});
/** See {@link McpConfigSchema}. */
export type McpConfig = z.infer<typeof McpConfigSchema>;

/**
 * The Driver's state file (`--state-file <path>`): the identity the API issued on `register`.
 * Written atomically with mode 0600 because `driverToken` is a bearer secret. `apiUrl` is the API URL
 * the Driver registered with (after a fail-over at registration, not the first configured one); on a restart the file is accepted when `apiUrl` is one of
 * the configured API URLs (compared by {@link normalizeApiUrl}), since all of them reach one database.
 */
export const DriverStateSchema = z.strictObject({
  apiUrl: HttpUrlSchema,
  driverInstanceId: UlidSchema,
  driverToken: DriverTokenSchema,
});
/** See {@link DriverStateSchema}. */
export type DriverState = z.infer<typeof DriverStateSchema>;

/** pino log levels accepted by `--log-level`. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Default `--tool-timeout-ms`: how long one MCP `tools/call` may take, in ms. */
export const DEFAULT_TOOL_TIMEOUT_MS = 60_000;
/** Default long-poll wait of `GET nextCommand`, in ms (the API caps it at 30 000). */
export const DEFAULT_POLL_WAIT_MS = 25_000;

/** Default `--api-retry-budget-ms`: how long one idempotent API request is retried, in ms (see `DEFAULT_API_RETRY`). */
export const DEFAULT_API_RETRY_BUDGET_MS = 30_000;
/** Default `--api-retry-max-delay-ms`: the longest delay between two retries of an API request, in ms (before jitter caps it). */
export const DEFAULT_API_RETRY_MAX_DELAY_MS = 5_000;
/** Largest accepted retry or report budget, ms (one day). */
const MAX_BUDGET_MS = 24 * 60 * 60 * 1000;

/**
 * The Driver's resolved options, after CLI parsing (see `src/main.ts`).
 * - `apiUrls`: base URLs of the API instances, in order of preference ({@link ApiUrlListSchema}),
 *   e.g. `["http://127.0.0.1:8787"]`;
 * - `name`: Driver instance name sent on `register` (1–100 chars);
 * - `stateFile`: path of the state file; `mcpConfigFile`: path of the MCP config file;
 * - `toolTimeoutMs`: per `tools/call` timeout in ms; `pollWaitMs`: long-poll wait in ms (0–30 000);
 * - `finalizeOnExit`: on SIGTERM/SIGINT, `POST finalize` (the instance is gone for good);
 * - `enrollmentToken`: the API's `MOSOO_DRIVER_ENROLLMENT_TOKEN` (from the Driver's environment, same
 *   name), sent on `register` only; at least 16 characters;
 * - `apiRetryBudgetMs` (ms, default {@link DEFAULT_API_RETRY_BUDGET_MS}) and `apiRetryMaxDelayMs` (ms,
 *   default {@link DEFAULT_API_RETRY_MAX_DELAY_MS}): the one retry policy of every idempotent API
 *   request (exponential backoff from 250 ms, randomized);
 * - `resultReportBudgetMs` (ms, default `DEFAULT_RESULT_REPORT_BUDGET_MS` = 180 000, at least 1 000): how long a
 *   provider's result (held in the outbox next to the state file) is reported to an API that cannot
 *   take it; past it the result is given up (an error line naming the effect) and the effect is left
 *   to the fence (see `reportProviderResult` in result-report.service.ts). Optional in the type: absent means the default.
 */
export const DriverOptionsSchema = z.strictObject({
  apiUrls: ApiUrlListSchema,
  name: z.string().min(1).max(100),
  stateFile: z.string().min(1),
  mcpConfigFile: z.string().min(1),
  toolTimeoutMs: z
    .number()
    .int()
    .positive()
    .max(24 * 60 * 60 * 1000),
  pollWaitMs: z.number().int().min(0).max(30_000).default(DEFAULT_POLL_WAIT_MS),
  logLevel: z.enum(LOG_LEVELS).default("info"),
  finalizeOnExit: z.boolean().default(false),
  enrollmentToken: z.string().trim().min(16, "MOSOO_DRIVER_ENROLLMENT_TOKEN must be at least 16 characters").optional(),
  apiRetryBudgetMs: z.number().int().min(0).max(MAX_BUDGET_MS).optional(),
  apiRetryMaxDelayMs: z.number().int().min(1).max(MAX_BUDGET_MS).optional(),
  resultReportBudgetMs: z.number().int().min(1_000).max(MAX_BUDGET_MS).optional(),
});
/** See {@link DriverOptionsSchema}. */
export type DriverOptions = z.infer<typeof DriverOptionsSchema>;
