ALTER TABLE "external_tool_effects" ADD COLUMN "session_id" text;--> statement-breakpoint
ALTER TABLE "external_tool_effects" ADD COLUMN "repeat_of_effect_id" text;--> statement-breakpoint
CREATE INDEX "external_tool_effects_session_fingerprint_idx" ON "external_tool_effects" USING btree ("session_id","request_fingerprint");--> statement-breakpoint
ALTER TABLE "external_tool_effects" ADD CONSTRAINT "external_tool_effects_repeat_of_check" CHECK (repeat_of_effect_id IS NULL OR (length(repeat_of_effect_id) = 26 AND repeat_of_effect_id <> id));--> statement-breakpoint
-- Hand-written: existing effects get their run's session, so the repeat guard sees them too.
UPDATE "external_tool_effects" SET "session_id" = "session_runs"."session_id" FROM "session_runs" WHERE "session_runs"."id" = "external_tool_effects"."run_id";
