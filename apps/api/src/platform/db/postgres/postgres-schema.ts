// The PostgreSQL schema of the control plane (drizzle-orm), the twin of sqlite/sqlite-schema.ts; drizzle-kit generates apps/api/drizzle-pg from it.
import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, pgTable, primaryKey, text, uniqueIndex, type AnyPgColumn } from "drizzle-orm/pg-core";
import {
  ATTEMPT_STATUSES,
  COMMAND_STATUSES,
  DRIVER_INSTANCE_STATUSES,
  EFFECT_RESOLUTIONS,
  EFFECT_STATUSES,
  OPERATOR_ATTENTION_REASONS,
  RECONCILIATION_OUTCOMES,
  RECONCILIATION_TRIGGERS,
  RUN_EVENT_TYPES,
  RUN_STATUSES,
  TRACEPARENT_LENGTH,
  MAX_TRACESTATE_LENGTH,
} from "@mosoo/contracts/statuses";
import { oneOf, ms } from "./postgres-schema.columns.js";

export * from "./postgres-schema.operator-audit.js";
export * from "./postgres-schema.coordination.js";

/**
 * The PostgreSQL twin of the control-plane schema `../sqlite/sqlite-schema.ts`: the same
 * tables, column names, TypeScript types, CHECK constraints (same names), foreign keys, indexes and
 * partial unique indexes, so the repositories (written against `../sqlite/sqlite-schema.ts`) run unchanged on
 * either dialect. Dialect translations, each checked by `apps/api/tests/pg-schema-parity.test.ts`:
 * - `*_ms` columns are `bigint` (64-bit) read as `number`; counters, `seq`, `version` stay `integer`.
 * - `run_events.terminal` is a real `boolean` (SQLite stores 0/1 behind `mode: "boolean"`), so its
 *   partial index says `terminal = true` where SQLite says `terminal = 1`.
 * - SQLite's null-safe `IS NOT 'x'` is PostgreSQL's `IS DISTINCT FROM 'x'`.
 * - JSON columns stay `text`, so their bytes round-trip exactly as on SQLite.
 * The fence trigger (an `executing` or `unknown` effect is never deleted, see `refuseIfFenced` in run.service.ts) is a
 * plpgsql function in a custom migration of `apps/api/drizzle-pg/`, not part of this file.
 */
/**
 * A session: the runs an agent groups together. `created_by_key` is the name of the API key that
 * created it (the run API's `POST /v1/runs` without a `sessionId`); a key restricted to some Driver
 * instances reaches only the sessions it created (see `reachesSession` in run-access.ts). NULL for sessions created
 * before the column existed: no restricted key reaches those (fail closed); unrestricted keys and
 * operators still do.
 */
export const sessions = pgTable("sessions", {
  id: text("id").primaryKey(),
  createdAtMs: ms("created_at_ms").notNull(),
  createdByKey: text("created_by_key"),
});

/** A Driver instance. Only the sha-256 of its bearer token is stored (`token_hash`). */
export const driverInstances = pgTable(
  "driver_instances",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    status: text("status", { enum: DRIVER_INSTANCE_STATUSES }).notNull(),
    tokenHash: text("token_hash").notNull(),
    connectionId: text("connection_id"),
    lastHeartbeatAtMs: ms("last_heartbeat_at_ms"),
    registeredAtMs: ms("registered_at_ms").notNull(),
    finalizedAtMs: ms("finalized_at_ms"),
    /** The `seq` of the instance's latest command (0: none yet); bumped with `UPDATE … RETURNING` (sqlite-schema.ts, DESIGN §11). */
    lastCommandSeq: integer("last_command_seq").notNull().default(0),
  },
  (t) => [
    check("driver_instances_status_check", oneOf("status", DRIVER_INSTANCE_STATUSES)),
    check("driver_instances_finalized_check", sql`(status = 'finalized') = (finalized_at_ms IS NOT NULL)`),
    // The maintenance sweep's expired and never-connected instances (`status = ? AND last_heartbeat_at_ms …`):
    // a range per status, so finalized instances that once connected are never read by an idle pass.
    index("driver_instances_status_heartbeat_idx").on(t.status, t.lastHeartbeatAtMs),
  ],
);

