/** Hand-written parts of docs/errors.md: who gets each stable error code, what it means and the next step (a test checks every code has one). */
import { STARTUP_NOTES } from "./startup-error-notes.js";

/** One code's entry: who gets it, what it means, and what to do next (markdown; links relative to docs/). */
export interface ErrorNote {
  who: string;
  meaning: string;
  next: string;
}

const RUN_API = "an agent (run API)";
const DRIVER = "a Driver";
const OPERATOR = "an operator (CLI, console, operator routes)";
const ANY = "any caller";
const RUNBOOK = "follow the runbook in [operating.md](operating.md#when-an-effect-is-unknown)";

/** The note of every stable code, keyed by code (those that programs print at startup and in the CLI: startup-error-notes.ts). */
export const ERROR_NOTES: Readonly<Record<string, ErrorNote>> = {
  ...STARTUP_NOTES,
  "request.invalid": {
    who: ANY,
    meaning: "the request's path, query or body breaks its schema (the message names the field)",
    next: "fix the field the message names; the schemas are in [openapi.json](openapi.json)",
  },
  "request.unsupported_media_type": {
    who: ANY,
    meaning: "a body sent without `Content-Type: application/json`",
    next: "send the body as JSON with `Content-Type: application/json`",
  },
  "request.too_large": {
    who: ANY,
    meaning: "the body is larger than the route accepts (4 MiB at most)",
    next: "send less: a tool result is bounded to 1 MiB of output ([http-api.md](http-api.md#limits-and-input-rules))",
  },
  "request.headers_too_large": {
    who: ANY,
    meaning:
      "the request's headers are over 16 KiB in all (Node's HTTP parser refused them before the API read the request); the connection is closed",
    next: "send fewer or shorter headers (a cookie jar or a long token list is the usual cause)",
  },
  "request.timeout": {
    who: ANY,
    meaning: "the request's headers or body did not arrive in time (Node's HTTP server timeouts); the connection is closed",
    next: "retry; a client on a slow link should send the whole request without pausing",
  },
  "request.rate_limited": {
    who: "a Driver registering, or an operator whose tokens were refused",
    meaning: "too many requests of that kind from one client address",
    next: "wait the `Retry-After` seconds; check the credential you send",
  },
  "auth.missing_token": {
    who: ANY,
    meaning: "no `Authorization: Bearer <secret>` header",
    next: "send the credential the route needs ([operating.md](operating.md#credentials))",
  },
  "auth.invalid_token": {
    who: ANY,
    meaning: "the bearer secret is no credential the API knows",
    next: "check the secret against `MOSOO_API_KEYS` / the keys file / the operator credentials of this API",
  },
  "auth.forbidden": {
    who: ANY,
    meaning:
      "a valid credential of the wrong kind (a Driver token on the run API, the enrollment token re-registering an existing id), or a key restricted to other Drivers",
    next: "use the credential kind the route names in [openapi.json](openapi.json) (`x-mosoo-auth`)",
  },
  "auth.scope": {
    who: RUN_API,
    meaning: "the API key lacks the route's scope",
    next: "use a key with the scope (`runs:write`, `runs:read`, `runs:delete`, `metrics:read`), or add it to the key",
  },
  "auth.operator_disabled": {
    who: OPERATOR,
    meaning: "no operator credential is configured on this API",
    next: "set `MOSOO_OPERATOR_TOKEN` or `MOSOO_OPERATOR_CREDENTIALS_FILE` and restart the API",
  },
  "auth.session_required": {
    who: "the operator console",
    meaning: "no console session (not signed in, or it expired)",
    next: "sign in at `/console` with an operator token",
  },
  "auth.csrf_rejected": {
    who: "the operator console",
    meaning: "a console POST without this session's CSRF token, or from another origin",
    next: "reload the console page and retry from it",
  },
  "feature.disabled": {
    who: OPERATOR,
    meaning: "the operator surface is part of reconciliation, which is off",
    next: "set `MOSOO_EFFECT_RECONCILIATION=on` and restart the API",
  },
  "route.not_found": {
    who: ANY,
    meaning: "no route has this method and path",
    next: "check the path against [openapi.json](openapi.json)",
  },
  "store.busy": {
    who: ANY,
    meaning: "the store is locked, unreachable or its pool is exhausted; nothing was written",
    next: "retry after `Retry-After`; if it lasts, see the `http.store_busy` log line's cause ([OPERATIONS.md](OPERATIONS.md))",
  },
  "store.commit_unknown": {
    who: ANY,
    meaning: "the connection was lost during COMMIT: the write may or may not have landed",
    next: "send the same request again (every write is a compare-and-set, so a repeat is safe)",
  },
  internal: {
    who: ANY,
    meaning: "an unexpected error; the API logged it (`http.internal_error`)",
    next: "read the API log line and report it",
  },
  "driver.not_found": {
    who: `${DRIVER} or ${RUN_API}`,
    meaning: "no Driver instance with this id (or not one this credential may reach)",
    next: "use the id from the Driver's `driver.connected` log line",
  },
  "driver.finalized": {
    who: DRIVER,
    meaning: "this Driver instance was finalized (it stopped, or missed heartbeats for `MOSOO_HEARTBEAT_TTL_MS`)",
    next: "restart the Driver: it registers a new instance ([operating.md](operating.md#the-driver))",
  },
  "driver.not_connected": {
    who: DRIVER,
    meaning: "the Driver instance has no open connection",
    next: "connect first (`POST /v1/drivers/connect`); the Driver does this itself on start",
  },
  "driver.connection_superseded": {
    who: DRIVER,
    meaning: "a newer connection of the same instance replaced this one",
    next: "stop the older Driver process; only one process per instance",
  },
  "driver.not_finalized": {
    who: "a Driver or operator re-registering an instance",
    meaning: "the instance is still live, so it cannot be re-registered or deleted",
    next: "stop it and let it finalize (or wait one heartbeat TTL for the sweep), or register a new instance",
  },
  "run.not_found": {
    who: RUN_API,
    meaning: "no run with this id (or one this key may not reach)",
    next: "use the `runId` that `POST /v1/runs` returned",
  },
  "run.not_active": {
    who: RUN_API,
    meaning: "the run has ended (or is ending); nothing was queued",
    next: "create a new run (`POST /v1/runs`)",
  },
  "run.driver_busy": {
    who: RUN_API,
    meaning: "the Driver already holds an active run (one at a time)",
    next: "queue on that run (`details.runId`), or delete it before creating another",
  },
  "session.not_found": {
    who: RUN_API,
    meaning: "no session with this id (or one this key may not reach)",
    next: "use the `sessionId` of your run",
  },
  "command.not_found": {
    who: DRIVER,
    meaning: "no such command of this Driver instance",
    next: "take commands from `GET /v1/drivers/commands/next`",
  },
  "command.terminal": { who: DRIVER, meaning: "the command already ended", next: "nothing: its terminal state stands" },
  "tool_call.conflict": {
    who: RUN_API,
    meaning: "this `toolCallId` (or `requestId`) was already used in the run with other content",
    next: "use a new `toolCallId` for a new call; resend the same body to get the first answer",
  },
  "tool_call.not_found": {
    who: RUN_API,
    meaning: "no tool call with this `toolCallId` in the run",
    next: "use the `toolCallId` you enqueued with",
  },
  "tool_call.repeat_refused": {
    who: RUN_API,
    meaning: "the repeat guard: the same server, tool and arguments as a recent write of the session (named in the details)",
    next: "read the earlier call's result; to send it again on purpose, name it in `repeatOfEffectId` ([TURN-ACCOUNT.md](TURN-ACCOUNT.md))",
  },
  "tool_call.repeat_invalid": {
    who: RUN_API,
    meaning: "`repeatOfEffectId` names no effect of the session with the same server, tool and arguments",
    next: "pass the `effectId` from the `tool_call.repeat_refused` answer",
  },
  "effect.not_found": {
    who: `${DRIVER} or ${OPERATOR}`,
    meaning: "no effect with this id (or not one of this Driver)",
    next: "list effects with `npm run effects -- list`",
  },
  "effect.not_settled": { who: DRIVER, meaning: "the effect has no outcome yet", next: "report the result first (`complete`)" },
  "effect.fence_retained": {
    who: `${RUN_API}, a Driver or operator`,
    meaning: "a delete or re-registration refused: effects of it are executing or unknown (`details.effectIds`)",
    next: `settle each effect first: ${RUNBOOK}`,
  },
  "effect.not_unknown": {
    who: OPERATOR,
    meaning: "only an unknown effect is resolved by hand; this one is settled (or changed meanwhile)",
    next: "`npm run effects -- show <effect>` says what settled it",
  },
  "effect.lookup_in_progress": {
    who: OPERATOR,
    meaning: "a reconciler holds a live lease on this effect and may be asking its adapter right now; a resolve would race the lookup",
    next: "retry after `details.retryAfterMs` (the lookup ends or its lease expires), then `npm run effects -- show <effect>` and resolve only if it is still unknown",
  },
  "effect.task_id_conflict": {
    who: DRIVER,
    meaning: "the effect already holds another MCP task id; a stored task handle never changes, so the report changed nothing",
    next: "none for the Driver (the stored handle stands); if a provider issued two tasks for one call, treat it as a provider bug and check the effect with `npm run effects -- show <effect>`",
  },
  "effect.claim_conflict": {
    who: DRIVER,
    meaning:
      "a claim whose compare-and-set changed nothing found the effect still `intent` on a second, unlocked read (it raced a change of the effect, its command or the Driver's connection); nothing was dispatched",
    next: "nothing: the Driver leaves the command for redelivery and its next claim decides again; if it repeats, check the effect with `npm run effects -- show <effect>`",
  },
  "effect.not_reconcilable": {
    who: OPERATOR,
    meaning: "no lookup possible: the effect is not unknown, or no adapter is bound for its server and tool, or reconciliation is off",
    next: "bind an adapter ([writing-an-adapter.md](writing-an-adapter.md)) and restart the API, or check the provider and `resolve` it by hand",
  },
  "effect.attempt_sent": {
    who: DRIVER,
    meaning: "a missed-deadline report about an attempt the Driver already reported sent",
    next: "nothing: the ledger keeps the effect in doubt, as it must",
  },
  "effect.not_attempt_connection": {
    who: DRIVER,
    meaning: "an evidence report from another connection than the one that made the attempt",
    next: "nothing: only the connection that made the attempt can prove it",
  },
  "effect.not_succeeded": {
    who: OPERATOR,
    meaning: "only a succeeded effect can be compensated",
    next: "check the effect's status with `npm run effects -- show <effect>`",
  },
  "compensation.not_declared": {
    who: OPERATOR,
    meaning: "no bound adapter declares a compensating action for the tool",
    next: "undo it at the provider yourself, then record what you did in the effect's audit",
  },
  "compensation.plan_failed": {
    who: OPERATOR,
    meaning: "the adapter could not plan the compensation (message says why)",
    next: "fix the cause the message names and retry, or undo it at the provider yourself",
  },
  "compensation.exists": {
    who: OPERATOR,
    meaning: "a compensation of this effect is already queued or done",
    next: "`npm run effects -- show <effect>` names it",
  },
  "compensation.driver_unavailable": {
    who: OPERATOR,
    meaning: "the Driver named to run the compensation is not live",
    next: "pass the id of a live Driver whose MCP config has the server",
  },
  "external_effect.unknown": {
    who: `${RUN_API} (a command or run error)`,
    meaning: "a write's fate is unknown: the effect is fenced and never replayed; never retryable (`details.effectIds`)",
    next: RUNBOOK,
  },
  "external_effect.not_executed": {
    who: `${RUN_API} (a command error)`,
    meaning: "an adapter or operator proved the write never happened",
    next: "send it again as a new tool call (new `toolCallId`)",
  },
  "driver.command_driver_terminal": {
    who: `${RUN_API} (a command error)`,
    meaning: "the Driver ended before the command was dispatched; nothing was sent",
    next: "start a Driver and a new run, then enqueue the call again",
  },
  "runtime.turn_interrupted": {
    who: `${RUN_API} (a run error)`,
    meaning: "the run's Driver ended mid-turn and nothing of the turn was written (`details.account`)",
    next: "resend the last request in a new run",
  },
  "runtime.turn_interrupted_after_writes": {
    who: `${RUN_API} (a run error)`,
    meaning: "the Driver ended mid-turn after a write completed; resending would repeat it (`details.account`)",
    next: "continue from the results in `details.account` ([TURN-ACCOUNT.md](TURN-ACCOUNT.md))",
  },
  "mcp.tool_call_failed": {
    who: `${RUN_API} (a command error)`,
    meaning: "the MCP call failed before the provider could run",
    next: "retry as a new tool call",
  },
  "mcp.server_unavailable": {
    who: `${RUN_API} (a command error)`,
    meaning: "the Driver could not use the MCP server; nothing was dispatched",
    next: "check the Driver's MCP config (`--mcp-config`) and that the provider is up",
  },
  "adapter.invalid_declaration": {
    who: "the API at startup (bindings file)",
    meaning: "an adapter's declaration failed its schema",
    next: "fix the adapter; run the conformance kit ([writing-an-adapter.md](writing-an-adapter.md))",
  },
  "adapter.duplicate_id": {
    who: "the API at startup",
    meaning: "two adapters registered with the same id",
    next: "give each adapter its own id",
  },
  "adapter.unknown_id": {
    who: "the API at startup (bindings file)",
    meaning: "`adapterId` names no built-in adapter",
    next: "use `mcp-convention`, or bind a package",
  },
  "adapter.invalid_options": {
    who: "the API at startup (bindings file)",
    meaning: "the adapter refused its `options` (or a convention provider advertises nothing)",
    next: "fix `options` as the message says",
  },
  "registry.closed": {
    who: "adapter host code",
    meaning: "an adapter registered after the host started",
    next: "register every adapter before the host starts",
  },
  "adapter.load_failed": {
    who: "the API at startup (bindings file)",
    meaning: "the adapter's code crashed or hung while it loaded in its process",
    next: "run the adapter's own tests; raise `MOSOO_ADAPTER_LOAD_TIMEOUT_MS` only if it is just slow",
  },
  "adapter.bundle_outside_package": {
    who: "the API at startup (bindings file)",
    meaning: "the adapter's code imports a file outside its package and the dependencies its package.json declares; nothing was bound",
    next: "move the file into the adapter's package, or declare the package it comes from as a dependency (docs/ADAPTER-SANDBOX.md)",
  },
  "adapter.symlink_outside_package": {
    who: "the API at startup (bindings file)",
    meaning: "the adapter's folder holds a link whose target lies outside the package and its dependencies; nothing was bound",
    next: "install the adapter from a registry tarball, or replace the link with a copy of what it points at",
  },
  "adapter.bundle_too_large": {
    who: "the API at startup (bindings file)",
    meaning: "the adapter's code imports a file over 16 MiB, or files over 64 MiB in all, into its bundle; nothing was bound",
    next: "fetch large data at run time from the provider instead of importing it, or drop the large file from the package",
  },
  "adapter.package_not_found": {
    who: "the API at startup (bindings file)",
    meaning: "the `package.module` is not installed for the API",
    next: "`npx --yes pnpm@12.21.0 --filter @mosoo/api add <package>`",
  },
  "adapter.export_missing": {
    who: "the API at startup (bindings file)",
    meaning: "the module has no such export, or it is no adapter factory",
    next: "name the factory's export in `package.export`",
  },
  "binding.tool_not_declared": {
    who: "the API at startup (bindings file)",
    meaning: "a binding's `tools` names a tool the adapter does not declare",
    next: "remove the tool from `tools`, or declare it in the adapter",
  },
  "api.unreachable": {
    who: "the operator CLI and a Driver",
    meaning:
      "no answer from the API at the URL given (refused, reset or timed out); the CLI's line says which, e.g. `fetch failed (connect ECONNREFUSED 127.0.0.1:8787)` or `no answer within 30000 ms`; a Driver retries, on its next URL when given several",
    next: "start the API or check `--api-url` / `MOSOO_API_URL`; the CLI can also read the database directly with `--db`",
  },
  "api.invalid_answer": {
    who: "the operator CLI",
    meaning: "the API answered something that is not the documented JSON (a proxy's page, another service on that port)",
    next: "check that `--api-url` points at the Mosoo API itself (`GET /health`)",
  },
  "api.shutting_down": {
    who: "any client (HTTP 503, `Connection: close`)",
    meaning: "the API received SIGTERM and is draining: in-flight requests finish, new ones are refused",
    next: "retry on another instance, or after the API restarts (`GET /ready` answers 200 again)",
  },
};

/** Codes outside the code lists about reaching the API: the clients' own (CLI, Driver) and the drain's 503. */
export const CLIENT_CODES = ["api.unreachable", "api.invalid_answer", "api.shutting_down"] as const;
