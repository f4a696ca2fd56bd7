// Reads and compare-and-set writes of the effect rows and their attempts, in SQL both stores speak.
import { and, asc, desc, eq, gte, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { EffectStatus } from "@mosoo/contracts";
import type { driverCommands, externalToolEffectAttempts, externalToolEffects } from "../../../platform/db/sqlite/sqlite-schema.js";
import { firstRow } from "../../../platform/db/rows.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { argumentsFor, placeholdersFor, powerOfTwoChunks, shapeOf } from "../../../platform/db/prepared-shapes.js";
import { positionalStatement, valuesRows } from "../../../platform/db/positional-statement.js";

/** An external tool effect row. */
export type EffectRow = typeof externalToolEffects.$inferSelect;
/** The columns of an effect that ending its command needs (see `settleCommandsFromEffects` in command-settlement.service.ts). */
export type SettlingEffect = Pick<
  EffectRow,
  "id" | "commandId" | "status" | "resultJson" | "resolution" | "lookupCount" | "nextLookupAtMs"
>;
/** An open command as {@link effectRepository.listOpenCommandsOfDriver} reads it: its id, status and run, and its effect's settling columns (undefined: none). */
export interface OpenCommandWithEffect {
  command: { id: string; status: typeof driverCommands.$inferSelect.status; runId: string };
  effect: SettlingEffect | undefined;
}
/** An effect attempt row. */
export type AttemptRow = typeof externalToolEffectAttempts.$inferSelect;

/** Attempts per multi-row UPDATE of {@link effectRepository.markAttemptsUnknown} at most (a power of two; see `powerOfTwoChunks`): 2 parameters each, far below both stores' limits. */
const ATTEMPT_UPDATE_CHUNK = 256;

/** {@link effectRepository.markAttemptsUnknown}'s texts, by pair count (built once each). */
const markAttemptsUnknownTexts = new Map<number, string>();

/** The text that marks `pairs` attempts unknown: parameters `unknown_reason`, `finished_at_ms`, then (effect id, attempt) per pair. */
function markAttemptsUnknownText(pairs: number): string {
  let text = markAttemptsUnknownTexts.get(pairs);
  if (text === undefined) {
    // A row-value IN list (each pair a seek of the primary key whatever the planner's statistics say; an
    // `UPDATE … FROM (VALUES …)` join was planned as a scan of the attempts on a store that had grown since its
    // last ANALYZE). The attempt number cast: PostgreSQL types an untyped VALUES column as text.
    text =
      `UPDATE "external_tool_effect_attempts" SET "status" = 'unknown', "unknown_reason" = ?, "finished_at_ms" = ? ` +
      `WHERE ("effect_id", "attempt") IN (VALUES ${valuesRows(pairs, ["?", "CAST(? AS INTEGER)"])})`;
    markAttemptsUnknownTexts.set(pairs, text);
  }
  return text;
}

/** Reads and compare-and-set writes of `external_tool_effects` and their attempts (dialect-neutral: docs/ARCHITECTURE.md). */
export const effectRepository = {
  /** Inserts one row (throws on a constraint violation: CHECK, unique, foreign key). */
  async insert(tx: StoreTx, row: typeof externalToolEffects.$inferInsert): Promise<void> {
    const shape = shapeOf(row);
    const q = tx.prepared(`effect.insert:${shape.join(",")}`, (db) =>
      db
        .insert(tx.tables.externalToolEffects)
        .values(placeholdersFor(shape) as unknown as typeof externalToolEffects.$inferInsert)
        .prepare(),
    );
    await q.execute(argumentsFor(shape, row));
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
    const q = tx.prepared("effect.findByClientToolCall", (db) => {
      const e = tx.tables.externalToolEffects;
      return db
        .select()
        .from(e)
        .where(and(eq(e.runId, sql.placeholder("runId")), eq(e.clientToolCallId, sql.placeholder("toolCallId"))))
        .limit(1)
        .prepare();
    });
    return firstRow(await q.execute({ runId, toolCallId }));
  },
  /** The effect of run `runId` with tool call id `toolCallId` (the client's or the generated one; the first if two share it), or undefined. */
  async findByRunToolCall(tx: StoreTx, runId: string, toolCallId: string): Promise<EffectRow | undefined> {
    const e = tx.tables.externalToolEffects;
    return firstRow(
      await tx.db
        .select()
        .from(e)
        .where(and(eq(e.runId, runId), eq(e.toolCallId, toolCallId)))
        .orderBy(asc(e.id))
        .limit(1),
    );
  },
  /**
   * The repeat guard's candidates (see `guardRepeat` in repeat-guard.policy.ts): effects of session `sessionId` with request
   * fingerprint `fingerprint` on `serverId`/`toolName`, created at or after `sinceMs` (ms since the
   * epoch), newest first, at most `limit`, each with its command's status and whether a compensation of
   * it succeeded. One range of `external_tool_effects_session_fingerprint_idx` (session_id, request_fingerprint).
   */
  async listSessionRepeats(
    tx: StoreTx,
    q: { sessionId: string; fingerprint: string; serverId: string; toolName: string; sinceMs: number; limit: number },
  ): Promise<Array<{ effect: EffectRow; commandStatus: string; compensated: boolean }>> {
    const { externalToolEffects: e, driverCommands: c } = tx.tables;
    const rows = await tx.db
      .select({ effect: e, commandStatus: c.status })
      .from(e)
      .innerJoin(c, eq(c.id, e.commandId))
      .where(
        and(
          eq(e.sessionId, q.sessionId),
          eq(e.requestFingerprint, q.fingerprint),
          eq(e.serverId, q.serverId),
          eq(e.toolName, q.toolName),
          gte(e.createdAtMs, q.sinceMs),
        ),
      )
      .orderBy(desc(e.id))
      .limit(q.limit);
    const out = [];
    for (const r of rows) {
      const compensations =
        r.effect.status === "succeeded"
          ? await tx.db
              .select({ id: e.id })
              .from(e)
              .where(and(eq(e.compensatesEffectId, r.effect.id), eq(e.status, "succeeded")))
              .limit(1)
          : [];
      out.push({ effect: r.effect, commandStatus: r.commandStatus, compensated: compensations.length > 0 });
    }
    return out;
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
  /**
   * The instance's commands that have no terminal receipt (`terminal_at_ms` NULL), oldest `seq` first, each with
   * the columns of its effect that settling it needs ({@link SettlingEffect}; null: the command has no effect), in
   * one prepared join: what the finalization repair ends when nothing of it waits for a lookup. Narrow on purpose:
   * a repair reads every open command of a Driver (thousands), and whole rows (arguments, results) cost more to
   * map than the statement costs to run (docs/performance-notes.md).
   */
  async listOpenCommandsOfDriver(tx: StoreTx, driverInstanceId: string): Promise<OpenCommandWithEffect[]> {
    const q = tx.prepared("effect.listOpenCommandsOfDriver", (db) => {
      const { externalToolEffects: e, driverCommands: c } = tx.tables;
      return db
        .select({
          command: { id: c.id, status: c.status, runId: c.runId },
          effect: {
            id: e.id,
            commandId: e.commandId,
            status: e.status,
            resultJson: e.resultJson,
            resolution: e.resolution,
            lookupCount: e.lookupCount,
            nextLookupAtMs: e.nextLookupAtMs,
          },
        })
        .from(c)
        .leftJoin(e, eq(e.commandId, c.id))
        .where(and(eq(c.driverInstanceId, sql.placeholder("driverInstanceId")), isNull(c.terminalAtMs)))
        .orderBy(asc(c.seq))
        .prepare();
    });
    return (await q.execute({ driverInstanceId })).map((r) => ({ command: r.command, effect: r.effect ?? undefined }));
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
    const shape = shapeOf(set);
    const q = tx.prepared(`effect.updateIfCurrent:${shape.join(",")}`, (db) => {
      const e = tx.tables.externalToolEffects;
      return db
        .update(e)
        .set({ ...placeholdersFor(shape, "set_"), version: sql`${e.version} + 1` })
        .where(and(eq(e.id, sql.placeholder("id")), eq(e.status, sql.placeholder("status")), eq(e.version, sql.placeholder("version"))))
        .returning({ id: e.id })
        .prepare();
    });
    const rows = await q.execute({ ...argumentsFor(shape, set, "set_"), id: current.id, status: current.status, version: current.version });
    return rows.length > 0;
  },
  /**
   * {@link updateIfCurrent} that also requires that no live reconciliation lease is held at `nowMs`
   * (ms): `lease_owner IS NULL OR lease_expires_at_ms < nowMs`, the same rule by which
   * `reconciliationRepository.acquireLease` takes a lease over. An operator's resolve settles through
   * it, so that it never lands between a reconciler's lease and its adapter call (docs/DESIGN.md §7).
   * True when it changed; false means the effect changed meanwhile or a lookup holds its lease, and
   * nothing was written.
   */
  async updateIfCurrentAndUnleased(
    tx: StoreTx,
    current: Pick<EffectRow, "id" | "status" | "version">,
    set: Partial<typeof externalToolEffects.$inferInsert>,
    nowMs: number,
  ): Promise<boolean> {
    const shape = shapeOf(set);
    const q = tx.prepared(`effect.updateIfCurrentAndUnleased:${shape.join(",")}`, (db) => {
      const e = tx.tables.externalToolEffects;
      return db
        .update(e)
        .set({ ...placeholdersFor(shape, "set_"), version: sql`${e.version} + 1` })
        .where(
          and(
            eq(e.id, sql.placeholder("id")),
            eq(e.status, sql.placeholder("status")),
            eq(e.version, sql.placeholder("version")),
            or(isNull(e.leaseOwner), lt(e.leaseExpiresAtMs, sql.placeholder("nowMs"))),
          ),
        )
        .returning({ id: e.id })
        .prepare();
    });
    const rows = await q.execute({
      ...argumentsFor(shape, set, "set_"),
      id: current.id,
      status: current.status,
      version: current.version,
      nowMs,
    });
    return rows.length > 0;
  },
  /**
   * Fences every `executing` effect of `driverInstanceId` at once: ONE `UPDATE … WHERE driver_instance_id = ?
   * AND status = 'executing' RETURNING …` sets `status = 'unknown'` and `updated_at_ms = nowMs` (ms) and
   * bumps `version`. Each row is still a compare-and-set on its status: the condition is judged on the row
   * as it is when written (PostgreSQL re-checks a row another transaction changed meanwhile), so an effect
   * that left `executing` is not touched. Returns the rows it changed (id, command, run, current attempt),
   * oldest first (by id, as {@link listOfDriverInStatus} lists them).
   */
  async fenceExecutingOfDriver(
    tx: StoreTx,
    driverInstanceId: string,
    nowMs: number,
  ): Promise<Array<Pick<EffectRow, "id" | "commandId" | "runId" | "attemptCount">>> {
    const e = tx.tables.externalToolEffects;
    const rows = await tx.db
      .update(e)
      .set({ status: "unknown", updatedAtMs: nowMs, version: sql`${e.version} + 1` })
      .where(and(eq(e.driverInstanceId, driverInstanceId), eq(e.status, "executing")))
      .returning({ id: e.id, commandId: e.commandId, runId: e.runId, attemptCount: e.attemptCount });
    return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  },
  /**
   * Marks the given attempts (effect id and attempt number) `unknown` with `unknownReason`, finished at
   * `nowMs` (ms): multi-row UPDATEs (`(effect_id, attempt) IN (VALUES …)`, at most
   * {@link ATTEMPT_UPDATE_CHUNK} pairs each, one fixed text per pair count, positional: `positionalStatement`;
   * each pair a seek of the attempts' primary key).
   */
  async markAttemptsUnknown(
    tx: StoreTx,
    attempts: ReadonlyArray<{ effectId: string; attempt: number }>,
    unknownReason: string,
    nowMs: number,
  ): Promise<void> {
    let at = 0;
    for (const size of powerOfTwoChunks(attempts.length, ATTEMPT_UPDATE_CHUNK)) {
      const values: unknown[] = [unknownReason, nowMs];
      for (const p of attempts.slice(at, at + size)) values.push(p.effectId, p.attempt);
      await positionalStatement(tx, `effect.markAttemptsUnknown:${size}`, markAttemptsUnknownText(size), values, false);
      at += size;
    }
  },
  /** Updates attempt `attempt` of effect `effectId`. */
  async updateAttempt(
    tx: StoreTx,
    effectId: string,
    attempt: number,
    set: Partial<typeof externalToolEffectAttempts.$inferInsert>,
  ): Promise<void> {
    const shape = shapeOf(set);
    const q = tx.prepared(`effect.updateAttempt:${shape.join(",")}`, (db) => {
      const a = tx.tables.externalToolEffectAttempts;
      return db
        .update(a)
        .set(placeholdersFor(shape, "set_"))
        .where(and(eq(a.effectId, sql.placeholder("effectId")), eq(a.attempt, sql.placeholder("attempt"))))
        .prepare();
    });
    await q.execute({ ...argumentsFor(shape, set, "set_"), effectId, attempt });
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
  /** The attempts of every effect of run `runId`, in one statement: by effect id, then attempt order (the run view groups them). */
  async listAttemptsByRun(tx: StoreTx, runId: string): Promise<AttemptRow[]> {
    const q = tx.prepared("effect.listAttemptsByRun", (db) => {
      const a = tx.tables.externalToolEffectAttempts;
      const e = tx.tables.externalToolEffects;
      return db
        .select()
        .from(a)
        .where(
          inArray(
            a.effectId,
            db
              .select({ id: e.id })
              .from(e)
              .where(eq(e.runId, sql.placeholder("runId"))),
          ),
        )
        .orderBy(asc(a.effectId), asc(a.attempt))
        .prepare();
    });
    return q.execute({ runId });
  },
};
