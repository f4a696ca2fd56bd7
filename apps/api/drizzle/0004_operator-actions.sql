CREATE TABLE `effect_operator_actions` (
	`id` text PRIMARY KEY NOT NULL,
	`effect_id` text NOT NULL,
	`action` text NOT NULL,
	`actor` text NOT NULL,
	`reason` text NOT NULL,
	`outcome` text NOT NULL,
	`created_at_ms` integer NOT NULL,
	FOREIGN KEY (`effect_id`) REFERENCES `external_tool_effects`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "effect_operator_actions_action_check" CHECK(action IN ('lookup', 'resolve')),
	CONSTRAINT "effect_operator_actions_actor_check" CHECK(length(actor) BETWEEN 1 AND 200),
	CONSTRAINT "effect_operator_actions_reason_check" CHECK(length(reason) BETWEEN 1 AND 2000)
);
--> statement-breakpoint
CREATE INDEX `effect_operator_actions_effect_idx` ON `effect_operator_actions` (`effect_id`);--> statement-breakpoint
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
);
--> statement-breakpoint
INSERT INTO `__new_run_events`("id", "run_id", "seq", "type", "terminal", "payload_json", "created_at_ms") SELECT "id", "run_id", "seq", "type", "terminal", "payload_json", "created_at_ms" FROM `run_events`;--> statement-breakpoint
DROP TABLE `run_events`;--> statement-breakpoint
ALTER TABLE `__new_run_events` RENAME TO `run_events`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `run_events_run_seq` ON `run_events` (`run_id`,`seq`);--> statement-breakpoint
CREATE UNIQUE INDEX `run_events_one_terminal` ON `run_events` (`run_id`) WHERE terminal = 1;