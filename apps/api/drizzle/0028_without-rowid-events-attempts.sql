-- HAND-EDIT (custom migration; drizzle's schema cannot express it, so the snapshot does not change): `run_events` and `external_tool_effect_attempts` become WITHOUT ROWID tables, the same columns, constraints and indexes. A row now lives in its primary key's B-tree instead of a rowid table plus a separate primary-key index, so each event append and each attempt insert dirties one B-tree page fewer (one WAL page fewer per commit that writes one). Both tables' rows are small (an event's payload, an attempt's receipt of at most 16 KiB, usually far less); rows above about 1 KB spill into overflow pages sooner than in a rowid table, which costs pages only for such rows. A later drizzle-kit rebuild of either table must keep `WITHOUT ROWID` (apps/api/tests/store-migration.test.ts checks it).
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_run_events` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`terminal` integer NOT NULL,
	`payload_json` text NOT NULL,
	`created_at_ms` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `session_runs`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "run_events_type_check" CHECK(type IN ('run.created', 'tool_call.queued', 'tool_call.completed', 'tool_call.failed', 'effect.fenced', 'effect.reconciled', 'effect.resolved', 'run.failed', 'run.completed')),
	CONSTRAINT "run_events_terminal_check" CHECK(terminal = (type IN ('run.failed', 'run.completed')))
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_run_events`("id", "run_id", "seq", "type", "terminal", "payload_json", "created_at_ms") SELECT "id", "run_id", "seq", "type", "terminal", "payload_json", "created_at_ms" FROM `run_events`;--> statement-breakpoint
DROP TABLE `run_events`;--> statement-breakpoint
ALTER TABLE `__new_run_events` RENAME TO `run_events`;--> statement-breakpoint
CREATE UNIQUE INDEX `run_events_run_seq` ON `run_events` (`run_id`,`seq`);--> statement-breakpoint
CREATE UNIQUE INDEX `run_events_one_terminal` ON `run_events` (`run_id`) WHERE terminal = 1;--> statement-breakpoint
CREATE TABLE `__new_external_tool_effect_attempts` (
	`effect_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`status` text NOT NULL,
	`connection_id` text NOT NULL,
	`provider_receipt_json` text,
	`unknown_reason` text,
	`started_at_ms` integer NOT NULL,
	`finished_at_ms` integer,
	`late_result_json` text,
	`late_reported_at_ms` integer,
	`send_reported_at_ms` integer,
	PRIMARY KEY(`effect_id`, `attempt`),
	FOREIGN KEY (`effect_id`) REFERENCES `external_tool_effects`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "external_tool_effect_attempts_status_check" CHECK(status IN ('executing', 'succeeded', 'unknown', 'not_sent')),
	CONSTRAINT "external_tool_effect_attempts_attempt_check" CHECK(attempt >= 1),
	CONSTRAINT "external_tool_effect_attempts_late_check" CHECK((late_result_json IS NULL) = (late_reported_at_ms IS NULL))
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_external_tool_effect_attempts`("effect_id", "attempt", "status", "connection_id", "provider_receipt_json", "unknown_reason", "started_at_ms", "finished_at_ms", "late_result_json", "late_reported_at_ms", "send_reported_at_ms") SELECT "effect_id", "attempt", "status", "connection_id", "provider_receipt_json", "unknown_reason", "started_at_ms", "finished_at_ms", "late_result_json", "late_reported_at_ms", "send_reported_at_ms" FROM `external_tool_effect_attempts`;--> statement-breakpoint
DROP TABLE `external_tool_effect_attempts`;--> statement-breakpoint
ALTER TABLE `__new_external_tool_effect_attempts` RENAME TO `external_tool_effect_attempts`;--> statement-breakpoint
PRAGMA foreign_keys=ON;
