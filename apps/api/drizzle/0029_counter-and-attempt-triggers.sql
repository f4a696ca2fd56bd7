-- HAND-EDIT (custom migration; drizzle's schema cannot express triggers, so the snapshot does not change). SQLite only: PostgreSQL writes the same rows in one data-modifying WITH per step and gets no trigger. Two triggers of mechanical bookkeeping, the same whoever writes the row, so that a lifecycle's enqueue and claim each take one statement fewer (SQLite has no data-modifying WITH):
-- 1. `driver_commands_advance_last_command_seq`: after a command INSERT, the Driver instance's `last_command_seq` becomes the command's `seq` when that is higher (the counter is the highest `seq` the instance ever numbered; it never goes down, so a deleted command's `seq` is never handed out again). SQLite's writers take the `seq` inside the INSERT as `last_command_seq + 1` (`insertNumbered` / `insertOfActiveRun` in command.repository.ts); a writer that bumped the counter first (the pre-trigger way) changes nothing here (its `seq` is not higher), and a bulk writer that inserts numbered rows leaves the counter at its highest `seq`. Gapless numbering stays the writers' rule: every one of them numbers from the counter.
-- 2. `external_tool_effects_attempt_on_dispatch`: a dispatch (an UPDATE that raises `attempt_count`, the claim's `intent -> executing` compare-and-set) inserts that attempt's row: attempt `attempt_count`, `executing`, on the current connection of the Driver instance that owns the effect's command (the claim's compare-and-set holds only while that instance owns the command and is `connected` on the claiming connection, so it is that one; no connection: the attempt's NOT NULL refuses the claim), started at `last_dispatched_at_ms`. A raise by other than one, from another status than `intent` (an `unknown` effect is never dispatched again: docs/DESIGN.md §3), or to another status than `executing`, is refused (ABORT): every dispatch is exactly that. An UPDATE that loses its compare-and-set changes no row and fires nothing, so a second claim writes no attempt. Rows inserted directly (history generators, seeds) carry their attempts themselves.
-- A later drizzle-kit rebuild of `driver_commands` or `external_tool_effects` (DROP TABLE + rename) drops its triggers and must recreate them (apps/api/tests/store-migration.test.ts checks they exist).
CREATE TRIGGER `driver_commands_advance_last_command_seq`
AFTER INSERT ON `driver_commands`
BEGIN
  UPDATE `driver_instances` SET `last_command_seq` = NEW.`seq`
  WHERE `id` = NEW.`driver_instance_id` AND `last_command_seq` < NEW.`seq`;
END;
--> statement-breakpoint
CREATE TRIGGER `external_tool_effects_attempt_on_dispatch`
AFTER UPDATE OF `attempt_count` ON `external_tool_effects`
WHEN NEW.`attempt_count` <> OLD.`attempt_count`
BEGIN
  SELECT RAISE(ABORT, 'external_tool_effects.attempt_count rises by one, from intent to executing')
  WHERE NEW.`attempt_count` <> OLD.`attempt_count` + 1 OR NEW.`status` <> 'executing' OR OLD.`status` <> 'intent';
  INSERT INTO `external_tool_effect_attempts` (`effect_id`, `attempt`, `status`, `connection_id`, `started_at_ms`)
  VALUES (
    NEW.`id`,
    NEW.`attempt_count`,
    'executing',
    (SELECT d.`connection_id` FROM `driver_commands` c JOIN `driver_instances` d ON d.`id` = c.`driver_instance_id` WHERE c.`id` = NEW.`command_id`),
    NEW.`last_dispatched_at_ms`
  );
END;
