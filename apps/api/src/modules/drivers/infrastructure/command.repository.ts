// Reads and compare-and-set writes of the Driver command rows (`driver_commands`), in SQL both stores speak.
import { and, asc, eq, exists, inArray, isNull, ne, or, sql } from "drizzle-orm";
import type { CommandStatus, DriverInstanceStatus } from "@mosoo/contracts";
import type { driverCommands } from "../../../platform/db/sqlite/sqlite-schema.js";
import { firstRow } from "../../../platform/db/rows.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { QueuedCommand } from "../../ledger/application/owned-tables.port.js";
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

/** The columns a queued command's SQLite INSERT writes before `seq` is taken ({@link queuedValues} gives them in this order). */
const QUEUED_COLUMNS = `"id", "type", "status", "payload_json", "trace_parent", "trace_state", "created_at_ms", "updated_at_ms"`;
/** {@link QUEUED_COLUMNS}' values of `row`, in order (null for an untraced command). */
const queuedValues = (row: Omit<QueuedCommand, "driverInstanceId" | "runId">): unknown[] => [
  row.id,
  row.type,
  row.status,
  row.payloadJson,
  row.traceParent ?? null,
  row.traceState ?? null,
  row.createdAtMs,
  row.updatedAtMs,
];
/** The placeholders of {@link QUEUED_COLUMNS}. */
const QUEUED_PLACEHOLDERS = "?, ?, ?, ?, ?, ?, ?, ?";

/** {@link commandRepository.insertNumbered}'s statement: {@link QUEUED_COLUMNS}' values, the run id, the Driver instance id. */
const SQLITE_INSERT_NUMBERED =
  `INSERT INTO "driver_commands" (${QUEUED_COLUMNS}, "run_id", "driver_instance_id", "seq") ` +
  `SELECT ${QUEUED_PLACEHOLDERS}, ?, "id", "last_command_seq" + 1 FROM "driver_instances" WHERE "id" = ? ` +
  `RETURNING "seq", (SELECT "status" FROM "driver_instances" WHERE "id" = "driver_commands"."driver_instance_id") AS "driver_status"`;

/** {@link commandRepository.insertOfActiveRun}'s statement: {@link QUEUED_COLUMNS}' values, the run id. */
const SQLITE_INSERT_OF_ACTIVE_RUN =
  `INSERT INTO "driver_commands" (${QUEUED_COLUMNS}, "run_id", "driver_instance_id", "seq") ` +
  `SELECT ${QUEUED_PLACEHOLDERS}, r."id", d."id", d."last_command_seq" + 1 ` +
  `FROM "session_runs" r JOIN "driver_instances" d ON d."id" = r."driver_instance_id" WHERE r."id" = ? AND r."status" = 'active' ` +
  `RETURNING "seq", "driver_instance_id", ` +
  `(SELECT "status" FROM "driver_instances" WHERE "id" = "driver_commands"."driver_instance_id") AS "driver_status", ` +
  `(SELECT "session_id" FROM "session_runs" WHERE "id" = "driver_commands"."run_id") AS "session_id"`;

/** The SQLite unit of work's compiled statements. @throws Error on PostgreSQL (a SQLite-only statement). */
function sqliteOnly(tx: StoreTx): NonNullable<StoreTx["sqliteStatement"]> {
  if (!tx.sqliteStatement) throw new Error("a SQLite-only statement run on PostgreSQL");
  return tx.sqliteStatement;
}

/** Reads and compare-and-set writes of `driver_commands` (dialect-neutral: docs/ARCHITECTURE.md). */
export const commandRepository = {
  /**
   * SQLite: inserts a `queued` command numbered inside the INSERT: its `seq` is instance `row.driverInstanceId`'s
   * `last_command_seq + 1`, read in the statement (`INSERT … SELECT … FROM driver_instances`), and the trigger
   * `driver_commands_advance_last_command_seq` (migration 0029) moves the counter to it in the same statement.
   * One statement, atomic, under the store's one write lock: no other writer can take the same `seq` (the unique
   * `driver_commands_instance_seq` would refuse it anyway). Returns the `seq` and the instance's `status` as that
   * statement saw it. PostgreSQL numbers a command in its intent's `WITH` (intent-write.repository.ts) instead.
   * @throws Error when the Driver instance does not exist (nothing written), or when called on PostgreSQL.
   */
  async insertNumbered(tx: StoreTx, row: QueuedCommand): Promise<{ seq: number; status: DriverInstanceStatus }> {
    const inserted = sqliteOnly(tx)(SQLITE_INSERT_NUMBERED).get(...queuedValues(row), row.runId, row.driverInstanceId) as
      { seq: number; driver_status: DriverInstanceStatus } | undefined;
    if (inserted === undefined) throw new Error(`no Driver instance ${row.driverInstanceId} to number a command of`);
    return { seq: inserted.seq, status: inserted.driver_status };
  },
  /**
   * SQLite's enqueue with the run's read folded into the command's INSERT: inserts the `queued` command `row`
   * for run `runId` only when that run is `active`, on the run's Driver instance, numbered `last_command_seq + 1`
   * of that instance (`INSERT INTO driver_commands … SELECT … FROM session_runs JOIN driver_instances WHERE
   * run is active`; the counter follows by the trigger `driver_commands_advance_last_command_seq`, migration
   * 0029). Returns the `seq`, the instance's id and `status`, and the run's `sessionId`; undefined, with nothing
   * written, when there is no such active run (the caller reads the run to say why). Inside a SQLite write
   * transaction (`BEGIN IMMEDIATE`: the store's one writer) the run's status stays what this statement saw until
   * the commit. On PostgreSQL (READ COMMITTED: a run's status can change under a later statement) it writes
   * nothing and returns undefined: its intent numbers the command in its own round trip.
   */
  async insertOfActiveRun(
    tx: StoreTx,
    runId: string,
    row: Omit<QueuedCommand, "driverInstanceId" | "runId">,
  ): Promise<{ seq: number; driverInstanceId: string; driverStatus: DriverInstanceStatus; sessionId: string } | undefined> {
    if (!tx.sqliteStatement) return undefined;
    const inserted = tx.sqliteStatement(SQLITE_INSERT_OF_ACTIVE_RUN).get(...queuedValues(row), runId) as
      { seq: number; driver_instance_id: string; driver_status: DriverInstanceStatus; session_id: string } | undefined;
    return inserted === undefined
      ? undefined
      : {
          seq: inserted.seq,
          driverInstanceId: inserted.driver_instance_id,
          driverStatus: inserted.driver_status,
          sessionId: inserted.session_id,
        };
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
