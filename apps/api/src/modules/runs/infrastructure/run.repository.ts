// Reads and writes of sessions, runs and run events, in SQL both stores speak.
import { and, asc, eq, gt, sql } from "drizzle-orm";
import { newUlid, type RunStatus } from "@mosoo/contracts";
import type { runEvents, sessionRuns, sessions } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { RunEventType } from "@mosoo/contracts";
import { TERMINAL_RUN_EVENT_TYPES } from "@mosoo/contracts";
import { firstRow } from "../../../platform/db/rows.js";
import { driverColumns, powerOfTwoChunks } from "../../../platform/db/prepared-shapes.js";
import { positionalStatement, valuesRows } from "../../../platform/db/positional-statement.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** A session run row. */
export type RunRow = typeof sessionRuns.$inferSelect;
/** A run event row. */
export type RunEventRow = typeof runEvents.$inferSelect;
/** A session row. */
export type SessionRow = typeof sessions.$inferSelect;

/** Reads and writes of `sessions`, `session_runs` and `run_events` (dialect-neutral: docs/ARCHITECTURE.md). */
export const runRepository = {
  /** Inserts a session created at `nowMs` (ms) by the API key named `createdByKey` (null: not by a key). */
  async insertSession(tx: StoreTx, id: string, nowMs: number, createdByKey: string | null = null): Promise<void> {
    await tx.db.insert(tx.tables.sessions).values({ id, createdAtMs: nowMs, createdByKey });
  },
  /** The session with this id, or undefined. */
  async findSession(tx: StoreTx, id: string): Promise<SessionRow | undefined> {
    const s = tx.tables.sessions;
    return firstRow(await tx.db.select().from(s).where(eq(s.id, id)).limit(1));
  },
  /** Deletes a session; its runs and their rows go by cascade unless the fence trigger refuses. */
  async deleteSession(tx: StoreTx, id: string): Promise<void> {
    const s = tx.tables.sessions;
    await tx.db.delete(s).where(eq(s.id, id));
  },
  /** Inserts a run (a second active run of one Driver instance violates a unique index and throws). */
  async insertRun(tx: StoreTx, row: typeof sessionRuns.$inferInsert): Promise<void> {
    await tx.db.insert(tx.tables.sessionRuns).values(row);
  },
  /** The run with this id, or undefined. */
  async findRun(tx: StoreTx, id: string): Promise<RunRow | undefined> {
    const q = tx.prepared("run.findRun", (db) => {
      const r = tx.tables.sessionRuns;
      return db
        .select()
        .from(r)
        .where(eq(r.id, sql.placeholder("id")))
        .prepare();
    });
    return firstRow(await q.execute({ id }));
  },
  /** The runs of a session. */
  async listRunsOfSession(tx: StoreTx, sessionId: string): Promise<RunRow[]> {
    const r = tx.tables.sessionRuns;
    return tx.db.select().from(r).where(eq(r.sessionId, sessionId));
  },
  /** The instance's active run (at most one, by a partial unique index), or undefined. */
  async findActiveRunOfDriver(tx: StoreTx, driverInstanceId: string): Promise<RunRow | undefined> {
    const q = tx.prepared("run.findActiveRunOfDriver", (db) => {
      const r = tx.tables.sessionRuns;
      return db
        .select()
        .from(r)
        .where(and(eq(r.driverInstanceId, sql.placeholder("driverInstanceId")), eq(r.status, "active")))
        .limit(1)
        .prepare();
    });
    return firstRow(await q.execute({ driverInstanceId }));
  },
  /**
   * Takes session `id`'s row lock (a no-op write; PostgreSQL writes run at READ COMMITTED) so the
   * repeat guard's check and the intent it writes are one step for that session: two identical
   * enqueues in one session never both pass (see `guardRepeat` in repeat-guard.policy.ts). False when there is no such session.
   */
  async lockSession(tx: StoreTx, id: string): Promise<boolean> {
    const t = tx.tables.sessions;
    const rows = await tx.db
      .update(t)
      .set({ createdAtMs: sql`${t.createdAtMs}` })
      .where(eq(t.id, id))
      .returning({ id: t.id });
    return rows.length > 0;
  },
  /** Compare-and-set of a run's status; true when it changed. */
  async transitionRun(tx: StoreTx, id: string, from: RunStatus, to: RunStatus, nowMs: number, errorJson?: string): Promise<boolean> {
    const r = tx.tables.sessionRuns;
    const rows = await tx.db
      .update(r)
      .set({ status: to, updatedAtMs: nowMs, ...(errorJson !== undefined ? { errorJson } : {}) })
      .where(and(eq(r.id, id), eq(r.status, from)))
      .returning({ id: r.id });
    return rows.length > 0;
  },
  /** Deletes a run; its commands, effects and events go by cascade unless the fence trigger refuses. */
  async deleteRun(tx: StoreTx, id: string): Promise<void> {
    const r = tx.tables.sessionRuns;
    await tx.db.delete(r).where(eq(r.id, id));
  },
  /**
   * Appends one event to a run's stream with the next `seq` (1-based, gapless), in the caller's
   * transaction: on PostgreSQL taken by bumping the run's `last_event_seq` (`UPDATE … RETURNING`, a row
   * lock; one round trip with the insert), on SQLite inside the INSERT itself (one statement, see
   * `appendSqliteEvent` below). A second terminal event for a run violates the `run_events_one_terminal`
   * unique index and throws; so does a missing run.
   */
  async appendEvent(tx: StoreTx, runId: string, type: RunEventType, payload: Record<string, unknown>, nowMs: number): Promise<RunEventRow> {
    if (!tx.pgRows) return appendSqliteEvent(tx, runId, type, payload, nowMs);
    return (await runRepository.appendEventSeeingRun(tx, runId, type, payload, nowMs)).event;
  },
  /**
   * {@link appendEvent}, also returning the run's `status` as seen under the write lock: on PostgreSQL as
   * the `seq` bump saw it under the row's lock, on SQLite read in this transaction (two statements; the
   * store's one write lock keeps it current): the caller checks it without reading the run again.
   */
  async appendEventSeeingRun(
    tx: StoreTx,
    runId: string,
    type: RunEventType,
    payload: Record<string, unknown>,
    nowMs: number,
  ): Promise<{ event: RunEventRow; runStatus: RunStatus }> {
    if (tx.pgRows) {
      // PostgreSQL: the bump and the insert in one round trip (a data-modifying WITH; the same two writes).
      const r = tx.tables.sessionRuns;
      const bumped = tx.db
        .update(r)
        .set({ lastEventSeq: sql`${r.lastEventSeq} + 1` })
        .where(eq(r.id, runId))
        .returning({ seq: r.lastEventSeq, status: r.status });
      const event = newEventRow(runId, type, payload, nowMs);
      const inserted = tx.db.insert(tx.tables.runEvents).values({ ...event, seq: sql`(SELECT "last_event_seq" FROM bumped)` });
      const row = (
        await tx.pgRows(
          sql`WITH bumped AS (${bumped.getSQL()}), inserted AS (${inserted.getSQL()}) SELECT "last_event_seq", "status" FROM bumped`,
        )
      )[0];
      if (row === undefined) throw new Error(`no run ${runId} to append an event to`);
      return { event: { ...event, seq: Number(row.last_event_seq) }, runStatus: row.status as RunStatus };
    }
    // SQLite: the `seq` is taken inside the INSERT (see {@link appendSqliteEvent}); the status is read in the
    // same write transaction, which holds SQLite's only write lock, so no writer can change it in between.
    const run = await runRepository.findRun(tx, runId);
    if (run === undefined) throw new Error(`no run ${runId} to append an event to`);
    return { event: await appendSqliteEvent(tx, runId, type, payload, nowMs), runStatus: run.status };
  },
  /**
   * Appends `events` (each to its own run's stream) in the caller's transaction, in the order given:
   * per run ONE `seq` reservation for all of its events (the runs in id order, so that two transactions
   * appending to the same runs lock their rows in one order), then the rows in multi-row INSERTs (at most
   * {@link EVENT_INSERT_CHUNK} rows per statement). The `seq`s are the ones {@link appendEvent} called once
   * per event, in this order, would have given: 1-based, gapless, in commit order. The reservation is
   * PostgreSQL's `UPDATE session_runs SET last_event_seq = last_event_seq + n … RETURNING` (the run's row
   * lock, as one append takes it) and SQLite's read of the run's highest `seq` through `run_events_run_seq`
   * (under the store's one write lock, as {@link appendSqliteEvent} takes it). The unique index on
   * (run, seq) refuses a duplicate either way. Returns the rows as written, in input order.
   * @throws Error on a missing run (PostgreSQL: no row to bump; SQLite: the foreign key), or the store's
   *   constraint error on a second terminal event (`run_events_one_terminal`).
   */
  async appendEvents(
    tx: StoreTx,
    events: ReadonlyArray<{ runId: string; type: RunEventType; payload: Record<string, unknown> }>,
    nowMs: number,
  ): Promise<RunEventRow[]> {
    const rows: RunEventRow[] = [];
    const countByRun = new Map<string, number>();
    for (const e of events) countByRun.set(e.runId, (countByRun.get(e.runId) ?? 0) + 1);
    const nextSeq = new Map<string, number>();
    // reserved in run-id order, whatever the input order: two transactions that append to the same runs
    // then take PostgreSQL's run row locks in the same order and cannot deadlock each other
    for (const runId of [...countByRun.keys()].sort()) nextSeq.set(runId, await reserveEventSeqs(tx, runId, countByRun.get(runId)!));
    for (const e of events) {
      const seq = nextSeq.get(e.runId)!;
      nextSeq.set(e.runId, seq + 1);
      rows.push({ ...newEventRow(e.runId, e.type, e.payload, nowMs), seq });
    }
    let at = 0;
    for (const size of powerOfTwoChunks(rows.length, EVENT_INSERT_CHUNK)) {
      await insertEventRows(tx, rows.slice(at, at + size));
      at += size;
    }
    return rows;
  },
  /**
   * The run an enqueue checks, by a plain read. On SQLite the read runs inside the store's one write
   * transaction (`BEGIN IMMEDIATE`: no other writer until it commits), so the run's `status` it returns as
   * `statusUnderWriteLock` cannot change before the intent's writes; on PostgreSQL (READ COMMITTED) it can,
   * so there the status comes from the event `seq` bump that the intent's writes take (no `statusUnderWriteLock`).
   * Undefined when there is no such run.
   */
  async findRunForIntent(tx: StoreTx, runId: string): Promise<{ run: RunRow; statusUnderWriteLock?: RunStatus } | undefined> {
    const run = await runRepository.findRun(tx, runId);
    if (run === undefined) return undefined;
    return tx.pgRows ? { run } : { run, statusUnderWriteLock: run.status };
  },
  /** Events of a run with `seq > afterSeq`, in order. */
  async listEvents(tx: StoreTx, runId: string, afterSeq: number): Promise<RunEventRow[]> {
    const e = tx.tables.runEvents;
    return tx.db
      .select()
      .from(e)
      .where(and(eq(e.runId, runId), gt(e.seq, afterSeq)))
      .orderBy(asc(e.seq));
  },
};

