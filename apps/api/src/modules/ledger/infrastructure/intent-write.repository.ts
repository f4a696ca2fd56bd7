// The enqueue's writes (command with its per-instance seq, effect intent, run event) as one PostgreSQL round trip, or three SQLite statements.
import { eq, sql } from "drizzle-orm";
import type { DriverInstanceStatus, RunEventType, RunStatus } from "@mosoo/contracts";
import { newUlid, TERMINAL_RUN_EVENT_TYPES } from "@mosoo/contracts";
import type { externalToolEffects } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { commandTables, runTables, type QueuedCommand } from "../application/owned-tables.port.js";
import { effectRepository } from "./effect.repository.js";

/**
 * One intent to write: the command row without its `seq` (taken from the instance's counter), the
 * effect row, and the run event (`type`, `payload`) at the run's next `seq`. `runStatusUnderWriteLock`: the
 * run's status as the caller read it in this transaction, when that read stays current until the commit
 * (SQLite: one writer at a time; the runs module's `findRunForIntent`); PostgreSQL ignores it and returns the
 * status its event `seq` bump saw under the run's row lock. `nowMs`: ms since the epoch.
 */
export interface IntentWrite {
  command: QueuedCommand;
  /**
   * SQLite: the command is written already, in this transaction, at this `seq` (the runs module's
   * `insertOfActiveRun`, which folds the run's read into the command's INSERT), with the instance's status as
   * that INSERT saw it; then only the effect and the event are written here.
   */
  commandWritten?: { seq: number; driverStatus: DriverInstanceStatus };
  effect: typeof externalToolEffects.$inferInsert;
  event: { runId: string; type: RunEventType; payload: Record<string, unknown> };
  runStatusUnderWriteLock?: RunStatus;
  nowMs: number;
}

/** SQLite: inserts the command numbered inside its INSERT (`insertNumbered`: the counter follows by migration 0029's trigger). */
const insertNumbered = async (tx: StoreTx, command: QueuedCommand): Promise<{ seq: number; driverStatus: DriverInstanceStatus }> => {
  const { seq, status } = await commandTables().insertNumbered(tx, command);
  return { seq, driverStatus: status };
};

/** Writes of {@link IntentWrite} (dialect-neutral; one data-modifying `WITH` on PostgreSQL: docs/ARCHITECTURE.md). */
export const intentWriteRepository = {
  /**
   * Inserts the command at the Driver instance's next `seq` (`last_command_seq + 1`; on SQLite unless
   * `commandWritten` says it is written already), the effect and the run event, in the caller's transaction
   * (SQLite: three statements, two with `commandWritten`: the command's `seq` taken inside its INSERT with the
   * counter following by migration 0029's trigger, the event's inside its INSERT, plus a read of the run when no
   * `runStatusUnderWriteLock` was given; PostgreSQL: one round trip that bumps the instance's counter and the
   * run's `last_event_seq` and inserts the three rows). Returns the command's `seq` and the instance's and the
   * run's `status` as seen under the write lock (the instance's: PostgreSQL's counter bump, SQLite's command
   * INSERT; the run's: PostgreSQL's `seq` bump, or on SQLite the read). Throws the store's constraint error on a broken rule (unique, CHECK, a missing
   * instance or run), which rolls the transaction back.
   */
  async write(tx: StoreTx, w: IntentWrite): Promise<{ seq: number; driverStatus: DriverInstanceStatus; runStatus: RunStatus }> {
    const { event } = w;
    if (!tx.pgRows) {
      const { seq, driverStatus } = w.commandWritten ?? (await insertNumbered(tx, w.command));
      await effectRepository.insert(tx, w.effect);
      if (w.runStatusUnderWriteLock !== undefined) {
        await runTables().appendEvent(tx, event.runId, event.type, event.payload, w.nowMs);
        return { seq, driverStatus, runStatus: w.runStatusUnderWriteLock };
      }
      const { runStatus } = await runTables().appendEventSeeingRun(tx, event.runId, event.type, event.payload, w.nowMs);
      return { seq, driverStatus, runStatus };
    }
    const { driverInstances: d, sessionRuns: r, driverCommands: c, externalToolEffects: e, runEvents: ev } = tx.tables;
    const numbered = tx.db
      .update(d)
      .set({ lastCommandSeq: sql`${d.lastCommandSeq} + 1` })
      .where(eq(d.id, w.command.driverInstanceId))
      .returning({ seq: d.lastCommandSeq, status: d.status });
    const bumped = tx.db
      .update(r)
      .set({ lastEventSeq: sql`${r.lastEventSeq} + 1` })
      .where(eq(r.id, event.runId))
      .returning({ seq: r.lastEventSeq, status: r.status });
    const command = tx.db.insert(c).values({ ...w.command, seq: sql`(SELECT "last_command_seq" FROM numbered)` });
    const effect = tx.db.insert(e).values(w.effect);
    const eventRow = tx.db.insert(ev).values({
      id: newUlid(w.nowMs),
      runId: event.runId,
      seq: sql`(SELECT "last_event_seq" FROM bumped)`,
      type: event.type,
      terminal: TERMINAL_RUN_EVENT_TYPES.includes(event.type),
      payloadJson: JSON.stringify(event.payload),
      createdAtMs: w.nowMs,
    });
    const rows = await tx.pgRows(
      sql`WITH numbered AS (${numbered.getSQL()}), bumped AS (${bumped.getSQL()}), command AS (${command.getSQL()}),
          effect AS (${effect.getSQL()}), event AS (${eventRow.getSQL()})
          SELECT "last_command_seq", numbered."status", (SELECT "status" FROM bumped) AS "run_status" FROM numbered`,
    );
    const row = rows[0];
    if (row === undefined) throw new Error(`no Driver instance ${w.command.driverInstanceId} to number a command of`);
    return {
      seq: Number(row.last_command_seq),
      driverStatus: row.status as DriverInstanceStatus,
      runStatus: row.run_status as RunStatus,
    };
  },
};
