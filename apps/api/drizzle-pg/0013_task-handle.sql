-- drizzle-kit generated; the set-once trigger at the end is hand-written.
ALTER TABLE "external_tool_effects" ADD COLUMN "task_id" text;--> statement-breakpoint
ALTER TABLE "external_tool_effects" ADD CONSTRAINT "external_tool_effects_task_id_check" CHECK (task_id IS NULL OR (length(task_id) BETWEEN 1 AND 256 AND task_id !~ '[^!-~]' AND attempt_count > 0));--> statement-breakpoint
-- Hand-written: a stored MCP task id never changes (docs/DESIGN.md §4 "Tasks"), the twin of SQLite's
-- external_tool_effects_task_id_set_once trigger (the same message; SQLSTATE 23001 restrict_violation).
CREATE FUNCTION external_tool_effects_task_id_set_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'effect.task_id_set_once'
    USING ERRCODE = 'restrict_violation',
          CONSTRAINT = 'external_tool_effects_task_id_set_once',
          TABLE = 'external_tool_effects',
          DETAIL = format('effect %s already holds task id %s', OLD.id, OLD.task_id);
END;
$$;
--> statement-breakpoint
CREATE TRIGGER external_tool_effects_task_id_set_once
  BEFORE UPDATE OF task_id ON external_tool_effects
  FOR EACH ROW
  WHEN (OLD.task_id IS NOT NULL AND NEW.task_id IS DISTINCT FROM OLD.task_id)
  EXECUTE FUNCTION external_tool_effects_task_id_set_once();