/** {@link appendSqliteEvent}'s statement (`StoreTx.sqliteStatement`): id, run id (twice), type, terminal (0/1), payload JSON, created at (ms). */
const SQLITE_APPEND_EVENT =
  `INSERT INTO "run_events" ("id", "run_id", "seq", "type", "terminal", "payload_json", "created_at_ms") ` +
  `VALUES (?, ?, (SELECT coalesce(max("seq"), 0) + 1 FROM "run_events" WHERE "run_id" = ?), ?, ?, ?, ?) RETURNING "seq"`;
/** Rows per multi-row event INSERT of {@link runRepository.appendEvents} at most (a power of two): 7 parameters each, far below both stores' limits (SQLite 32,766, PostgreSQL 65,535). */
const EVENT_INSERT_CHUNK = 256;

/** The event columns a multi-row INSERT writes, in order. */
const EVENT_COLUMNS = ["id", "runId", "seq", "type", "terminal", "payloadJson", "createdAtMs"] as const;
/** The multi-row event INSERT's text per row count (built once per count). */
const eventInsertTexts = new Map<number, string>();

/**
 * Inserts `rows` (a power of two of them, see `powerOfTwoChunks`) in one multi-row INSERT of a fixed text per row
 * count, its values positional (`positionalStatement`: no named argument per column per row to fill).
 */
