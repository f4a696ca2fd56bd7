-- HAND-EDIT: custom migration (drizzle-kit generate --custom): the fence trigger, docs/DESIGN.md §3 rule 9.
-- No delete (direct, or by ON DELETE CASCADE from a command, run, session or Driver instance) may remove
-- an effect while it is `executing` or `unknown`. The PostgreSQL twin of the SQLite trigger of
-- apps/api/drizzle/0001 (`RAISE(ABORT, 'effect.fence_retained')`): the same message, SQLSTATE 23001
-- (restrict_violation) and the trigger's name as the error's constraint, which
-- src/platform/db/postgres/pg-errors.ts maps to `fence_retained`. PostgreSQL alters tables in place,
-- so later migrations never drop this trigger (unlike SQLite's table rebuilds).
CREATE FUNCTION external_tool_effects_fence_retained() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'effect.fence_retained'
    USING ERRCODE = 'restrict_violation',
          CONSTRAINT = 'external_tool_effects_fence_retained',
          TABLE = 'external_tool_effects',
          DETAIL = format('effect %s is %s', OLD.id, OLD.status);
END;
$$;
--> statement-breakpoint
CREATE TRIGGER external_tool_effects_fence_retained
  BEFORE DELETE ON external_tool_effects
  FOR EACH ROW
  WHEN (OLD.status IN ('executing', 'unknown'))
  EXECUTE FUNCTION external_tool_effects_fence_retained();
