import { and, asc, desc, eq, inArray, isNull, ne, or, sql } from "drizzle-orm";
import type { CommandStatus } from "@mosoo/contracts";
import { driverCommands } from "../../../platform/db/schema.js";
import { preparedQuery } from "../../../platform/db/prepared-query.js";
import type { DbHandle } from "./db-handle.js";

/** A Driver command row. */
export type CommandRow = typeof driverCommands.$inferSelect;

const NON_TERMINAL: CommandStatus[] = ["queued", "delivered", "accepted"];

/** Reads and compare-and-set writes of `driver_commands`. */
export const commandRepository = {
  /** The next per-instance sequence number (1-based). Call inside the inserting transaction. */
  nextSeq(db: DbHandle, driverInstanceId: string): number {
    const last = db
      .select({ seq: driverCommands.seq })
      .from(driverCommands)
      .where(eq(driverCommands.driverInstanceId, driverInstanceId))
      .orderBy(desc(driverCommands.seq))
      .limit(1)
      .get();
    return (last?.seq ?? 0) + 1;
  },
  /** Inserts one row (throws on a constraint violation: CHECK, unique, foreign key). */
  insert(db: DbHandle, row: typeof driverCommands.$inferInsert): void {
    db.insert(driverCommands).values(row).run();
  },
  /** The row with this id, or undefined. */
  findById(db: DbHandle, id: string): CommandRow | undefined {
    return preparedQuery(db, "command.findById", (h) =>
      h
        .select()
        .from(driverCommands)
        .where(eq(driverCommands.id, sql.placeholder("id")))
        .prepare(),
    ).get({ id });
  },
  /** A command only if it belongs to `driverInstanceId` (a Driver never sees another instance's commands). */
  findOwned(db: DbHandle, id: string, driverInstanceId: string): CommandRow | undefined {
    return preparedQuery(db, "command.findOwned", (h) =>
      h
        .select()
        .from(driverCommands)
        .where(and(eq(driverCommands.id, sql.placeholder("id")), eq(driverCommands.driverInstanceId, sql.placeholder("driverInstanceId"))))
        .prepare(),
    ).get({ id, driverInstanceId });
  },
  /** Every row of run `runId`, oldest first. */
  listByRun(db: DbHandle, runId: string): CommandRow[] {
    return db.select().from(driverCommands).where(eq(driverCommands.runId, runId)).orderBy(asc(driverCommands.seq)).all();
  },
  /** Commands of the instance without a terminal receipt (`queued`, `delivered`, `accepted`), in `seq` order. */
  listNonTerminalOfDriver(db: DbHandle, driverInstanceId: string): CommandRow[] {
    return db
      .select()
      .from(driverCommands)
      .where(and(eq(driverCommands.driverInstanceId, driverInstanceId), inArray(driverCommands.status, NON_TERMINAL)))
      .orderBy(asc(driverCommands.seq))
      .all();
  },
  /** The lowest-seq non-terminal command not yet delivered on `connectionId` (docs/DESIGN.md §3 rule 11). */
  findUndeliveredOnConnection(db: DbHandle, driverInstanceId: string, connectionId: string): CommandRow | undefined {
    return db
      .select()
      .from(driverCommands)
      .where(
        and(
          eq(driverCommands.driverInstanceId, driverInstanceId),
          inArray(driverCommands.status, NON_TERMINAL),
          or(isNull(driverCommands.deliveredConnectionId), ne(driverCommands.deliveredConnectionId, connectionId)),
        ),
      )
      .orderBy(asc(driverCommands.seq))
      .limit(1)
      .get();
  },
  /** Records delivery on `connectionId` (and `queued → delivered`) if the command is still `fromStatus`. */
  markDelivered(db: DbHandle, id: string, fromStatus: CommandStatus, connectionId: string, nowMs: number): boolean {
    const res = db
      .update(driverCommands)
      .set({
        status: fromStatus === "queued" ? "delivered" : fromStatus,
        deliveredConnectionId: connectionId,
        deliveryCount: sql`${driverCommands.deliveryCount} + 1`,
        updatedAtMs: nowMs,
      })
      .where(and(eq(driverCommands.id, id), eq(driverCommands.status, fromStatus)))
      .run();
    return res.changes > 0;
  },
  /**
   * Compare-and-set of a command's status: changes the row only while it is still `from`.
   * Terminal targets set `terminal_at_ms`. Returns true when it changed.
   */
  transition(
    db: DbHandle,
    id: string,
    from: CommandStatus,
    to: CommandStatus,
    nowMs: number,
    extra: { resultJson?: string; errorJson?: string; terminal: boolean },
  ): boolean {
    const res = db
      .update(driverCommands)
      .set({
        status: to,
        updatedAtMs: nowMs,
        ...(extra.terminal ? { terminalAtMs: nowMs } : {}),
        ...(extra.resultJson !== undefined ? { resultJson: extra.resultJson } : {}),
        ...(extra.errorJson !== undefined ? { errorJson: extra.errorJson } : {}),
      })
      .where(and(eq(driverCommands.id, id), eq(driverCommands.status, from)))
      .run();
    return res.changes > 0;
  },
};
