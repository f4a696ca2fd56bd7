CREATE TABLE `driver_commands` (
	`id` text PRIMARY KEY NOT NULL,
	`driver_instance_id` text NOT NULL,
	`run_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`payload_json` text NOT NULL,
	`result_json` text,
	`error_json` text,
	`delivered_connection_id` text,
	`delivery_count` integer DEFAULT 0 NOT NULL,
	`created_at_ms` integer NOT NULL,
	`updated_at_ms` integer NOT NULL,
	`terminal_at_ms` integer,
	FOREIGN KEY (`driver_instance_id`) REFERENCES `driver_instances`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`run_id`) REFERENCES `session_runs`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "driver_commands_status_check" CHECK(status IN ('queued', 'delivered', 'accepted', 'completed', 'failed', 'expired', 'cancelled')),
	CONSTRAINT "driver_commands_type_check" CHECK(type IN ('mcp.execute')),
	CONSTRAINT "driver_commands_terminal_check" CHECK((status IN ('completed', 'failed', 'expired', 'cancelled')) = (terminal_at_ms IS NOT NULL)),
	CONSTRAINT "driver_commands_result_check" CHECK(status <> 'completed' OR result_json IS NOT NULL),
	CONSTRAINT "driver_commands_error_check" CHECK(status <> 'failed' OR error_json IS NOT NULL)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `driver_commands_instance_seq` ON `driver_commands` (`driver_instance_id`,`seq`);--> statement-breakpoint
CREATE INDEX `driver_commands_run_idx` ON `driver_commands` (`run_id`);--> statement-breakpoint
CREATE TABLE `driver_instances` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`token_hash` text NOT NULL,
	`connection_id` text,
	`last_heartbeat_at_ms` integer,
	`registered_at_ms` integer NOT NULL,
	`finalized_at_ms` integer,
	CONSTRAINT "driver_instances_status_check" CHECK(status IN ('registered', 'connected', 'finalizing', 'finalized')),
	CONSTRAINT "driver_instances_finalized_check" CHECK((status = 'finalized') = (finalized_at_ms IS NOT NULL))
);
--> statement-breakpoint
CREATE TABLE `external_tool_effect_attempts` (
	`effect_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`status` text NOT NULL,
	`connection_id` text NOT NULL,
	`provider_receipt_json` text,
	`unknown_reason` text,
	`started_at_ms` integer NOT NULL,
	`finished_at_ms` integer,
	PRIMARY KEY(`effect_id`, `attempt`),
	FOREIGN KEY (`effect_id`) REFERENCES `external_tool_effects`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "external_tool_effect_attempts_status_check" CHECK(status IN ('executing', 'succeeded', 'unknown')),
	CONSTRAINT "external_tool_effect_attempts_attempt_check" CHECK(attempt >= 1)
);
--> statement-breakpoint
CREATE TABLE `external_tool_effects` (
	`id` text PRIMARY KEY NOT NULL,
	`command_id` text NOT NULL,
	`run_id` text NOT NULL,
	`driver_instance_id` text NOT NULL,
	`server_id` text NOT NULL,
	`tool_name` text NOT NULL,
	`tool_call_id` text NOT NULL,
	`request_id` text NOT NULL,
	`arguments_json` text NOT NULL,
	`idempotency_key` text NOT NULL,
	`request_fingerprint` text NOT NULL,
	`status` text NOT NULL,
	`attempt_count` integer DEFAULT 0 NOT NULL,
	`result_json` text,
	`provider_receipt_json` text,
	`first_dispatched_at_ms` integer,
	`last_dispatched_at_ms` integer,
	`created_at_ms` integer NOT NULL,
	`updated_at_ms` integer NOT NULL,
	FOREIGN KEY (`command_id`) REFERENCES `driver_commands`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`run_id`) REFERENCES `session_runs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`driver_instance_id`) REFERENCES `driver_instances`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "external_tool_effects_status_check" CHECK(status IN ('intent', 'executing', 'succeeded', 'unknown')),
	CONSTRAINT "external_tool_effects_key_check" CHECK(length(idempotency_key) = 26),
	CONSTRAINT "external_tool_effects_fingerprint_check" CHECK(length(request_fingerprint) = 64),
	CONSTRAINT "external_tool_effects_attempt_check" CHECK((status = 'intent') = (attempt_count = 0)),
	CONSTRAINT "external_tool_effects_result_check" CHECK(status <> 'succeeded' OR result_json IS NOT NULL)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `external_tool_effects_command_unique` ON `external_tool_effects` (`command_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `external_tool_effects_key_unique` ON `external_tool_effects` (`idempotency_key`);--> statement-breakpoint
CREATE INDEX `external_tool_effects_driver_status_idx` ON `external_tool_effects` (`driver_instance_id`,`status`);--> statement-breakpoint
CREATE INDEX `external_tool_effects_run_idx` ON `external_tool_effects` (`run_id`);--> statement-breakpoint
CREATE TABLE `run_events` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`terminal` integer NOT NULL,
	`payload_json` text NOT NULL,
	`created_at_ms` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `session_runs`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "run_events_type_check" CHECK(type IN ('run.created', 'tool_call.queued', 'tool_call.completed', 'tool_call.failed', 'effect.fenced', 'effect.reconciled', 'run.failed', 'run.completed')),
	CONSTRAINT "run_events_terminal_check" CHECK(terminal = (type IN ('run.failed', 'run.completed')))
);
--> statement-breakpoint
CREATE UNIQUE INDEX `run_events_run_seq` ON `run_events` (`run_id`,`seq`);--> statement-breakpoint
CREATE UNIQUE INDEX `run_events_one_terminal` ON `run_events` (`run_id`) WHERE terminal = 1;--> statement-breakpoint
CREATE TABLE `session_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`driver_instance_id` text NOT NULL,
	`status` text NOT NULL,
	`error_json` text,
	`created_at_ms` integer NOT NULL,
	`updated_at_ms` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`driver_instance_id`) REFERENCES `driver_instances`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "session_runs_status_check" CHECK(status IN ('active', 'completed', 'failed', 'cancelled')),
	CONSTRAINT "session_runs_error_check" CHECK(status <> 'failed' OR error_json IS NOT NULL)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `session_runs_one_active_per_driver` ON `session_runs` (`driver_instance_id`) WHERE status = 'active';--> statement-breakpoint
CREATE INDEX `session_runs_session_idx` ON `session_runs` (`session_id`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`created_at_ms` integer NOT NULL
);
