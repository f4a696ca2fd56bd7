/** One read of what a Driver's claim, command update or attempt report judges: its instance with its command, effect or attempt. */
import { and, eq, sql } from "drizzle-orm";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { CommandRow } from "./command.repository.js";
import type { DriverInstanceRow } from "./driver-instance.repository.js";
import type { AttemptRow, EffectRow } from "../../ledger/application/effect-rows.service.js";

/**
 * The Driver instance (undefined: no such instance), its command `commandId` (undefined: none, or another
 * instance's: a Driver never sees another instance's commands) and that command's effect (undefined: none).
 */
export interface CommandContext {
  driver: DriverInstanceRow | undefined;
  command: CommandRow | undefined;
  effect: EffectRow | undefined;
}

/**
 * The Driver instance (undefined: no such instance), its effect `effectId` (undefined: none, or another
 * instance's) and that effect's attempt `attempt` (undefined: none).
 */
export interface AttemptReportContext {
  driver: DriverInstanceRow | undefined;
  effect: EffectRow | undefined;
  attempt: AttemptRow | undefined;
}

/** Reads across `driver_instances`, `driver_commands`, `external_tool_effects` and their attempts (dialect-neutral: docs/ARCHITECTURE.md). */
export const commandContextRepository = {
  /**
   * The instance, its command and the command's effect in one statement (primary keys and the effect's
   * unique `command_id`): what `findById`, `findOwned` and `findByCommand` would read one after another.
   */
  async read(tx: StoreTx, driverInstanceId: string, commandId: string): Promise<CommandContext> {
    const q = tx.prepared("commandContext.read", (db) => {
      const { driverInstances: d, driverCommands: c, externalToolEffects: e } = tx.tables;
      return db
        .select({ driver: d, command: c, effect: e })
        .from(d)
        .leftJoin(c, and(eq(c.id, sql.placeholder("commandId")), eq(c.driverInstanceId, d.id)))
        .leftJoin(e, eq(e.commandId, c.id))
        .where(eq(d.id, sql.placeholder("driverInstanceId")))
        .prepare();
    });
    const row = (await q.execute({ driverInstanceId, commandId }))[0];
    return { driver: row?.driver ?? undefined, command: row?.command ?? undefined, effect: row?.effect ?? undefined };
  },
  /**
   * The instance, its effect and the effect's attempt `attempt` in one statement (primary keys): what
   * `findById`, `findOwned` and `listAttempts` would read one after another.
   */
  async readAttemptReport(tx: StoreTx, driverInstanceId: string, effectId: string, attempt: number): Promise<AttemptReportContext> {
    const q = tx.prepared("commandContext.readAttemptReport", (db) => {
      const { driverInstances: d, externalToolEffects: e, externalToolEffectAttempts: a } = tx.tables;
      return db
        .select({ driver: d, effect: e, attempt: a })
        .from(d)
        .leftJoin(e, and(eq(e.id, sql.placeholder("effectId")), eq(e.driverInstanceId, d.id)))
        .leftJoin(a, and(eq(a.effectId, e.id), eq(a.attempt, sql.placeholder("attempt"))))
        .where(eq(d.id, sql.placeholder("driverInstanceId")))
        .prepare();
    });
    const row = (await q.execute({ driverInstanceId, effectId, attempt }))[0];
    return { driver: row?.driver ?? undefined, effect: row?.effect ?? undefined, attempt: row?.attempt ?? undefined };
  },
};
