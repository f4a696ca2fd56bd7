ALTER TABLE "driver_commands" ADD COLUMN "trace_parent" text;--> statement-breakpoint
ALTER TABLE "driver_commands" ADD COLUMN "trace_state" text;--> statement-breakpoint
ALTER TABLE "driver_commands" ADD CONSTRAINT "driver_commands_trace_parent_check" CHECK (trace_parent IS NULL OR length(trace_parent) = 55);--> statement-breakpoint
ALTER TABLE "driver_commands" ADD CONSTRAINT "driver_commands_trace_state_check" CHECK (trace_state IS NULL OR (trace_parent IS NOT NULL AND length(trace_state) <= 512));