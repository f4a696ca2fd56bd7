PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_external_tool_effects` (
	`id` text PRIMARY KEY NOT NULL,
	`command_id` text NOT NULL,
	`run_id` text NOT NULL,
	`driver_instance_id` text NOT NULL,
	`server_id` text NOT NULL,
	`tool_name` text NOT NULL,
	`tool_call_id` text NOT NULL,
	`client_tool_call_id` text,
	`request_id` text NOT NULL,
	`arguments_json` text NOT NULL,
	`idempotency_key` text NOT NULL,
	`request_fingerprint` text NOT NULL,
	`status` text NOT NULL,
	`resolution` text,
	`version` integer DEFAULT 0 NOT NULL,
	`attempt_count` integer DEFAULT 0 NOT NULL,
	`result_json` text,
	`provider_receipt_json` text,
	`reconciliation_receipt_json` text,
	`lease_owner` text,
	`lease_expires_at_ms` integer,
	`next_lookup_at_ms` integer,
	`lookup_count` integer DEFAULT 0 NOT NULL,
	`operator_attention` text,
	`first_dispatched_at_ms` integer,
	`last_dispatched_at_ms` integer,
	`send_within_ms` integer,
	`created_at_ms` integer NOT NULL,
	`updated_at_ms` integer NOT NULL,
	`compensates_effect_id` text,
	`session_id` text,
	`repeat_of_effect_id` text,
	`task_id` text,
	FOREIGN KEY (`command_id`) REFERENCES `driver_commands`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`run_id`) REFERENCES `session_runs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`driver_instance_id`) REFERENCES `driver_instances`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`compensates_effect_id`) REFERENCES `external_tool_effects`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "external_tool_effects_status_check" CHECK(status IN ('intent', 'executing', 'succeeded', 'unknown', 'not_executed')),
	CONSTRAINT "external_tool_effects_resolution_check" CHECK(resolution IS NULL OR resolution IN ('provider_result', 'reconciled', 'operator', 'deadline_missed', 'reported_late')),
	CONSTRAINT "external_tool_effects_resolved_check" CHECK((status IN ('succeeded', 'not_executed')) = (resolution IS NOT NULL)),
	CONSTRAINT "external_tool_effects_resolution_status_check" CHECK((resolution <> 'deadline_missed' OR status = 'not_executed') AND (resolution <> 'reported_late' OR status = 'succeeded')),
	CONSTRAINT "external_tool_effects_send_within_check" CHECK(send_within_ms IS NULL OR send_within_ms > 0),
	CONSTRAINT "external_tool_effects_lease_check" CHECK((lease_owner IS NULL) = (lease_expires_at_ms IS NULL)),
	CONSTRAINT "external_tool_effects_attention_check" CHECK(operator_attention IS NULL OR operator_attention IN ('key_conflict', 'retention_expired', 'lookup_bound_reached', 'adapter_crashed', 'late_evidence_contradiction', 'contradicted_by_provider', 'retention_contradicted')),
	CONSTRAINT "external_tool_effects_contradiction_check" CHECK(operator_attention IS NOT 'contradicted_by_provider' OR status IN ('succeeded', 'not_executed')),
	CONSTRAINT "external_tool_effects_key_check" CHECK(length(idempotency_key) = 26),
	CONSTRAINT "external_tool_effects_fingerprint_check" CHECK(length(request_fingerprint) = 64),
	CONSTRAINT "external_tool_effects_attempt_check" CHECK((status = 'intent') = (attempt_count = 0)),
	CONSTRAINT "external_tool_effects_result_check" CHECK(status <> 'succeeded' OR result_json IS NOT NULL),
	CONSTRAINT "external_tool_effects_repeat_of_check" CHECK(repeat_of_effect_id IS NULL OR (length(repeat_of_effect_id) = 26 AND repeat_of_effect_id <> id)),
	CONSTRAINT "external_tool_effects_task_id_check" CHECK(task_id IS NULL OR (length(task_id) BETWEEN 1 AND 256 AND task_id NOT GLOB '*[^!-~]*' AND attempt_count > 0))
);
--> statement-breakpoint
INSERT INTO `__new_external_tool_effects`("id", "command_id", "run_id", "driver_instance_id", "server_id", "tool_name", "tool_call_id", "client_tool_call_id", "request_id", "arguments_json", "idempotency_key", "request_fingerprint", "status", "resolution", "version", "attempt_count", "result_json", "provider_receipt_json", "reconciliation_receipt_json", "lease_owner", "lease_expires_at_ms", "next_lookup_at_ms", "lookup_count", "operator_attention", "first_dispatched_at_ms", "last_dispatched_at_ms", "send_within_ms", "created_at_ms", "updated_at_ms", "compensates_effect_id", "session_id", "repeat_of_effect_id", "task_id") SELECT "id", "command_id", "run_id", "driver_instance_id", "server_id", "tool_name", "tool_call_id", "client_tool_call_id", "request_id", "arguments_json", "idempotency_key", "request_fingerprint", "status", "resolution", "version", "attempt_count", "result_json", "provider_receipt_json", "reconciliation_receipt_json", "lease_owner", "lease_expires_at_ms", "next_lookup_at_ms", "lookup_count", "operator_attention", "first_dispatched_at_ms", "last_dispatched_at_ms", "send_within_ms", "created_at_ms", "updated_at_ms", "compensates_effect_id", "session_id", "repeat_of_effect_id", "task_id" FROM `external_tool_effects`;--> statement-breakpoint
DROP TABLE `external_tool_effects`;--> statement-breakpoint
ALTER TABLE `__new_external_tool_effects` RENAME TO `external_tool_effects`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `external_tool_effects_command_unique` ON `external_tool_effects` (`command_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `external_tool_effects_key_unique` ON `external_tool_effects` (`idempotency_key`);--> statement-breakpoint
CREATE INDEX `external_tool_effects_driver_idx` ON `external_tool_effects` (`driver_instance_id`);--> statement-breakpoint
CREATE INDEX `external_tool_effects_status_id_idx` ON `external_tool_effects` (`status`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `external_tool_effects_run_client_tool_call_unique` ON `external_tool_effects` (`run_id`,`client_tool_call_id`);--> statement-breakpoint
CREATE INDEX `external_tool_effects_session_fingerprint_idx` ON `external_tool_effects` (`session_id`,`request_fingerprint`);--> statement-breakpoint
CREATE INDEX `external_tool_effects_compensates_idx` ON `external_tool_effects` (`compensates_effect_id`) WHERE compensates_effect_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `external_tool_effects_canary_idx` ON `external_tool_effects` (`server_id`,`tool_name`,`first_dispatched_at_ms`) WHERE status = 'succeeded';--> statement-breakpoint
CREATE INDEX `external_tool_effects_attention_idx` ON `external_tool_effects` (`operator_attention`,`id`) WHERE operator_attention IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `external_tool_effects_one_compensation_in_flight` ON `external_tool_effects` (`compensates_effect_id`) WHERE compensates_effect_id IS NOT NULL AND status IN ('executing', 'unknown');--> statement-breakpoint
-- HAND-EDIT: the rebuild dropped the table's triggers with the old table: both are created again as they were
-- (the fence trigger, docs/DESIGN.md §3 rule 9; the task id's set-once trigger, docs/DESIGN.md §4 "Tasks").
CREATE TRIGGER `external_tool_effects_fence_retained`
BEFORE DELETE ON `external_tool_effects`
WHEN OLD.`status` IN ('executing', 'unknown')
BEGIN
  SELECT RAISE(ABORT, 'effect.fence_retained');
END;--> statement-breakpoint
CREATE TRIGGER `external_tool_effects_task_id_set_once`
BEFORE UPDATE OF `task_id` ON `external_tool_effects`
WHEN OLD.`task_id` IS NOT NULL AND (NEW.`task_id` IS NULL OR NEW.`task_id` <> OLD.`task_id`)
BEGIN
  SELECT RAISE(ABORT, 'effect.task_id_set_once');
END;
