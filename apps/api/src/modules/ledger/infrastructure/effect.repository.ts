import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { EffectStatus } from "@mosoo/contracts";
import type { externalToolEffectAttempts, externalToolEffects } from "../../../platform/db/schema.js";
import { firstRow } from "../../../platform/db/rows.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** An external tool effect row. */
export type EffectRow = typeof externalToolEffects.$inferSelect;
/** An effect attempt row. */
export type AttemptRow = typeof externalToolEffectAttempts.$inferSelect;

/** Reads and compare-and-set writes of `external_tool_effects` and their attempts (dialect-neutral: docs/ARCHITECTURE.md). */
export const effectRepository = {
  /** Inserts one row (throws on a constraint violation: CHECK, unique, foreign key). */
  async insert(tx: StoreTx, row: typeof externalToolEffects.$inferInsert): Promise<void> {
    await tx.db.insert(tx.tables.externalToolEffects).values(row);
  },
  /** The row with this id, or undefined. */
  async findById(tx: StoreTx, id: string): Promise<EffectRow | undefined> {
    const q = tx.prepared("effect.findById", (db) => {
      const e = tx.tables.externalToolEffects;
      return db
        .select()
        .from(e)
        .where(eq(e.id, sql.placeholder("id")))
        .prepare();
    });
    return firstRow(await q.execute({ id }));
  },
  /** The row only if it belongs to `driverInstanceId` (a Driver never sees another instance's rows), or undefined. */
  async findOwned(tx: StoreTx, id: string, driverInstanceId: string): Promise<EffectRow | undefined> {
    const q = tx.prepared("effect.findOwned", (db) => {
      const e = tx.tables.externalToolEffects;
      return db
        .select()
        .from(e)
        .where(and(eq(e.id, sql.placeholder("id")), eq(e.driverInstanceId, sql.placeholder("driverInstanceId"))))
        .prepare();
    });
    return firstRow(await q.execute({ id, driverInstanceId }));
  },
  /** The effect enqueued with the client's `toolCallId` in run `runId` (unique), or undefined. */
  async findByClientToolCall(tx: StoreTx, runId: string, toolCallId: string): Promise<EffectRow | undefined> {
    const e = tx.tables.externalToolEffects;
    return firstRow(
      await tx.db
        .select()
        .from(e)
        .where(and(eq(e.runId, runId), eq(e.clientToolCallId, toolCallId)))
        .limit(1),
    );
  },
  /** The effect of command `commandId`, or undefined. */
  async findByCommand(tx: StoreTx, commandId: string): Promise<EffectRow | undefined> {
    const q = tx.prepared("effect.findByCommand", (db) => {
      const e = tx.tables.externalToolEffects;
      return db
        .select()
        .from(e)
        .where(eq(e.commandId, sql.placeholder("commandId")))
        .prepare();
    });
    return firstRow(await q.execute({ commandId }));
  },
  /** Every row of run `runId`, oldest first. */
  async listByRun(tx: StoreTx, runId: string): Promise<EffectRow[]> {
    const e = tx.tables.externalToolEffects;
    return tx.db.select().from(e).where(eq(e.runId, runId)).orderBy(asc(e.id));
  },
  /** Effects of `driverInstanceId` in one of `statuses`, oldest first. */
  async listOfDriverInStatus(tx: StoreTx, driverInstanceId: string, statuses: readonly EffectStatus[]): Promise<EffectRow[]> {
    const e = tx.tables.externalToolEffects;
    return tx.db
      .select()
      .from(e)
      .where(and(eq(e.driverInstanceId, driverInstanceId), inArray(e.status, [...statuses])))
      .orderBy(asc(e.id));
  },
  /**
   * The effects of the instance's commands that have no terminal receipt (`queued`, `delivered`,
   * `accepted`), in one query (a join), keyed by command id: what finalization repair settles.
   */
  async mapByNonTerminalCommandOfDriver(tx: StoreTx, driverInstanceId: string): Promise<Map<string, EffectRow>> {
    const { externalToolEffects: e, driverCommands: c } = tx.tables;
    const rows = await tx.db
      .select({ effect: e })
      .from(e)
      .innerJoin(c, eq(c.id, e.commandId))
      .where(and(eq(c.driverInstanceId, driverInstanceId), inArray(c.status, ["queued", "delivered", "accepted"])));
    return new Map(rows.map((r) => [r.effect.commandId, r.effect]));
  },
  /** Effects in `status`, oldest first, at most `limit`. */
  async listInStatus(tx: StoreTx, status: EffectStatus, limit: number): Promise<EffectRow[]> {
    const e = tx.tables.externalToolEffects;
    return tx.db.select().from(e).where(eq(e.status, status)).orderBy(asc(e.id)).limit(limit);
  },
  /** Effects that hold a fence (`executing`/`unknown`) among those matching one column. */
  async listFenced(tx: StoreTx, by: { runId?: string; driverInstanceId?: string; runIds?: string[] }): Promise<EffectRow[]> {
    const e = tx.tables.externalToolEffects;
    const fenced = inArray(e.status, ["executing", "unknown"]);
    const cond = by.runId
      ? eq(e.runId, by.runId)
      : by.driverInstanceId
        ? eq(e.driverInstanceId, by.driverInstanceId)
        : inArray(e.runId, by.runIds ?? []);
    return tx.db.select().from(e).where(and(cond, fenced));
  },
  /**
   * Compare-and-set on (status, version) (docs/DESIGN.md §3 rule 7): sets `set` and bumps `version`
   * only while the row still has the `status` and `version` the caller read. True when it changed;
   * false means the effect changed meanwhile and nothing was written.
   */
  async updateIfCurrent(
    tx: StoreTx,
    current: Pick<EffectRow, "id" | "status" | "version">,
    set: Partial<typeof externalToolEffects.$inferInsert>,
  ): Promise<boolean> {
    const e = tx.tables.externalToolEffects;
    const rows = await tx.db
      .update(e)
      .set({ ...set, version: sql`${e.version} + 1` })
      .where(and(eq(e.id, current.id), eq(e.status, current.status), eq(e.version, current.version)))
      .returning({ id: e.id });
    return rows.length > 0;
  },
  /** Inserts one attempt row (`(effect_id, attempt)` is unique). */
  async insertAttempt(tx: StoreTx, row: typeof externalToolEffectAttempts.$inferInsert): Promise<void> {
    await tx.db.insert(tx.tables.externalToolEffectAttempts).values(row);
  },
  /** Updates attempt `attempt` of effect `effectId`. */
  async updateAttempt(
    tx: StoreTx,
    effectId: string,
    attempt: number,
    set: Partial<typeof externalToolEffectAttempts.$inferInsert>,
  ): Promise<void> {
    const a = tx.tables.externalToolEffectAttempts;
    await tx.db
      .update(a)
      .set(set)
      .where(and(eq(a.effectId, effectId), eq(a.attempt, attempt)));
  },
  /** The attempts of an effect, in attempt order. */
  async listAttempts(tx: StoreTx, effectId: string): Promise<AttemptRow[]> {
    const q = tx.prepared("effect.listAttempts", (db) => {
      const a = tx.tables.externalToolEffectAttempts;
      return db
        .select()
        .from(a)
        .where(eq(a.effectId, sql.placeholder("effectId")))
        .orderBy(asc(a.attempt))
        .prepare();
    });
    return q.execute({ effectId });
  },
};
