-- DESIGN.md §3 rule 9: no delete (direct, or by ON DELETE CASCADE from a run, session or Driver
-- instance) may remove an effect while it is `executing` or `unknown`. The service layer refuses
-- such deletes with a typed error first; this trigger is the database's own guarantee.
CREATE TRIGGER `external_tool_effects_fence_retained`
BEFORE DELETE ON `external_tool_effects`
WHEN OLD.`status` IN ('executing', 'unknown')
BEGIN
  SELECT RAISE(ABORT, 'effect.fence_retained');
END;