/** A session run, leased to one Driver instance; at most one `active` run per instance. */
export const sessionRuns = pgTable(
  "session_runs",
  {
    id: text("id").primaryKey(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    driverInstanceId: text("driver_instance_id")
      .notNull()
      .references(() => driverInstances.id, { onDelete: "cascade" }),
    status: text("status", { enum: RUN_STATUSES }).notNull(),
    errorJson: text("error_json"),
    createdAtMs: ms("created_at_ms").notNull(),
    updatedAtMs: ms("updated_at_ms").notNull(),
    /** The `seq` of the run's latest event (0: none yet); bumped with `UPDATE … RETURNING` (SQLite does not keep it: sqlite-schema.ts). */
    lastEventSeq: integer("last_event_seq").notNull().default(0),
  },
  (t) => [
    check("session_runs_status_check", oneOf("status", RUN_STATUSES)),
    check("session_runs_error_check", sql`status <> 'failed' OR error_json IS NOT NULL`),
    uniqueIndex("session_runs_one_active_per_driver")
      .on(t.driverInstanceId)
      .where(sql`status = 'active'`),
    index("session_runs_driver_status_idx").on(t.driverInstanceId, t.status),
    index("session_runs_session_idx").on(t.sessionId),
  ],
);

/**
 * A command for one Driver instance, ordered by a per-instance `seq`. `trace_parent` / `trace_state`:
 * the W3C trace context of the request that enqueued it (null when it was not traced), delivered with
 * it to the Driver; a version-00 `traceparent` is 55 characters, a `tracestate` at most 512 and only
 * beside a `traceparent` (`TraceContextSchema` of `@mosoo/contracts`).
 */
export const driverCommands = pgTable(
  "driver_commands",
  {
    id: text("id").primaryKey(),
    driverInstanceId: text("driver_instance_id")
      .notNull()
      .references(() => driverInstances.id, { onDelete: "cascade" }),
    runId: text("run_id")
      .notNull()
      .references(() => sessionRuns.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    type: text("type", { enum: ["mcp.execute"] }).notNull(),
    status: text("status", { enum: COMMAND_STATUSES }).notNull(),
    payloadJson: text("payload_json").notNull(),
    resultJson: text("result_json"),
    errorJson: text("error_json"),
    deliveredConnectionId: text("delivered_connection_id"),
    deliveryCount: integer("delivery_count").notNull().default(0),
    createdAtMs: ms("created_at_ms").notNull(),
    updatedAtMs: ms("updated_at_ms").notNull(),
    terminalAtMs: ms("terminal_at_ms"),
    traceParent: text("trace_parent"),
    traceState: text("trace_state"),
  },
  (t) => [
    check("driver_commands_status_check", oneOf("status", COMMAND_STATUSES)),
    check("driver_commands_trace_parent_check", sql`trace_parent IS NULL OR length(trace_parent) = ${sql.raw(String(TRACEPARENT_LENGTH))}`),
    check(
      "driver_commands_trace_state_check",
      sql`trace_state IS NULL OR (trace_parent IS NOT NULL AND length(trace_state) <= ${sql.raw(String(MAX_TRACESTATE_LENGTH))})`,
    ),
    check("driver_commands_type_check", sql`type IN ('mcp.execute')`),
    check(
      "driver_commands_terminal_check",
      sql`(status IN ('completed', 'failed', 'expired', 'cancelled')) = (terminal_at_ms IS NOT NULL)`,
    ),
    check("driver_commands_result_check", sql`status <> 'completed' OR result_json IS NOT NULL`),
    check("driver_commands_error_check", sql`status <> 'failed' OR error_json IS NOT NULL`),
    uniqueIndex("driver_commands_instance_seq").on(t.driverInstanceId, t.seq),
    index("driver_commands_run_idx").on(t.runId),
    // The open commands of a Driver instance in `seq` order (delivery, long-poll, finalization): partial, so
    // a long-lived Driver's finished history is not in it and each delivery reads only what is still open.
    // `terminal_at_ms IS NULL` is "not terminal" (driver_commands_terminal_check) and changes only at the
    // terminal update, so delivery and acceptance write no entry. Queries name the condition as a literal:
    // a planner cannot prove a bound parameter implies it, and SQLite then reads every past command.
    index("driver_commands_open_idx")
      .on(t.driverInstanceId, t.seq)
      .where(sql`terminal_at_ms IS NULL`),
  ],
);

/**
 * One external tool effect per `mcp.execute` command; the columns' meaning is
 * documented on the SQLite twin (`externalToolEffects` in `../sqlite/sqlite-schema.ts`). A delete of an
 * `executing` or `unknown` effect (directly or by a cascade) is refused by the trigger
 * `external_tool_effects_fence_retained` (custom migration in `apps/api/drizzle-pg/`).
 */
export const externalToolEffects = pgTable(
  "external_tool_effects",
  {
    id: text("id").primaryKey(),
    commandId: text("command_id")
      .notNull()
      .references(() => driverCommands.id, { onDelete: "cascade" }),
    runId: text("run_id")
      .notNull()
      .references(() => sessionRuns.id, { onDelete: "cascade" }),
    driverInstanceId: text("driver_instance_id")
      .notNull()
      .references(() => driverInstances.id, { onDelete: "cascade" }),
    serverId: text("server_id").notNull(),
    toolName: text("tool_name").notNull(),
    toolCallId: text("tool_call_id").notNull(),
    clientToolCallId: text("client_tool_call_id"),
    requestId: text("request_id").notNull(),
    argumentsJson: text("arguments_json").notNull(),
    idempotencyKey: text("idempotency_key").notNull(),
    requestFingerprint: text("request_fingerprint").notNull(),
    status: text("status", { enum: EFFECT_STATUSES }).notNull(),
    resolution: text("resolution", { enum: EFFECT_RESOLUTIONS }),
    version: integer("version").notNull().default(0),
    attemptCount: integer("attempt_count").notNull().default(0),
    resultJson: text("result_json"),
    providerReceiptJson: text("provider_receipt_json"),
    reconciliationReceiptJson: text("reconciliation_receipt_json"),
    leaseOwner: text("lease_owner"),
    leaseExpiresAtMs: ms("lease_expires_at_ms"),
    nextLookupAtMs: ms("next_lookup_at_ms"),
    lookupCount: integer("lookup_count").notNull().default(0),
    operatorAttention: text("operator_attention", { enum: OPERATOR_ATTENTION_REASONS }),
    firstDispatchedAtMs: ms("first_dispatched_at_ms"),
    lastDispatchedAtMs: ms("last_dispatched_at_ms"),
    sendWithinMs: ms("send_within_ms"),
    createdAtMs: ms("created_at_ms").notNull(),
    updatedAtMs: ms("updated_at_ms").notNull(),
    compensatesEffectId: text("compensates_effect_id").references((): AnyPgColumn => externalToolEffects.id, { onDelete: "cascade" }),
    /**
     * The session of the effect's run, copied from it when the intent is written: the repeat guard
     * (see `guardRepeat` in repeat-guard.policy.ts) looks up (session, request fingerprint). Null only on rows written
     * before the column existed whose run was gone when the migration filled it in.
     */
    sessionId: text("session_id"),
    /**
     * Set when the tool call was queued as a deliberate repeat (the enqueue named this earlier effect,
     * past the repeat guard: see `guardRepeat` in repeat-guard.policy.ts). A record, not a reference: the earlier effect
     * may be deleted with its run later.
     */
    repeatOfEffectId: text("repeat_of_effect_id"),
    /**
     * The provider's MCP task id of the latest attempt, when the tool was called task-augmented (MCP
     * 2025-11-25 "Tasks"): a durable handle the `mcp-tasks` reconciler asks `tasks/get` / `tasks/result`
     * about. Written once, by the Driver's report before it waits for the task (see
     * `decideTaskHandle` in effect-lifecycle.machine.ts); a trigger refuses any change once it is set (`effect.task_id_set_once`). Printable
     * ASCII without space, 1-256 characters (`McpTaskIdSchema` of @mosoo/contracts), on a dispatched effect only.
     */
    taskId: text("task_id"),
  },
  (t) => [
    check("external_tool_effects_status_check", oneOf("status", EFFECT_STATUSES)),
    check("external_tool_effects_resolution_check", sql`resolution IS NULL OR ${oneOf("resolution", EFFECT_RESOLUTIONS)}`),
    check("external_tool_effects_resolved_check", sql`(status IN ('succeeded', 'not_executed')) = (resolution IS NOT NULL)`),
    check(
      "external_tool_effects_resolution_status_check",
      sql`(resolution <> 'deadline_missed' OR status = 'not_executed') AND (resolution <> 'reported_late' OR status = 'succeeded')`,
    ),
    check("external_tool_effects_send_within_check", sql`send_within_ms IS NULL OR send_within_ms > 0`),
    check("external_tool_effects_lease_check", sql`(lease_owner IS NULL) = (lease_expires_at_ms IS NULL)`),
    check(
      "external_tool_effects_attention_check",
      sql`operator_attention IS NULL OR ${oneOf("operator_attention", OPERATOR_ATTENTION_REASONS)}`,
    ),
    // SQLite's null-safe `IS NOT 'x'` is `IS DISTINCT FROM 'x'` here.
    check(
      "external_tool_effects_contradiction_check",
      sql`operator_attention IS DISTINCT FROM 'contradicted_by_provider' OR status IN ('succeeded', 'not_executed')`,
    ),
    check("external_tool_effects_key_check", sql`length(idempotency_key) = 26`),
    check("external_tool_effects_fingerprint_check", sql`length(request_fingerprint) = 64`),
    check("external_tool_effects_attempt_check", sql`(status = 'intent') = (attempt_count = 0)`),
    check("external_tool_effects_result_check", sql`status <> 'succeeded' OR result_json IS NOT NULL`),
    check(
      "external_tool_effects_repeat_of_check",
      sql`repeat_of_effect_id IS NULL OR (length(repeat_of_effect_id) = 26 AND repeat_of_effect_id <> id)`,
    ),
    check(
      "external_tool_effects_task_id_check",
      sql`task_id IS NULL OR (length(task_id) BETWEEN 1 AND 256 AND task_id !~ '[^!-~]' AND attempt_count > 0)`,
    ),
    uniqueIndex("external_tool_effects_command_unique").on(t.commandId),
    uniqueIndex("external_tool_effects_key_unique").on(t.idempotencyKey),
    index("external_tool_effects_driver_idx").on(t.driverInstanceId),
    index("external_tool_effects_status_id_idx").on(t.status, t.id),
    // NULLs never collide in a PostgreSQL unique index either (NULLS DISTINCT is the default), as on SQLite.
    uniqueIndex("external_tool_effects_run_client_tool_call_unique").on(t.runId, t.clientToolCallId),
    // The repeat guard's lookup (see `guardRepeat` in repeat-guard.policy.ts): the session's effects with one request
    // fingerprint, an index range whatever the session's size. Both columns are written with the intent
    // and never change, so no lifecycle step writes this index.
    index("external_tool_effects_session_fingerprint_idx").on(t.sessionId, t.requestFingerprint),
    index("external_tool_effects_compensates_idx")
      .on(t.compensatesEffectId)
      .where(sql`compensates_effect_id IS NOT NULL`),
    // The retention canary (see `RetentionCanary` in retention-canary.service.ts): the oldest `succeeded` effect of a server and tool first
    // dispatched inside a time range (`server_id = ? AND tool_name = ? AND status = 'succeeded' AND
    // first_dispatched_at_ms BETWEEN ? AND ? ORDER BY first_dispatched_at_ms`): one index range. Partial:
    // an effect gets its entry once, when it succeeds; no other lifecycle step writes it.
    index("external_tool_effects_canary_idx")
      .on(t.serverId, t.toolName, t.firstDispatchedAtMs)
      .where(sql`status = 'succeeded'`),
    index("external_tool_effects_attention_idx")
      .on(t.operatorAttention, t.id)
      .where(sql`operator_attention IS NOT NULL`),
    uniqueIndex("external_tool_effects_one_compensation_in_flight")
      .on(t.compensatesEffectId)
      .where(sql`compensates_effect_id IS NOT NULL AND status IN ('executing', 'unknown')`),
  ],
);

/** One dispatch of an effect to its provider; `(effect_id, attempt)` is unique. */
export const externalToolEffectAttempts = pgTable(
  "external_tool_effect_attempts",
  {
    effectId: text("effect_id")
      .notNull()
      .references(() => externalToolEffects.id, { onDelete: "cascade" }),
    attempt: integer("attempt").notNull(),
    status: text("status", { enum: ATTEMPT_STATUSES }).notNull(),
    connectionId: text("connection_id").notNull(),
    providerReceiptJson: text("provider_receipt_json"),
    unknownReason: text("unknown_reason"),
    startedAtMs: ms("started_at_ms").notNull(),
    finishedAtMs: ms("finished_at_ms"),
    lateResultJson: text("late_result_json"),
    lateReportedAtMs: ms("late_reported_at_ms"),
    sendReportedAtMs: ms("send_reported_at_ms"),
  },
  (t) => [
    primaryKey({ columns: [t.effectId, t.attempt] }),
    check("external_tool_effect_attempts_status_check", oneOf("status", ATTEMPT_STATUSES)),
    check("external_tool_effect_attempts_attempt_check", sql`attempt >= 1`),
    check("external_tool_effect_attempts_late_check", sql`(late_result_json IS NULL) = (late_reported_at_ms IS NULL)`),
  ],
);

/** The replayable event stream of a run; exactly one terminal event per run (partial unique index). */
export const runEvents = pgTable(
  "run_events",
  {
    id: text("id").primaryKey(),
    runId: text("run_id")
      .notNull()
      .references(() => sessionRuns.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    type: text("type", { enum: RUN_EVENT_TYPES }).notNull(),
    terminal: boolean("terminal").notNull(),
    payloadJson: text("payload_json").notNull(),
    createdAtMs: ms("created_at_ms").notNull(),
  },
  (t) => [
    check("run_events_type_check", oneOf("type", RUN_EVENT_TYPES)),
    check("run_events_terminal_check", sql`terminal = (type IN ('run.failed', 'run.completed'))`),
    uniqueIndex("run_events_run_seq").on(t.runId, t.seq),
    // A real boolean here; SQLite stores it as 0/1 and says `terminal = 1`.
    uniqueIndex("run_events_one_terminal")
      .on(t.runId)
      .where(sql`terminal = true`),
  ],
);

/** One reconciliation lookup of an effect (docs/DESIGN.md §4–§6); see the SQLite twin for each column. */
export const effectReconciliations = pgTable(
  "effect_reconciliations",
  {
    id: text("id").primaryKey(),
    effectId: text("effect_id")
      .notNull()
      .references(() => externalToolEffects.id, { onDelete: "cascade" }),
    adapterId: text("adapter_id").notNull(),
    adapterVersion: text("adapter_version").notNull(),
    adapterPackage: text("adapter_package"),
    adapterPackageVersion: text("adapter_package_version"),
    adapterDeclarationHash: text("adapter_declaration_hash"),
    trigger: text("trigger", { enum: RECONCILIATION_TRIGGERS }).notNull(),
    outcome: text("outcome", { enum: RECONCILIATION_OUTCOMES }).notNull(),
    reasonCode: text("reason_code"),
    receiptJson: text("receipt_json"),
    resultJson: text("result_json"),
    error: text("error"),
    startedAtMs: ms("started_at_ms").notNull(),
    finishedAtMs: ms("finished_at_ms").notNull(),
    nextLookupAtMs: ms("next_lookup_at_ms"),
  },
  (t) => [
    check("effect_reconciliations_trigger_check", oneOf("trigger", RECONCILIATION_TRIGGERS)),
    check("effect_reconciliations_outcome_check", oneOf("outcome", RECONCILIATION_OUTCOMES)),
    check(
      "effect_reconciliations_receipt_check",
      sql`outcome NOT IN ('confirmed_succeeded', 'confirmed_not_executed') OR receipt_json IS NOT NULL`,
    ),
    check("effect_reconciliations_result_check", sql`outcome <> 'confirmed_succeeded' OR result_json IS NOT NULL`),
    index("effect_reconciliations_effect_idx").on(t.effectId),
    uniqueIndex("effect_reconciliations_one_confirmed")
      .on(t.effectId)
      .where(sql`outcome IN ('confirmed_succeeded', 'confirmed_not_executed')`),
  ],
);
