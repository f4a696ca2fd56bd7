import { and, asc, eq, gt, sql } from "drizzle-orm";
import { newUlid, type RunStatus } from "@mosoo/contracts";
import { runEvents, sessionRuns, sessions } from "../../../platform/db/schema.js";
import type { RunEventType } from "@mosoo/contracts";
import { TERMINAL_RUN_EVENT_TYPES } from "@mosoo/contracts";
import { preparedQuery } from "../../../platform/db/prepared-query.js";
import type { DbHandle } from "./db-handle.js";

/** A session run row. */
export type RunRow = typeof sessionRuns.$inferSelect;
/** A run event row. */
export type RunEventRow = typeof runEvents.$inferSelect;

/** Reads and writes of `sessions`, `session_runs` and `run_events`. */
export const runRepository = {
  /** Inserts a session created at `nowMs` (ms). */
  insertSession(db: DbHandle, id: string, nowMs: number): void {
    db.insert(sessions).values({ id, createdAtMs: nowMs }).run();
  },
  /** The session with this id, or undefined. */
  findSession(db: DbHandle, id: string) {
    return db.select().from(sessions).where(eq(sessions.id, id)).get();
  },
  /** Deletes a session; its runs and their rows go by cascade unless the fence trigger refuses. */
  deleteSession(db: DbHandle, id: string): void {
    db.delete(sessions).where(eq(sessions.id, id)).run();
  },
  /** Inserts a run (a second active run of one Driver instance violates a unique index and throws). */
  insertRun(db: DbHandle, row: typeof sessionRuns.$inferInsert): void {
    db.insert(sessionRuns).values(row).run();
  },
  /** The run with this id, or undefined. */
  findRun(db: DbHandle, id: string): RunRow | undefined {
    return preparedQuery(db, "run.findRun", (h) =>
      h
        .select()
        .from(sessionRuns)
        .where(eq(sessionRuns.id, sql.placeholder("id")))
        .prepare(),
    ).get({ id });
  },
  /** The runs of a session. */
  listRunsOfSession(db: DbHandle, sessionId: string): RunRow[] {
    return db.select().from(sessionRuns).where(eq(sessionRuns.sessionId, sessionId)).all();
  },
  /** The instance's active run (at most one, by a partial unique index), or undefined. */
  findActiveRunOfDriver(db: DbHandle, driverInstanceId: string): RunRow | undefined {
    return db
      .select()
      .from(sessionRuns)
      .where(and(eq(sessionRuns.driverInstanceId, driverInstanceId), eq(sessionRuns.status, "active")))
      .get();
  },
  /** Compare-and-set of a run's status; true when it changed. */
  transitionRun(db: DbHandle, id: string, from: RunStatus, to: RunStatus, nowMs: number, errorJson?: string): boolean {
    const res = db
      .update(sessionRuns)
      .set({ status: to, updatedAtMs: nowMs, ...(errorJson !== undefined ? { errorJson } : {}) })
      .where(and(eq(sessionRuns.id, id), eq(sessionRuns.status, from)))
      .run();
    return res.changes > 0;
  },
  /** Deletes a run; its commands, effects and events go by cascade unless the fence trigger refuses. */
  deleteRun(db: DbHandle, id: string): void {
    db.delete(sessionRuns).where(eq(sessionRuns.id, id)).run();
  },
  /**
   * Appends one event to a run's stream with the next `seq` (1-based), computed in the same
   * INSERT statement (one statement, not a read then a write; callers hold the write transaction).
   * A second terminal event for a run violates the `run_events_one_terminal` unique index and throws.
   */
  appendEvent(db: DbHandle, runId: string, type: RunEventType, payload: Record<string, unknown>, nowMs: number): RunEventRow {
    return db
      .insert(runEvents)
      .values({
        id: newUlid(nowMs),
        runId,
        seq: sql`(SELECT coalesce(max(${runEvents.seq}), 0) + 1 FROM ${runEvents} WHERE ${runEvents.runId} = ${runId})`,
        type,
        terminal: TERMINAL_RUN_EVENT_TYPES.includes(type),
        payloadJson: JSON.stringify(payload),
        createdAtMs: nowMs,
      })
      .returning()
      .get();
  },
  /** Events of a run with `seq > afterSeq`, in order. */
  listEvents(db: DbHandle, runId: string, afterSeq: number): RunEventRow[] {
    return db
      .select()
      .from(runEvents)
      .where(and(eq(runEvents.runId, runId), gt(runEvents.seq, afterSeq)))
      .orderBy(asc(runEvents.seq))
      .all();
  },
};