async function insertEventRows(tx: StoreTx, rows: readonly RunEventRow[]): Promise<void> {
  const columns = driverColumns(tx.tables.runEvents, EVENT_COLUMNS);
  let text = eventInsertTexts.get(rows.length);
  if (text === undefined) {
    const names = columns.names.join(", ");
    text = `INSERT INTO "run_events" (${names}) VALUES ${valuesRows(
      rows.length,
      EVENT_COLUMNS.map(() => "?"),
    )}`;
    eventInsertTexts.set(rows.length, text);
  }
  const values: unknown[] = [];
  for (const row of rows) values.push(...columns.values(row));
  await positionalStatement(tx, `run.insertEvents:${rows.length}`, text, values, false);
}

/**
 * Reserves `n` (≥ 1) consecutive event `seq`s of run `runId` in the caller's transaction and returns the
 * first. PostgreSQL: bumps `last_event_seq` by `n` (the run's row lock, held to commit); SQLite: the
 * run's highest `seq` plus one, read through `run_events_run_seq` under the store's one write lock (the
 * rows the caller then inserts take them; SQLite keeps no counter, see {@link appendSqliteEvent}).
 * @throws Error when PostgreSQL has no such run.
 */
async function reserveEventSeqs(tx: StoreTx, runId: string, n: number): Promise<number> {
  if (tx.pgRows) {
    const r = tx.tables.sessionRuns;
    const bumped = firstRow(
      await tx.db
        .update(r)
        .set({ lastEventSeq: sql`${r.lastEventSeq} + ${n}` })
        .where(eq(r.id, runId))
        .returning({ seq: r.lastEventSeq }),
    );
    if (bumped === undefined) throw new Error(`no run ${runId} to append events to`);
    return Number(bumped.seq) - n + 1;
  }
  const q = tx.prepared("run.lastEventSeq", (db) => {
    const e = tx.tables.runEvents;
    return db
      .select({ seq: sql<number>`coalesce(max(${e.seq}), 0)` })
      .from(e)
      .where(eq(e.runId, sql.placeholder("runId")))
      .prepare();
  });
  return Number(firstRow(await q.execute({ runId }))?.seq ?? 0) + 1;
}

