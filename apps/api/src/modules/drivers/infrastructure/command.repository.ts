// Reads and compare-and-set writes of the Driver command rows (`driver_commands`), in SQL both stores speak.
import { and, asc, eq, exists, inArray, isNull, ne, or, sql } from "drizzle-orm";
import type { CommandStatus, DriverInstanceStatus } from "@mosoo/contracts";
import type { driverCommands } from "../../../platform/db/sqlite/sqlite-schema.js";
import { firstRow } from "../../../platform/db/rows.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { argumentsFor, placeholdersFor, powerOfTwoChunks, shapeOf } from "../../../platform/db/prepared-shapes.js";
import { positionalStatement, valuesRows } from "../../../platform/db/positional-statement.js";

/** A Driver command row. */
export type CommandRow = typeof driverCommands.$inferSelect;

/**
 * `terminal_at_ms IS NULL` (the command is `queued`, `delivered` or `accepted`: driver_commands_terminal_check), the
 * condition of the partial index `driver_commands_open_idx`, as a literal: a bound parameter would not let the planner use it.
 */
const OPEN = sql.raw(`"terminal_at_ms" IS NULL`);

/** Commands per multi-row UPDATE of {@link commandRepository.transitionManyToTerminal} at most (a power of two; see `powerOfTwoChunks`): 5 parameters each, far below both stores' limits. */
const TRANSITION_CHUNK = 256;

/** {@link commandRepository.transitionManyToTerminal}'s texts, by column and row count (built once each). */
const transitionManyTexts = new Map<string, string>();

/** The text of a multi-row terminal compare-and-set of `rows` commands writing `column`: parameters `to`, `nowMs` twice, (id, json) per row, then (id, from) per row. */
function transitionManyText(column: "resultJson" | "errorJson", rows: number): string {
  const key = `${column}:${rows}`;
  let text = transitionManyTexts.get(key);
  if (text === undefined) {
    const target = column === "resultJson" ? "result_json" : "error_json";
    // A row-value IN list: a seek of the primary key per pair whatever the planner's statistics say (an
    // `UPDATE … FROM (VALUES …)` join may be planned as a scan of the table once its statistics are stale).
    text =
      `UPDATE "driver_commands" SET "status" = ?, "updated_at_ms" = ?, "terminal_at_ms" = ?, ` +
      `"${target}" = CASE "id" ${Array.from({ length: rows }, () => "WHEN ? THEN ?").join(" ")} END ` +
      `WHERE ("id", "status") IN (VALUES ${valuesRows(rows, ["?", "?"])}) RETURNING "id"`;
    transitionManyTexts.set(key, text);
  }
  return text;
}

