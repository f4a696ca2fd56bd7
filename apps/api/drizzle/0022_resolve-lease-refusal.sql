PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_effect_operator_refusals` (
	`id` text PRIMARY KEY NOT NULL,
	`effect_id` text NOT NULL,
	`action` text NOT NULL,
	`actor` text NOT NULL,
	`reason` text NOT NULL,
	`outcome` text NOT NULL,
	`message` text NOT NULL,
	`effect_status` text,
	`created_at_ms` integer NOT NULL,
	CONSTRAINT "effect_operator_refusals_effect_check" CHECK(length(effect_id) = 26),
	CONSTRAINT "effect_operator_refusals_action_check" CHECK(action IN ('lookup', 'resolve', 'compensate')),
	CONSTRAINT "effect_operator_refusals_outcome_check" CHECK(outcome IN ('effect.not_found', 'effect.not_unknown', 'effect.lookup_in_progress', 'effect.not_reconcilable', 'effect.not_succeeded', 'compensation.not_declared', 'compensation.plan_failed', 'compensation.exists', 'compensation.driver_unavailable', 'driver.not_found', 'auth.scope')),
	CONSTRAINT "effect_operator_refusals_status_check" CHECK(effect_status IS NULL OR effect_status IN ('intent', 'executing', 'succeeded', 'unknown', 'not_executed')),
	CONSTRAINT "effect_operator_refusals_actor_check" CHECK(length(actor) BETWEEN 1 AND 200),
	CONSTRAINT "effect_operator_refusals_reason_check" CHECK(length(reason) BETWEEN 1 AND 2000),
	CONSTRAINT "effect_operator_refusals_message_check" CHECK(length(message) BETWEEN 1 AND 2000)
);
--> statement-breakpoint
INSERT INTO `__new_effect_operator_refusals`("id", "effect_id", "action", "actor", "reason", "outcome", "message", "effect_status", "created_at_ms") SELECT "id", "effect_id", "action", "actor", "reason", "outcome", "message", "effect_status", "created_at_ms" FROM `effect_operator_refusals`;--> statement-breakpoint
DROP TABLE `effect_operator_refusals`;--> statement-breakpoint
ALTER TABLE `__new_effect_operator_refusals` RENAME TO `effect_operator_refusals`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `effect_operator_refusals_effect_idx` ON `effect_operator_refusals` (`effect_id`);