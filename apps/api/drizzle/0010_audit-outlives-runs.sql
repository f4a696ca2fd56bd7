PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_effect_operator_actions` (
	`id` text PRIMARY KEY NOT NULL,
	`effect_id` text NOT NULL,
	`run_id` text,
	`driver_instance_id` text,
	`action` text NOT NULL,
	`actor` text NOT NULL,
	`reason` text NOT NULL,
	`outcome` text NOT NULL,
	`status_before` text NOT NULL,
	`status_after` text NOT NULL,
	`receipt_json` text,
	`compensation_effect_id` text,
	`created_at_ms` integer NOT NULL,
	CONSTRAINT "effect_operator_actions_action_check" CHECK(action IN ('lookup', 'resolve', 'compensate')),
	CONSTRAINT "effect_operator_actions_status_before_check" CHECK(status_before IN ('intent', 'executing', 'succeeded', 'unknown', 'not_executed')),
	CONSTRAINT "effect_operator_actions_status_after_check" CHECK(status_after IN ('intent', 'executing', 'succeeded', 'unknown', 'not_executed')),
	CONSTRAINT "effect_operator_actions_compensation_check" CHECK(action = 'compensate' OR compensation_effect_id IS NULL),
	CONSTRAINT "effect_operator_actions_actor_check" CHECK(length(actor) BETWEEN 1 AND 200),
	CONSTRAINT "effect_operator_actions_reason_check" CHECK(length(reason) BETWEEN 1 AND 2000)
);
--> statement-breakpoint
-- HAND-EDIT: drizzle-kit selected the new columns run_id and driver_instance_id from the old table, which has none; they are copied from the effect (LEFT JOIN: null when it is gone).
INSERT INTO `__new_effect_operator_actions`("id", "effect_id", "run_id", "driver_instance_id", "action", "actor", "reason", "outcome", "status_before", "status_after", "receipt_json", "compensation_effect_id", "created_at_ms") SELECT a."id", a."effect_id", e."run_id", e."driver_instance_id", a."action", a."actor", a."reason", a."outcome", a."status_before", a."status_after", a."receipt_json", a."compensation_effect_id", a."created_at_ms" FROM `effect_operator_actions` a LEFT JOIN `external_tool_effects` e ON e."id" = a."effect_id";--> statement-breakpoint
DROP TABLE `effect_operator_actions`;--> statement-breakpoint
ALTER TABLE `__new_effect_operator_actions` RENAME TO `effect_operator_actions`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `effect_operator_actions_effect_idx` ON `effect_operator_actions` (`effect_id`);--> statement-breakpoint
CREATE INDEX `effect_operator_actions_run_idx` ON `effect_operator_actions` (`run_id`);