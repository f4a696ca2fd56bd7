PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_driver_commands` (
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
	`trace_parent` text,
	`trace_state` text,
	FOREIGN KEY (`driver_instance_id`) REFERENCES `driver_instances`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`run_id`) REFERENCES `session_runs`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "driver_commands_status_check" CHECK(status IN ('queued', 'delivered', 'accepted', 'completed', 'failed', 'expired', 'cancelled')),
	CONSTRAINT "driver_commands_trace_parent_check" CHECK(trace_parent IS NULL OR length(trace_parent) = 55),
	CONSTRAINT "driver_commands_trace_state_check" CHECK(trace_state IS NULL OR (trace_parent IS NOT NULL AND length(trace_state) <= 512)),
	CONSTRAINT "driver_commands_type_check" CHECK(type IN ('mcp.execute')),
	CONSTRAINT "driver_commands_terminal_check" CHECK((status IN ('completed', 'failed', 'expired', 'cancelled')) = (terminal_at_ms IS NOT NULL)),
	CONSTRAINT "driver_commands_result_check" CHECK(status <> 'completed' OR result_json IS NOT NULL),
	CONSTRAINT "driver_commands_error_check" CHECK(status <> 'failed' OR error_json IS NOT NULL)
);
--> statement-breakpoint
INSERT INTO `__new_driver_commands`("id", "driver_instance_id", "run_id", "seq", "type", "status", "payload_json", "result_json", "error_json", "delivered_connection_id", "delivery_count", "created_at_ms", "updated_at_ms", "terminal_at_ms") SELECT "id", "driver_instance_id", "run_id", "seq", "type", "status", "payload_json", "result_json", "error_json", "delivered_connection_id", "delivery_count", "created_at_ms", "updated_at_ms", "terminal_at_ms" FROM `driver_commands`;--> statement-breakpoint
DROP TABLE `driver_commands`;--> statement-breakpoint
ALTER TABLE `__new_driver_commands` RENAME TO `driver_commands`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `driver_commands_instance_seq` ON `driver_commands` (`driver_instance_id`,`seq`);--> statement-breakpoint
CREATE INDEX `driver_commands_run_idx` ON `driver_commands` (`run_id`);