CREATE TABLE "driver_commands" (
	"id" text PRIMARY KEY NOT NULL,
	"driver_instance_id" text NOT NULL,
	"run_id" text NOT NULL,
	"seq" integer NOT NULL,
	"type" text NOT NULL,
	"status" text NOT NULL,
	"payload_json" text NOT NULL,
	"result_json" text,
	"error_json" text,
	"delivered_connection_id" text,
	"delivery_count" integer DEFAULT 0 NOT NULL,
	"created_at_ms" bigint NOT NULL,
	"updated_at_ms" bigint NOT NULL,
	"terminal_at_ms" bigint,
	CONSTRAINT "driver_commands_status_check" CHECK (status IN ('queued', 'delivered', 'accepted', 'completed', 'failed', 'expired', 'cancelled')),
	CONSTRAINT "driver_commands_type_check" CHECK (type IN ('mcp.execute')),
	CONSTRAINT "driver_commands_terminal_check" CHECK ((status IN ('completed', 'failed', 'expired', 'cancelled')) = (terminal_at_ms IS NOT NULL)),
	CONSTRAINT "driver_commands_result_check" CHECK (status <> 'completed' OR result_json IS NOT NULL),
	CONSTRAINT "driver_commands_error_check" CHECK (status <> 'failed' OR error_json IS NOT NULL)
);
--> statement-breakpoint
CREATE TABLE "driver_instances" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"token_hash" text NOT NULL,
	"connection_id" text,
	"last_heartbeat_at_ms" bigint,
	"registered_at_ms" bigint NOT NULL,
	"finalized_at_ms" bigint,
	CONSTRAINT "driver_instances_status_check" CHECK (status IN ('registered', 'connected', 'finalizing', 'finalized')),
	CONSTRAINT "driver_instances_finalized_check" CHECK ((status = 'finalized') = (finalized_at_ms IS NOT NULL))
);
--> statement-breakpoint
CREATE TABLE "effect_operator_actions" (
	"id" text PRIMARY KEY NOT NULL,
	"effect_id" text NOT NULL,
	"run_id" text,
	"driver_instance_id" text,
	"action" text NOT NULL,
	"actor" text NOT NULL,
	"reason" text NOT NULL,
	"outcome" text NOT NULL,
	"status_before" text NOT NULL,
	"status_after" text NOT NULL,
	"receipt_json" text,
	"compensation_effect_id" text,
	"created_at_ms" bigint NOT NULL,
	CONSTRAINT "effect_operator_actions_action_check" CHECK (action IN ('lookup', 'resolve', 'compensate')),
	CONSTRAINT "effect_operator_actions_status_before_check" CHECK (status_before IN ('intent', 'executing', 'succeeded', 'unknown', 'not_executed')),
	CONSTRAINT "effect_operator_actions_status_after_check" CHECK (status_after IN ('intent', 'executing', 'succeeded', 'unknown', 'not_executed')),
	CONSTRAINT "effect_operator_actions_compensation_check" CHECK (action = 'compensate' OR compensation_effect_id IS NULL),
	CONSTRAINT "effect_operator_actions_actor_check" CHECK (length(actor) BETWEEN 1 AND 200),
	CONSTRAINT "effect_operator_actions_reason_check" CHECK (length(reason) BETWEEN 1 AND 2000)
);
--> statement-breakpoint
CREATE TABLE "effect_operator_refusals" (
	"id" text PRIMARY KEY NOT NULL,
	"effect_id" text NOT NULL,
	"action" text NOT NULL,
	"actor" text NOT NULL,
	"reason" text NOT NULL,
	"outcome" text NOT NULL,
	"message" text NOT NULL,
	"effect_status" text,
	"created_at_ms" bigint NOT NULL,
	CONSTRAINT "effect_operator_refusals_effect_check" CHECK (length(effect_id) = 26),
	CONSTRAINT "effect_operator_refusals_action_check" CHECK (action IN ('lookup', 'resolve', 'compensate')),
	CONSTRAINT "effect_operator_refusals_outcome_check" CHECK (outcome IN ('effect.not_found', 'effect.not_unknown', 'effect.not_reconcilable', 'effect.not_succeeded', 'compensation.not_declared', 'compensation.plan_failed', 'compensation.exists', 'compensation.driver_unavailable', 'driver.not_found')),
	CONSTRAINT "effect_operator_refusals_status_check" CHECK (effect_status IS NULL OR effect_status IN ('intent', 'executing', 'succeeded', 'unknown', 'not_executed')),
	CONSTRAINT "effect_operator_refusals_actor_check" CHECK (length(actor) BETWEEN 1 AND 200),
	CONSTRAINT "effect_operator_refusals_reason_check" CHECK (length(reason) BETWEEN 1 AND 2000),
	CONSTRAINT "effect_operator_refusals_message_check" CHECK (length(message) BETWEEN 1 AND 2000)
);
--> statement-breakpoint
CREATE TABLE "effect_reconciliations" (
	"id" text PRIMARY KEY NOT NULL,
	"effect_id" text NOT NULL,
	"adapter_id" text NOT NULL,
	"adapter_version" text NOT NULL,
	"adapter_package" text,
	"adapter_package_version" text,
	"adapter_declaration_hash" text,
	"trigger" text NOT NULL,
	"outcome" text NOT NULL,
	"reason_code" text,
	"receipt_json" text,
	"result_json" text,
	"error" text,
	"started_at_ms" bigint NOT NULL,
	"finished_at_ms" bigint NOT NULL,
	"next_lookup_at_ms" bigint,
	CONSTRAINT "effect_reconciliations_trigger_check" CHECK (trigger IN ('redelivery', 'finalization', 'sweep', 'operator')),
	CONSTRAINT "effect_reconciliations_outcome_check" CHECK (outcome IN ('confirmed_succeeded', 'confirmed_not_executed', 'still_unknown', 'superseded')),
	CONSTRAINT "effect_reconciliations_receipt_check" CHECK (outcome NOT IN ('confirmed_succeeded', 'confirmed_not_executed') OR receipt_json IS NOT NULL),
	CONSTRAINT "effect_reconciliations_result_check" CHECK (outcome <> 'confirmed_succeeded' OR result_json IS NOT NULL)
);
--> statement-breakpoint
CREATE TABLE "external_tool_effect_attempts" (
	"effect_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"status" text NOT NULL,
	"connection_id" text NOT NULL,
	"provider_receipt_json" text,
	"unknown_reason" text,
	"started_at_ms" bigint NOT NULL,
	"finished_at_ms" bigint,
	"late_result_json" text,
	"late_reported_at_ms" bigint,
	"send_reported_at_ms" bigint,
	CONSTRAINT "external_tool_effect_attempts_effect_id_attempt_pk" PRIMARY KEY("effect_id","attempt"),
	CONSTRAINT "external_tool_effect_attempts_status_check" CHECK (status IN ('executing', 'succeeded', 'unknown', 'not_sent')),
	CONSTRAINT "external_tool_effect_attempts_attempt_check" CHECK (attempt >= 1),
	CONSTRAINT "external_tool_effect_attempts_late_check" CHECK ((late_result_json IS NULL) = (late_reported_at_ms IS NULL))
);
--> statement-breakpoint
CREATE TABLE "external_tool_effects" (
	"id" text PRIMARY KEY NOT NULL,
	"command_id" text NOT NULL,
	"run_id" text NOT NULL,
	"driver_instance_id" text NOT NULL,
	"server_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"tool_call_id" text NOT NULL,
	"client_tool_call_id" text,
	"request_id" text NOT NULL,
	"arguments_json" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"request_fingerprint" text NOT NULL,
	"status" text NOT NULL,
	"resolution" text,
	"version" integer DEFAULT 0 NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"result_json" text,
	"provider_receipt_json" text,
	"reconciliation_receipt_json" text,
	"lease_owner" text,
	"lease_expires_at_ms" bigint,
	"next_lookup_at_ms" bigint,
	"lookup_count" integer DEFAULT 0 NOT NULL,
	"operator_attention" text,
	"first_dispatched_at_ms" bigint,
	"last_dispatched_at_ms" bigint,
	"send_within_ms" bigint,
	"created_at_ms" bigint NOT NULL,
	"updated_at_ms" bigint NOT NULL,
	"compensates_effect_id" text,
	CONSTRAINT "external_tool_effects_status_check" CHECK (status IN ('intent', 'executing', 'succeeded', 'unknown', 'not_executed')),
	CONSTRAINT "external_tool_effects_resolution_check" CHECK (resolution IS NULL OR resolution IN ('provider_result', 'reconciled', 'operator', 'deadline_missed', 'reported_late')),
	CONSTRAINT "external_tool_effects_resolved_check" CHECK ((status IN ('succeeded', 'not_executed')) = (resolution IS NOT NULL)),
	CONSTRAINT "external_tool_effects_resolution_status_check" CHECK ((resolution <> 'deadline_missed' OR status = 'not_executed') AND (resolution <> 'reported_late' OR status = 'succeeded')),
	CONSTRAINT "external_tool_effects_send_within_check" CHECK (send_within_ms IS NULL OR send_within_ms > 0),
	CONSTRAINT "external_tool_effects_lease_check" CHECK ((lease_owner IS NULL) = (lease_expires_at_ms IS NULL)),
	CONSTRAINT "external_tool_effects_attention_check" CHECK (operator_attention IS NULL OR operator_attention IN ('key_conflict', 'retention_expired', 'lookup_bound_reached', 'adapter_crashed', 'late_evidence_contradiction', 'contradicted_by_provider')),
	CONSTRAINT "external_tool_effects_contradiction_check" CHECK (operator_attention IS DISTINCT FROM 'contradicted_by_provider' OR status IN ('succeeded', 'not_executed')),
	CONSTRAINT "external_tool_effects_key_check" CHECK (length(idempotency_key) = 26),
	CONSTRAINT "external_tool_effects_fingerprint_check" CHECK (length(request_fingerprint) = 64),
	CONSTRAINT "external_tool_effects_attempt_check" CHECK ((status = 'intent') = (attempt_count = 0)),
	CONSTRAINT "external_tool_effects_result_check" CHECK (status <> 'succeeded' OR result_json IS NOT NULL)
);
--> statement-breakpoint
CREATE TABLE "run_events" (
	"id" text PRIMARY KEY NOT NULL,
	"run_id" text NOT NULL,
	"seq" integer NOT NULL,
	"type" text NOT NULL,
	"terminal" boolean NOT NULL,
	"payload_json" text NOT NULL,
	"created_at_ms" bigint NOT NULL,
	CONSTRAINT "run_events_type_check" CHECK (type IN ('run.created', 'tool_call.queued', 'tool_call.completed', 'tool_call.failed', 'effect.fenced', 'effect.reconciled', 'effect.resolved', 'run.failed', 'run.completed')),
	CONSTRAINT "run_events_terminal_check" CHECK (terminal = (type IN ('run.failed', 'run.completed')))
);
--> statement-breakpoint
CREATE TABLE "session_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"driver_instance_id" text NOT NULL,
	"status" text NOT NULL,
	"error_json" text,
	"created_at_ms" bigint NOT NULL,
	"updated_at_ms" bigint NOT NULL,
	CONSTRAINT "session_runs_status_check" CHECK (status IN ('active', 'completed', 'failed', 'cancelled')),
	CONSTRAINT "session_runs_error_check" CHECK (status <> 'failed' OR error_json IS NOT NULL)
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"created_at_ms" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "driver_commands" ADD CONSTRAINT "driver_commands_driver_instance_id_driver_instances_id_fk" FOREIGN KEY ("driver_instance_id") REFERENCES "public"."driver_instances"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "driver_commands" ADD CONSTRAINT "driver_commands_run_id_session_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."session_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "effect_reconciliations" ADD CONSTRAINT "effect_reconciliations_effect_id_external_tool_effects_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."external_tool_effects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "external_tool_effect_attempts" ADD CONSTRAINT "external_tool_effect_attempts_effect_id_external_tool_effects_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."external_tool_effects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "external_tool_effects" ADD CONSTRAINT "external_tool_effects_command_id_driver_commands_id_fk" FOREIGN KEY ("command_id") REFERENCES "public"."driver_commands"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "external_tool_effects" ADD CONSTRAINT "external_tool_effects_run_id_session_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."session_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "external_tool_effects" ADD CONSTRAINT "external_tool_effects_driver_instance_id_driver_instances_id_fk" FOREIGN KEY ("driver_instance_id") REFERENCES "public"."driver_instances"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "external_tool_effects" ADD CONSTRAINT "external_tool_effects_compensates_effect_id_external_tool_effects_id_fk" FOREIGN KEY ("compensates_effect_id") REFERENCES "public"."external_tool_effects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_events" ADD CONSTRAINT "run_events_run_id_session_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."session_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_runs" ADD CONSTRAINT "session_runs_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_runs" ADD CONSTRAINT "session_runs_driver_instance_id_driver_instances_id_fk" FOREIGN KEY ("driver_instance_id") REFERENCES "public"."driver_instances"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "driver_commands_instance_seq" ON "driver_commands" USING btree ("driver_instance_id","seq");--> statement-breakpoint
CREATE INDEX "driver_commands_run_idx" ON "driver_commands" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "effect_operator_actions_effect_idx" ON "effect_operator_actions" USING btree ("effect_id");--> statement-breakpoint
CREATE INDEX "effect_operator_actions_run_idx" ON "effect_operator_actions" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "effect_operator_refusals_effect_idx" ON "effect_operator_refusals" USING btree ("effect_id");--> statement-breakpoint
CREATE INDEX "effect_reconciliations_effect_idx" ON "effect_reconciliations" USING btree ("effect_id");--> statement-breakpoint
CREATE UNIQUE INDEX "effect_reconciliations_one_confirmed" ON "effect_reconciliations" USING btree ("effect_id") WHERE outcome IN ('confirmed_succeeded', 'confirmed_not_executed');--> statement-breakpoint
CREATE UNIQUE INDEX "external_tool_effects_command_unique" ON "external_tool_effects" USING btree ("command_id");--> statement-breakpoint
CREATE UNIQUE INDEX "external_tool_effects_key_unique" ON "external_tool_effects" USING btree ("idempotency_key");--> statement-breakpoint
CREATE INDEX "external_tool_effects_driver_status_idx" ON "external_tool_effects" USING btree ("driver_instance_id","status");--> statement-breakpoint
CREATE INDEX "external_tool_effects_status_id_idx" ON "external_tool_effects" USING btree ("status","id");--> statement-breakpoint
CREATE UNIQUE INDEX "external_tool_effects_run_client_tool_call_unique" ON "external_tool_effects" USING btree ("run_id","client_tool_call_id");--> statement-breakpoint
CREATE INDEX "external_tool_effects_compensates_idx" ON "external_tool_effects" USING btree ("compensates_effect_id");--> statement-breakpoint
CREATE UNIQUE INDEX "external_tool_effects_one_compensation_in_flight" ON "external_tool_effects" USING btree ("compensates_effect_id") WHERE compensates_effect_id IS NOT NULL AND status IN ('executing', 'unknown');--> statement-breakpoint
CREATE UNIQUE INDEX "run_events_run_seq" ON "run_events" USING btree ("run_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "run_events_one_terminal" ON "run_events" USING btree ("run_id") WHERE terminal = true;--> statement-breakpoint
CREATE UNIQUE INDEX "session_runs_one_active_per_driver" ON "session_runs" USING btree ("driver_instance_id") WHERE status = 'active';--> statement-breakpoint
CREATE INDEX "session_runs_session_idx" ON "session_runs" USING btree ("session_id");