import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { EffectStatus } from "@mosoo/contracts";
import { driverCommands, externalToolEffectAttempts, externalToolEffects } from "../../../platform/db/schema.js";
import { preparedQuery } from "../../../platform/db/prepared-query.js";
import type { DbHandle } from "./db-handle.js";

/** An external tool effect row. */
export type EffectRow = typeof externalToolEffects.$inferSelect;
/** An effect attempt row. */
export type AttemptRow = typeof externalToolEffectAttempts.$inferSelect;

/** Reads and compare-and-set writes of `external_tool_effects` and their attempts. */
export const effectRepository = {
  /** Inserts one row (throws on a constraint violation: CHECK, unique, foreign key). */
  insert(db: DbHandle, row: typeof externalToolEffects.$inferInsert): void {
    db.insert(externalToolEffects).values(row).run();
  },
  /** The row with this id, or undefined. */
  findById(db: DbHandle, id: string): EffectRow | undefined {
    return preparedQuery(db, "effect.findById", (h) =>
      h
        .select()
        .from(externalToolEffects)
        .where(eq(externalToolEffects.id, sql.placeholder("id")))
        .prepare(),
    ).get({ id });
  },
  /** The row only if it belongs to `driverInstanceId` (a Driver never sees another instance's rows), or undefined. */
  findOwned(db: DbHandle, id: string, driverInstanceId: string): EffectRow | undefined {
    return preparedQuery(db, "effect.findOwned", (h) =>
      h
        .select()
        .from(externalToolEffects)
        .where(
          and(
            eq(externalToolEffects.id, sql.placeholder("id")),
            eq(externalToolEffects.driverInstanceId, sql.placeholder("driverInstanceId")),
          ),
        )
        .prepare(),
    ).get({ id, driverInstanceId });
  },
  /** The effect enqueued with the client's `toolCallId` in run `runId` (unique), or undefined. */
  findByClientToolCall(db: DbHandle, runId: string, toolCallId: string): EffectRow | undefined {
    return db
      .select()
      .from(externalToolEffects)
      .where(and(eq(externalToolEffects.runId, runId), eq(externalToolEffects.clientToolCallId, toolCallId)))
      .get();
  },
  /** The effect of command `commandId`, or undefined. */
  findByCommand(db: DbHandle, commandId: string): EffectRow | undefined {
    return preparedQuery(db, "effect.findByCommand", (h) =>
      h
        .select()
        .from(externalToolEffects)
        .where(eq(externalToolEffects.commandId, sql.placeholder("commandId")))
        .prepare(),
    ).get({ commandId });
  },
  /** Every row of run `runId`, oldest first. */
  listByRun(db: DbHandle, runId: string): EffectRow[] {
    return db.select().from(externalToolEffects).where(eq(externalToolEffects.runId, runId)).orderBy(asc(externalToolEffects.id)).all();
  },
  /** Effects of `driverInstanceId` in one of `statuses`, oldest first. */
  listOfDriverInStatus(db: DbHandle, driverInstanceId: string, statuses: readonly EffectStatus[]): EffectRow[] {
    return db
      .select()
      .from(externalToolEffects)
      .where(and(eq(externalToolEffects.driverInstanceId, driverInstanceId), inArray(externalToolEffects.status, [...statuses])))
      .orderBy(asc(externalToolEffects.id))
      .all();
  },
  /**
   * The effects of the instance's commands that have no terminal receipt (`queued`, `delivered`,
   * `accepted`), in one query (a join), keyed by command id: what finalization repair settles.
   */
  mapByNonTerminalCommandOfDriver(db: DbHandle, driverInstanceId: string): Map<string, EffectRow> {
    const rows = db
      .select({ effect: externalToolEffects })
      .from(externalToolEffects)
      .innerJoin(driverCommands, eq(driverCommands.id, externalToolEffects.commandId))
      .where(
        and(eq(driverCommands.driverInstanceId, driverInstanceId), inArray(driverCommands.status, ["queued", "delivered", "accepted"])),
      )
      .all();
    return new Map(rows.map((r) => [r.effect.commandId, r.effect]));
  },
  /** Effects in `status`, oldest first, at most `limit`. */
  listInStatus(db: DbHandle, status: EffectStatus, limit: number): EffectRow[] {
    return db
      .select()
      .from(externalToolEffects)
      .where(eq(externalToolEffects.status, status))
      .orderBy(asc(externalToolEffects.id))
      .limit(limit)
      .all();
  },
  /** Effects that hold a fence (`executing`/`unknown`) among those matching one column. */
  listFenced(db: DbHandle, by: { runId?: string; driverInstanceId?: string; runIds?: string[] }): EffectRow[] {
    const fenced = inArray(externalToolEffects.status, ["executing", "unknown"]);
    const cond = by.runId
      ? eq(externalToolEffects.runId, by.runId)
      : by.driverInstanceId
        ? eq(externalToolEffects.driverInstanceId, by.driverInstanceId)
        : inArray(externalToolEffects.runId, by.runIds ?? []);
    return db.select().from(externalToolEffects).where(and(cond, fenced)).all();
  },
  /**
   * Compare-and-set on (status, version) (docs/DESIGN.md §3 rule 7): sets `set` and bumps `version`
   * only while the row still has the `status` and `version` the caller read. True when it changed;
   * false means the effect changed meanwhile and nothing was written.
   */
  updateIfCurrent(
    db: DbHandle,
    current: Pick<EffectRow, "id" | "status" | "version">,
    set: Partial<typeof externalToolEffects.$inferInsert>,
  ): boolean {
    const res = db
      .update(externalToolEffects)
      .set({ ...set, version: sql`${externalToolEffects.version} + 1` })
      .where(
        and(
          eq(externalToolEffects.id, current.id),
          eq(externalToolEffects.status, current.status),
          eq(externalToolEffects.version, current.version),
        ),
      )
      .run();
    return res.changes > 0;
  },
  /** Inserts one attempt row (`(effect_id, attempt)` is unique). */
  insertAttempt(db: DbHandle, row: typeof externalToolEffectAttempts.$inferInsert): void {
    db.insert(externalToolEffectAttempts).values(row).run();
  },
  /** Updates attempt `attempt` of effect `effectId`. */
  updateAttempt(db: DbHandle, effectId: string, attempt: number, set: Partial<typeof externalToolEffectAttempts.$inferInsert>): void {
    db.update(externalToolEffectAttempts)
      .set(set)
      .where(and(eq(externalToolEffectAttempts.effectId, effectId), eq(externalToolEffectAttempts.attempt, attempt)))
      .run();
  },
  /** The attempts of an effect, in attempt order. */
  listAttempts(db: DbHandle, effectId: string): AttemptRow[] {
    return preparedQuery(db, "effect.listAttempts", (h) =>
      h
        .select()
        .from(externalToolEffectAttempts)
        .where(eq(externalToolEffectAttempts.effectId, sql.placeholder("effectId")))
        .orderBy(asc(externalToolEffectAttempts.attempt))
        .prepare(),
    ).all({ effectId });
  },
};
