-- HAND-EDIT: custom migration (drizzle-kit generate --custom): the fence trigger against TRUNCATE, docs/DESIGN.md §3 rule 9.
-- The row trigger of 0001 (BEFORE DELETE ... FOR EACH ROW) does not fire on TRUNCATE, and
-- `TRUNCATE driver_instances CASCADE` (or of driver_commands, session_runs, sessions: every table the
-- effects table references, directly or through another, is one whose CASCADE truncation empties
-- external_tool_effects) would remove effects in `executing` or `unknown`. This statement trigger
-- refuses any such TRUNCATE while one effect is `executing` or `unknown`, with the same message,
-- SQLSTATE 23001 (restrict_violation) and constraint name as 0001, so pg-errors.ts maps it to
-- `fence_retained` too. SQLite has no TRUNCATE (its `DELETE FROM` without WHERE fires the row trigger).
CREATE FUNCTION external_tool_effects_fence_retained_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  fenced bigint;
BEGIN
  SELECT count(*) INTO fenced FROM external_tool_effects WHERE status IN ('executing', 'unknown');
  IF fenced > 0 THEN
    RAISE EXCEPTION 'effect.fence_retained'
      USING ERRCODE = 'restrict_violation',
            CONSTRAINT = 'external_tool_effects_fence_retained',
            TABLE = 'external_tool_effects',
            DETAIL = format('TRUNCATE %s refused: %s effect(s) executing or unknown', TG_TABLE_NAME, fenced);
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER external_tool_effects_fence_retained_truncate
  BEFORE TRUNCATE ON external_tool_effects
  FOR EACH STATEMENT EXECUTE FUNCTION external_tool_effects_fence_retained_truncate();
--> statement-breakpoint
CREATE TRIGGER driver_commands_fence_retained_truncate
  BEFORE TRUNCATE ON driver_commands
  FOR EACH STATEMENT EXECUTE FUNCTION external_tool_effects_fence_retained_truncate();
--> statement-breakpoint
CREATE TRIGGER driver_instances_fence_retained_truncate
  BEFORE TRUNCATE ON driver_instances
  FOR EACH STATEMENT EXECUTE FUNCTION external_tool_effects_fence_retained_truncate();
--> statement-breakpoint
CREATE TRIGGER session_runs_fence_retained_truncate
  BEFORE TRUNCATE ON session_runs
  FOR EACH STATEMENT EXECUTE FUNCTION external_tool_effects_fence_retained_truncate();
--> statement-breakpoint
CREATE TRIGGER sessions_fence_retained_truncate
  BEFORE TRUNCATE ON sessions
  FOR EACH STATEMENT EXECUTE FUNCTION external_tool_effects_fence_retained_truncate();
