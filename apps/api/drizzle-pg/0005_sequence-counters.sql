ALTER TABLE "driver_instances" ADD COLUMN "last_command_seq" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "session_runs" ADD COLUMN "last_event_seq" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- HAND-EDIT: backfill the counters from the rows already numbered, so the next command / run event of an existing instance or run continues after its highest seq (the unique (driver_instance_id, seq) and (run_id, seq) indexes stay).
UPDATE "driver_instances" SET "last_command_seq" = (SELECT coalesce(max("seq"), 0) FROM "driver_commands" WHERE "driver_commands"."driver_instance_id" = "driver_instances"."id");--> statement-breakpoint
-- HAND-EDIT: the same for the run events of each run.
UPDATE "session_runs" SET "last_event_seq" = (SELECT coalesce(max("seq"), 0) FROM "run_events" WHERE "run_events"."run_id" = "session_runs"."id");
