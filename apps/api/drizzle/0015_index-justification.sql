DROP INDEX `effect_operator_actions_run_idx`;--> statement-breakpoint
DROP INDEX `external_tool_effects_driver_status_idx`;--> statement-breakpoint
DROP INDEX `external_tool_effects_compensates_idx`;--> statement-breakpoint
CREATE INDEX `external_tool_effects_driver_idx` ON `external_tool_effects` (`driver_instance_id`);--> statement-breakpoint
CREATE INDEX `external_tool_effects_attention_idx` ON `external_tool_effects` (`operator_attention`,`id`) WHERE operator_attention IS NOT NULL;--> statement-breakpoint
CREATE INDEX `external_tool_effects_compensates_idx` ON `external_tool_effects` (`compensates_effect_id`) WHERE compensates_effect_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `session_runs_driver_status_idx` ON `session_runs` (`driver_instance_id`,`status`);