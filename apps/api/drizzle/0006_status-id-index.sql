DROP INDEX `external_tool_effects_due_lookup_idx`;--> statement-breakpoint
CREATE INDEX `external_tool_effects_status_id_idx` ON `external_tool_effects` (`status`,`id`);