/**
 * SQLite's event append: one `INSERT` whose `seq` is the run's highest plus one (1-based), read in that
 * statement through the unique `run_events_run_seq` index (a seek to the run's last entry). One statement
 * is atomic, and every SQLite write transaction holds the store's only write lock (`BEGIN IMMEDIATE`), so no
 * other writer can take the same `seq` (the unique index would refuse it anyway). The numbering matches
 * PostgreSQL's counter (`session_runs.last_event_seq`): gapless, in commit order, never reused, because a
 * run's events are deleted only with the run itself. Throws the store's constraint error on a missing run
 * (foreign key) or a second terminal event (`run_events_one_terminal`).
 */
async function appendSqliteEvent(
  tx: StoreTx,
  runId: string,
  type: RunEventType,
  payload: Record<string, unknown>,
  nowMs: number,
): Promise<RunEventRow> {
  const row = newEventRow(runId, type, payload, nowMs);
  // Compiled once by the store and run without drizzle's per-call placeholder filling and row mapping.
  if (!tx.sqliteStatement) throw new Error("appendSqliteEvent needs a SQLite unit of work (StoreTx.sqliteStatement)");
  const inserted = tx.sqliteStatement(SQLITE_APPEND_EVENT).get(row.id, runId, runId, type, row.terminal ? 1 : 0, row.payloadJson, nowMs) as
    { seq: number } | undefined;
  if (inserted === undefined) throw new Error(`run ${runId}: the event insert returned no row`);
  return { ...row, seq: inserted.seq };
}

/** A run event's row without its `seq` (which each dialect takes in its own statement): a new ULID at `nowMs` (ms since the epoch), the payload as JSON. */
function newEventRow(runId: string, type: RunEventType, payload: Record<string, unknown>, nowMs: number): Omit<RunEventRow, "seq"> {
  return {
    id: newUlid(nowMs),
    runId,
    type,
    terminal: TERMINAL_RUN_EVENT_TYPES.includes(type),
    payloadJson: JSON.stringify(payload),
    createdAtMs: nowMs,
  };
}