/** Reads and compare-and-set writes of `driver_commands` (dialect-neutral: docs/ARCHITECTURE.md). */
export const commandRepository = {
  /**
   * The next per-instance sequence number (1-based), taken by bumping the instance's
   * `last_command_seq` (`UPDATE … RETURNING`: atomic in both dialects, a row lock in PostgreSQL, so two
   * writers never get the same `seq`). Call inside the inserting transaction.
   * Also returns the instance's `status` as the bump saw it, under the row's lock: the caller checks it
   * without reading the row again.
   * @throws Error when the Driver instance does not exist.
   */
  async nextSeq(tx: StoreTx, driverInstanceId: string): Promise<{ seq: number; status: DriverInstanceStatus }> {
    const q = tx.prepared("command.nextSeq", (db) => {
      const d = tx.tables.driverInstances;
      return db
        .update(d)
        .set({ lastCommandSeq: sql`${d.lastCommandSeq} + 1` })
        .where(eq(d.id, sql.placeholder("driverInstanceId")))
        .returning({ seq: d.lastCommandSeq, status: d.status })
        .prepare();
    });
    const row = (await q.execute({ driverInstanceId }))[0];
    if (row === undefined) throw new Error(`no Driver instance ${driverInstanceId} to number a command of`);
    return row;
  },
  /**
   * SQLite's enqueue in one statement fewer: bumps `last_command_seq` of the Driver instance of run `runId` only
   * when that run is `active` (`UPDATE driver_instances … WHERE id = (SELECT driver_instance_id FROM session_runs
   * WHERE id = ? AND status = 'active') RETURNING …`, the run's session read in the `RETURNING`), so the run's read
   * and the command's `seq` are one statement. Returns the new `seq`, the instance's id and `status`, and the run's
   * `sessionId`; undefined, with nothing written, when there is no such active run (the caller reads the run to say
   * why). Inside a SQLite write transaction (`BEGIN IMMEDIATE`: the store's one writer), the run's status stays what
   * this statement saw until the commit. On PostgreSQL (READ COMMITTED: a run's status can change under a later
   * statement) it writes nothing and returns undefined: its intent numbers the command in its own round trip.
   */
  async nextSeqOfActiveRun(
    tx: StoreTx,
    runId: string,
  ): Promise<{ seq: number; driverInstanceId: string; driverStatus: DriverInstanceStatus; sessionId: string } | undefined> {
    if (tx.pgRows) return undefined;
    const q = tx.prepared("command.nextSeqOfActiveRun", (db) => {
      const { driverInstances: d, sessionRuns: r } = tx.tables;
      return db
        .update(d)
        .set({ lastCommandSeq: sql`${d.lastCommandSeq} + 1` })
        .where(
          eq(d.id, sql`(SELECT ${r.driverInstanceId} FROM ${r} WHERE ${r.id} = ${sql.placeholder("runId")} AND ${r.status} = 'active')`),
        )
        .returning({
          seq: d.lastCommandSeq,
          driverInstanceId: d.id,
          driverStatus: d.status,
          sessionId: sql<string>`(SELECT ${r.sessionId} FROM ${r} WHERE ${r.id} = ${sql.placeholder("runId")})`,
        })
        .prepare();
    });
    return (await q.execute({ runId }))[0];
  },
  /** Inserts one row (throws on a constraint violation: CHECK, unique, foreign key). */
  async insert(tx: StoreTx, row: typeof driverCommands.$inferInsert): Promise<void> {
    const shape = shapeOf(row);
    const q = tx.prepared(`command.insert:${shape.join(",")}`, (db) =>
      db
        .insert(tx.tables.driverCommands)
        .values(placeholdersFor(shape) as unknown as typeof driverCommands.$inferInsert)
        .prepare(),
    );
    await q.execute(argumentsFor(shape, row));
  },
  /** The row with this id, or undefined. */
  async findById(tx: StoreTx, id: string): Promise<CommandRow | undefined> {
    const q = tx.prepared("command.findById", (db) => {
      const c = tx.tables.driverCommands;
      return db
        .select()
        .from(c)
        .where(eq(c.id, sql.placeholder("id")))
        .prepare();
    });
    return firstRow(await q.execute({ id }));
  },
  /** A command only if it belongs to `driverInstanceId` (a Driver never sees another instance's commands). */
  async findOwned(tx: StoreTx, id: string, driverInstanceId: string): Promise<CommandRow | undefined> {
    const q = tx.prepared("command.findOwned", (db) => {
      const c = tx.tables.driverCommands;
      return db
        .select()
        .from(c)
        .where(and(eq(c.id, sql.placeholder("id")), eq(c.driverInstanceId, sql.placeholder("driverInstanceId"))))
        .prepare();
    });
    return firstRow(await q.execute({ id, driverInstanceId }));
  },
  /** Every row of run `runId`, oldest first. */
  async listByRun(tx: StoreTx, runId: string): Promise<CommandRow[]> {
    const c = tx.tables.driverCommands;
    return tx.db.select().from(c).where(eq(c.runId, runId)).orderBy(asc(c.seq));
  },
  /** Commands of the instance without a terminal receipt (`queued`, `delivered`, `accepted`), in `seq` order (the partial open-command index). */
  async listNonTerminalOfDriver(tx: StoreTx, driverInstanceId: string): Promise<CommandRow[]> {
    const c = tx.tables.driverCommands;
    return tx.db
      .select()
      .from(c)
      .where(and(eq(c.driverInstanceId, driverInstanceId), OPEN))
      .orderBy(asc(c.seq));
  },
  /** The lowest-seq non-terminal command not yet delivered on `connectionId` (see `CommandQueueService` in command-queue.service.ts). */
  async findUndeliveredOnConnection(tx: StoreTx, driverInstanceId: string, connectionId: string): Promise<CommandRow | undefined> {
    const c = tx.tables.driverCommands;
    return firstRow(
      await tx.db
        .select()
        .from(c)
        .where(
          and(
            eq(c.driverInstanceId, driverInstanceId),
            OPEN,
            or(isNull(c.deliveredConnectionId), ne(c.deliveredConnectionId, connectionId)),
          ),
        )
        .orderBy(asc(c.seq))
        .limit(1),
    );
  },
  /** Records delivery on `connectionId` (and `queued → delivered`) if the command is still `fromStatus`. */
  async markDelivered(tx: StoreTx, id: string, fromStatus: CommandStatus, connectionId: string, nowMs: number): Promise<boolean> {
    const q = tx.prepared("command.markDelivered", (db) => {
      const c = tx.tables.driverCommands;
      return db
        .update(c)
        .set({
          ...placeholdersFor(["status", "deliveredConnectionId", "updatedAtMs"]),
          deliveryCount: sql`${c.deliveryCount} + 1`,
        })
        .where(and(eq(c.id, sql.placeholder("id")), eq(c.status, sql.placeholder("fromStatus"))))
        .returning({ id: c.id })
        .prepare();
    });
    const rows = await q.execute({
      id,
      fromStatus,
      status: fromStatus === "queued" ? "delivered" : fromStatus,
      deliveredConnectionId: connectionId,
      updatedAtMs: nowMs,
    });
    return rows.length > 0;
  },
  /**
   * A Driver's `completed` update as ONE compare-and-set (the result is stored before
   * anything terminal): completes command `commandId` with its effect's stored result (`terminal_at_ms` =
   * `nowMs`, ms) only while the command is `delivered` or `accepted` and owned by `driverInstanceId`, that
   * instance is `connected` on `connectionId`, and the effect `succeeded` with a stored result. Returns the
   * command's run, its effect and the stored result, or undefined when any of that does not hold (nothing
   * written): the caller then judges the update on the rows. The caller appends `tool_call.completed`.
   */
  async completeFromSucceededEffect(
    tx: StoreTx,
    q: { commandId: string; driverInstanceId: string; connectionId: string; nowMs: number },
  ): Promise<{ runId: string; effectId: string; resultJson: string } | undefined> {
    const stmt = tx.prepared("command.completeFromSucceededEffect", (db) => {
      const { driverCommands: c, externalToolEffects: e, driverInstances: d } = tx.tables;
      const stored = db
        .select({ resultJson: e.resultJson })
        .from(e)
        .where(and(eq(e.commandId, sql.placeholder("commandId")), eq(e.status, "succeeded")));
      return db
        .update(c)
        .set({
          status: "completed",
          resultJson: sql`(${stored})`,
          updatedAtMs: sql`${sql.placeholder("nowMs")}`,
          terminalAtMs: sql`${sql.placeholder("nowMs")}`,
        })
        .where(
          and(
            eq(c.id, sql.placeholder("commandId")),
            eq(c.driverInstanceId, sql.placeholder("driverInstanceId")),
            inArray(c.status, ["delivered", "accepted"]),
            exists(
              db
                .select({ one: sql`1` })
                .from(d)
                .where(
                  and(
                    eq(d.id, sql.placeholder("driverInstanceId")),
                    eq(d.status, "connected"),
                    eq(d.connectionId, sql.placeholder("connectionId")),
                  ),
                ),
            ),
            exists(
              db
                .select({ one: sql`1` })
                .from(e)
                .where(and(eq(e.commandId, sql.placeholder("commandId")), eq(e.status, "succeeded"), sql`${e.resultJson} IS NOT NULL`)),
            ),
          ),
        )
        .returning({
          runId: c.runId,
          resultJson: c.resultJson,
          effectId: sql<string>`(${db
            .select({ id: e.id })
            .from(e)
            .where(eq(e.commandId, sql.placeholder("commandId")))})`,
        })
        .prepare();
    });
    const row = firstRow(await stmt.execute(q));
    return row && row.resultJson !== null ? { runId: row.runId, effectId: row.effectId, resultJson: row.resultJson } : undefined;
  },
  /**
   * {@link transition} of many commands at once to the terminal status `to` at `nowMs` (ms): each row a
   * compare-and-set on its own `from` (`(id, status) IN (VALUES …)`: a seek of the primary key per row, judged on
   * the row as it is when written),
   * `terminal_at_ms` set, and `json` written to `column` (`result_json` or `error_json`) per command. Multi-row
   * UPDATEs of at most {@link TRANSITION_CHUNK} commands each, one fixed text per count and column, positional
   * (`positionalStatement`). Returns the ids that changed; a command missing from it had left `from` meanwhile
   * (nothing written for it).
   */
  async transitionManyToTerminal(
    tx: StoreTx,
    to: CommandStatus,
    column: "resultJson" | "errorJson",
    items: ReadonlyArray<{ id: string; from: CommandStatus; json: string }>,
    nowMs: number,
  ): Promise<Set<string>> {
    const changed = new Set<string>();
    let at = 0;
    for (const size of powerOfTwoChunks(items.length, TRANSITION_CHUNK)) {
      const chunk = items.slice(at, at + size);
      const values: unknown[] = [to, nowMs, nowMs];
      for (const r of chunk) values.push(r.id, r.json);
      for (const r of chunk) values.push(r.id, r.from);
      const text = transitionManyText(column, size);
      for (const r of await positionalStatement(tx, `command.transitionManyToTerminal:${column}:${size}`, text, values, true))
        changed.add(r.id as string);
      at += size;
    }
    return changed;
  },
  /**
   * Compare-and-set of a command's status: changes the row only while it is still `from`.
   * Terminal targets set `terminal_at_ms`. Returns true when it changed.
   */
  async transition(
    tx: StoreTx,
    id: string,
    from: CommandStatus,
    to: CommandStatus,
    nowMs: number,
    extra: { resultJson?: string; errorJson?: string; terminal: boolean },
  ): Promise<boolean> {
    const set = {
      status: to,
      updatedAtMs: nowMs,
      terminalAtMs: extra.terminal ? nowMs : undefined,
      resultJson: extra.resultJson,
      errorJson: extra.errorJson,
    };
    const shape = shapeOf(set);
    const q = tx.prepared(`command.transition:${shape.join(",")}`, (db) => {
      const c = tx.tables.driverCommands;
      return db
        .update(c)
        .set(placeholdersFor(shape, "set_"))
        .where(and(eq(c.id, sql.placeholder("id")), eq(c.status, sql.placeholder("from"))))
        .returning({ id: c.id })
        .prepare();
    });
    const rows = await q.execute({ ...argumentsFor(shape, set, "set_"), id, from });
    return rows.length > 0;
  },
};
