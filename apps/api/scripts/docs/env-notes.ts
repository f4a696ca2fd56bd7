/** What each `MOSOO_*` variable means, for docs/configuration.md (type, default and bounds come from the zod contracts themselves). */

/** Meaning of each variable (markdown; links relative to docs/), and an example value where the default is no example. */
export const ENV_NOTES: Readonly<Record<string, { meaning: string; example?: string }>> = {
  MOSOO_DB_FILE: {
    meaning:
      "SQLite file (created with its folder; WAL, foreign keys on); a relative path is taken from the folder `npm start` was run in. Checked before anything else loads: a path under `/proc`, `/sys` or `/dev`, a directory, a FIFO or other non-regular file, a file that is not a SQLite database, or a folder that cannot be created or written stops startup (see below). A store locked by another process answers `503 store.busy` (see [Limits](http-api.md#limits-and-input-rules))",
  },
  MOSOO_DATABASE_URL: {
    meaning:
      "a PostgreSQL URL (`postgres://` or `postgresql://user:password@host:port/database`, options such as `sslmode=verify-full` allowed) for the PostgreSQL store (see [The PostgreSQL store](operating.md#the-postgresql-store-unit-of-work-isolation-retries-pool)). Never echoed in errors or logs (it may carry a password). When set, the API runs on that database (migrated at start, under an advisory lock), and several API instances may share it; see [Running on a managed PostgreSQL](operating.md#running-on-a-managed-postgresql). A server that cannot be reached, refuses the credentials or has no such database stops the start with one line `config.invalid: MOSOO_DATABASE_URL: cannot open the PostgreSQL store: <reason>` (exit 2; the URL and password are redacted); one that accepts the connection but does not answer within 10 s gives the reason `store.connect_timeout: no PostgreSQL connection to <host>:<port>/<database> within 10000 ms`",
  },
  MOSOO_DATABASE_POOL_SIZE: { meaning: "connections of this process's PostgreSQL pool (1–1000); refused without `MOSOO_DATABASE_URL`" },
  MOSOO_HOST: { meaning: "listen address" },
  MOSOO_PORT: { meaning: "listen port (`0` = any free port; the `api.listening` log line shows the URL)" },
  MOSOO_HEARTBEAT_TTL_MS: {
    meaning:
      "a Driver whose last heartbeat is older is finalized by the sweep (not within one TTL of the API's startup, nor of the API last finding its store busy: see [A busy store](http-api.md#limits-and-input-rules))",
  },
  MOSOO_SEND_DEADLINE_MS: {
    meaning:
      "send-by deadline of every `execute` claim (`sendWithinMs`, 100–600000; DESIGN §3 rule 12): the Driver never sends `tools/call` later than this after it sent the claim request, and a `max_in_flight` window runs until claim + this + `maxInFlightMs`. One value for all servers: comfortably above a normal claim round trip on a busy machine, small enough that a fence-less provider is settled soon",
  },
  MOSOO_SWEEP_INTERVAL_MS: { meaning: "how often the maintenance sweep runs" },
  MOSOO_SHUTDOWN_GRACE_MS: { meaning: "on SIGTERM, how long in-flight requests may finish ([OPERATIONS.md](OPERATIONS.md#shutdown))" },
  MOSOO_REPEAT_GUARD: {
    meaning:
      "the repeat guard, opt-in per MCP server: `serverId=windowMs` pairs, comma-separated (`tracker=600000,payments=86400000`; windows 1000–2592000000 ms). A tool call with the same server, tool and arguments as an effect of the same session created less than the window ago that is `succeeded`, `unknown`, compensated or still in flight is refused `409 tool_call.repeat_refused` naming it, unless the request names it in `repeatOfEffectId` (see [TURN-ACCOUNT.md](TURN-ACCOUNT.md))",
  },
  MOSOO_LOG_LEVEL: { meaning: "pino level: `fatal error warn info debug trace silent`" },
  MOSOO_EFFECT_RECONCILIATION: {
    meaning: "`on` enables reconciliation of unknown effects through bound adapters; `off` is exactly the baseline, no lookup ever",
  },
  MOSOO_RECONCILIATION_BINDINGS_FILE: {
    meaning:
      "JSON file binding MCP server ids to adapters (see above); without it no server is bound. It must be a regular file of at most 1 MiB (opened non-blocking: a FIFO or a device is refused, never waited on)",
  },
  MOSOO_LOOKUP_TIMEOUT_MS: {
    meaning: "bound of one adapter lookup (100–20000; an inline lookup runs inside the Driver's claim request, whose timeout is 30 s)",
  },
  MOSOO_RECONCILIATION_CONCURRENCY: { meaning: "lookups at once in finalization repair and the sweep (1–64)" },
  MOSOO_LOOKUP_BACKOFF_INITIAL_MS: { meaning: "delay before the 2nd lookup of a `still_unknown` effect" },
  MOSOO_LOOKUP_BACKOFF_MAX_MS: { meaning: "cap of the delay between lookups (must be ≥ the initial delay)" },
  MOSOO_LOOKUP_BACKOFF_FACTOR: { meaning: "growth of the delay per lookup (1–10)" },
  MOSOO_MAX_LOOKUPS: { meaning: "automatic lookups per effect before an operator must act" },
  MOSOO_GROUP_COMMIT_MAX: {
    meaning:
      "reconciliation outcomes (finalization-repair settlements included) committed together in one transaction at most (1–1024; `1` = each outcome alone). See [Group commit](performance-notes.md#group-commit)",
  },
  MOSOO_GROUP_COMMIT_WINDOW_MS: {
    meaning:
      "how long (ms, 0–1000) the first queued outcome waits for others before its batch commits; `0` = at the end of the current event-loop turn",
  },
  MOSOO_ADAPTER_HEAP_MB: {
    meaning:
      "old-generation heap limit (MB, 16–4096) of each process that runs adapter code; its resident memory is bounded at 2 × this + 64 MB; a process past either is killed (`adapter_crashed`)",
  },
  MOSOO_ADAPTER_CPU_MS: {
    meaning:
      "CPU time (ms, 50–600000) one adapter call may use; past it the adapter's process is killed (`adapter_crashed`, `cpu_limit` in `/metrics`)",
  },
  MOSOO_ADAPTER_LOAD_TIMEOUT_MS: {
    meaning:
      "bound (ms, 1000–120000) on loading and building each bound adapter in its process at startup (module import, `create()`, discovery); an adapter that hangs there is terminated and the API refuses to start: `config.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: bindings.<server>: adapter.load_failed: adapter <module>#<export> did not load and build within <n> ms (MOSOO_ADAPTER_LOAD_TIMEOUT_MS): …`, exit 2",
  },
  MOSOO_OPERATOR_TOKEN: {
    meaning:
      "one operator credential with every scope (16+ characters, 8+ distinct): bearer token of the operator routes and sign-in token of the console at `/console`. A full operator also deletes runs, sessions and Drivers, reads `/metrics`, and registers or re-registers any Driver. Without any operator credential the routes answer `403 auth.operator_disabled` and `/console` answers 404",
  },
  MOSOO_OPERATOR_TOKEN_NAME: {
    meaning: "the name of `MOSOO_OPERATOR_TOKEN`'s credential: the audit actor of its actions (the operator CLI with `--db` reads it too)",
  },
  MOSOO_OPERATOR_CREDENTIALS_FILE: {
    meaning:
      'JSON file of named, scoped operator credentials `{"credentials": [{"name", "token", "scopes": [...]}]}` (see [OPERATORS.md](OPERATORS.md)); duplicates, weak tokens and unknown scopes are refused at start',
  },
  MOSOO_OPERATOR_AUTH_FAILURES: {
    meaning:
      "refused operator tokens (console sign-in and operator bearer) per client address per 60 s; past it `429 request.rate_limited` with `Retry-After`",
  },
  MOSOO_API_KEYS: {
    meaning:
      'the run API\'s keys: comma-separated `name:secret:scope+scope` (see [Credentials](operating.md#credentials)); secrets 16+ characters, never echoed in errors; an empty entry (`",,"`, a stray comma) is refused; no secret may equal the operator or enrollment token (nor those two each other): `config.invalid`, exit 2',
  },
  MOSOO_API_KEYS_FILE: {
    meaning:
      'JSON keys file `{"keys": [{"name", "secret", "scopes": [...]}]}` (validated; unknown fields refused); may be combined with `MOSOO_API_KEYS` (names unique)',
  },
  MOSOO_DRIVER_ENROLLMENT_TOKEN: {
    meaning: "bearer token a new Driver registers with (16+ characters); without it only the operator token registers Drivers",
  },
  MOSOO_METRICS_PUBLIC: {
    meaning: "`on` serves `GET /metrics` without credentials; `off`: an operator credential with `read` or a `metrics:read` key",
  },
  MOSOO_DRIVER_REGISTER_RATE: {
    meaning:
      "per client address per minute, each of two separate budgets: correctly authenticated Driver registrations, and registration attempts with a refused credential (`401`/`403`); past a budget, requests of that kind answer `429 request.rate_limited` with `Retry-After`. Refused attempts never spend the authenticated budget, so an anonymous flood cannot lock Drivers out",
  },
  MOSOO_DRIVER_UNCONNECTED_TTL_MS: {
    meaning: "a Driver registration that never connected (and has no run) is purged by the maintenance sweep this long after it was made",
  },
  MOSOO_API_URL: {
    meaning: "(CLI) default of `npm run effects -- --api-url`; (Driver) its API URL when neither `--api-url` nor `MOSOO_API_URLS` is given",
  },
  MOSOO_DATABASE_QUERY_TIMEOUT_MS: {
    meaning:
      "`statement_timeout` (ms) of every pooled PostgreSQL connection; the client gives up 1 s later on a server that does not answer at all (frozen) and discards the connection; past it a request answers `503 store.busy` (default 5000; see [OPERATIONS.md](OPERATIONS.md))",
  },
  MOSOO_BENCH_QUICK: { meaning: "(bench) `1`: `npm run bench` runs smaller sizes, a smoke test of the harness (figures not comparable)" },
  MOSOO_BENCH_CPU_PROF: {
    meaning: "(bench) `1`: each bench scenario also runs under `node --cpu-prof` and its top self-time functions are printed",
  },
  MOSOO_TEST_DATABASE_URL: {
    meaning:
      "(tests) the PostgreSQL server the tests use; the api tests' global setup starts a throwaway one and sets it; set it yourself to use your own",
  },
  MOSOO_CRASH_MATRIX_FULL: { meaning: "(tests) `1`: the whole crash-point matrix runs on PostgreSQL too (`npm run test:crash-matrix:pg`)" },
  MOSOO_API_URLS: {
    meaning:
      "(Driver) comma-separated API URLs, instances of one deployment, when no `--api-url` is given; see [operating.md](operating.md#the-driver)",
    example: "http://api-1:8787,http://api-2:8787",
  },
};
