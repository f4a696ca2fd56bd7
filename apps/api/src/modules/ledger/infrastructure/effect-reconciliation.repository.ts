import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, lte, or, sql } from "drizzle-orm";
import { effectReconciliations, externalToolEffects } from "../../../platform/db/schema.js";
import { preparedQuery } from "../../../platform/db/prepared-query.js";
import type { DbHandle } from "./db-handle.js";

/** A reconciliation record row. */
export type ReconciliationRow = typeof effectReconciliations.$inferSelect;

/** Reads and compare-and-set writes of reconciliation state (effect lease, outcome) and records. */
export const reconciliationRepository = {
  /**
   * Takes the effect's lease for `owner` until `expiresAtMs` (ms) as a compare-and-set on
   * (status `unknown`, `version`), only when no live lease is held; bumps the version and counts the
   * lookup (`lookup_count + 1`) in the same statement: the lookup is recorded as started, durably,
   * before the adapter runs, so a lookup that never ends (the process died) still counts against
   * the bound (docs/DESIGN.md §4). True when taken.
   */
  acquireLease(db: DbHandle, effectId: string, version: number, owner: string, nowMs: number, expiresAtMs: number): boolean {
    const res = db
      .update(externalToolEffects)
      .set({
        leaseOwner: owner,
        leaseExpiresAtMs: expiresAtMs,
        lookupCount: sql`${externalToolEffects.lookupCount} + 1`,
        version: sql`${externalToolEffects.version} + 1`,
      })
      .where(
        and(
          eq(externalToolEffects.id, effectId),
          eq(externalToolEffects.status, "unknown"),
          eq(externalToolEffects.version, version),
          or(isNull(externalToolEffects.leaseOwner), lt(externalToolEffects.leaseExpiresAtMs, nowMs)),
        ),
      )
      .run();
    return res.changes > 0;
  },
  /**
   * Writes the outcome of a lookup as a compare-and-set on (status `unknown`, `version`, lease
   * `owner`): sets `set`, releases the lease and bumps the version (the lookup was counted when the
   * lease was taken). Returns the
   * row as written (`RETURNING`, no second read); undefined means another reconciler or an operator
   * got there first (record `superseded`).
   */
  commitOutcome(
    db: DbHandle,
    effectId: string,
    version: number,
    owner: string,
    set: Partial<typeof externalToolEffects.$inferInsert>,
  ): typeof externalToolEffects.$inferSelect | undefined {
    // One prepared statement per shape of `set` (the columns an outcome writes; a handful of shapes).
    const columns = (Object.keys(set) as Array<keyof typeof set>).filter((k) => set[k] !== undefined).sort();
    const query = preparedQuery(db, `reconciliation.commitOutcome:${columns.join(",")}`, (h) =>
      h
        .update(externalToolEffects)
        .set({
          ...Object.fromEntries(columns.map((c) => [c, sql.placeholder(`set_${c}`)])),
          leaseOwner: null,
          leaseExpiresAtMs: null,
          version: sql`${externalToolEffects.version} + 1`,
        })
        .where(
          and(
            eq(externalToolEffects.id, sql.placeholder("effectId")),
            eq(externalToolEffects.status, "unknown"),
            eq(externalToolEffects.version, sql.placeholder("version")),
            eq(externalToolEffects.leaseOwner, sql.placeholder("owner")),
          ),
        )
        .returning()
        .prepare(),
    );
    return query.get({ effectId, version, owner, ...Object.fromEntries(columns.map((c) => [`set_${c}`, set[c]])) });
  },
  /**
   * Releases `owner`'s lease without an outcome (the outcome's compare-and-set was lost, or its
   * transaction failed). With `uncount` (no adapter call was made under this lease — the reconcile
   * step refused its input, a batch lease was never used — or the outcome's transaction rolled back,
   * leaving the effect as it was) the lookup counted by {@link acquireLease} is taken back. Changes only the lease columns and the count (not the
   * version: nothing about the effect changed). True when this owner still held it.
   */
  releaseLease(db: DbHandle, effectId: string, owner: string, uncount = false): boolean {
    const res = db
      .update(externalToolEffects)
      .set({
        leaseOwner: null,
        leaseExpiresAtMs: null,
        ...(uncount ? { lookupCount: sql`max(${externalToolEffects.lookupCount} - 1, 0)` } : {}),
      })
      .where(and(eq(externalToolEffects.id, effectId), eq(externalToolEffects.leaseOwner, owner)))
      .run();
    return res.changes > 0;
  },
  /**
   * Releases every lease (at API startup: one API process owns a store, so every lease found then
   * belongs to a process that died mid-lookup). Returns how many were released.
   */
  releaseAllLeases(db: DbHandle): number {
    return db
      .update(externalToolEffects)
      .set({ leaseOwner: null, leaseExpiresAtMs: null })
      .where(isNotNull(externalToolEffects.leaseOwner))
      .run().changes;
  },
  /** Every effect that holds a lease (at API startup: lookups a dead process left unfinished). */
  listLeased(db: DbHandle) {
    return db.select().from(externalToolEffects).where(isNotNull(externalToolEffects.leaseOwner)).all();
  },
  /** Inserts one reconciliation record (a second confirmed record for an effect violates a partial unique index). */
  insertRecord(db: DbHandle, row: typeof effectReconciliations.$inferInsert): void {
    db.insert(effectReconciliations).values(row).run();
  },
  /** The distinct tool names the store holds effects of, for each of `serverIds` (the startup report). */
  toolsSeenOn(db: DbHandle, serverIds: readonly string[]): Array<{ serverId: string; toolName: string }> {
    if (serverIds.length === 0) return [];
    return db
      .selectDistinct({ serverId: externalToolEffects.serverId, toolName: externalToolEffects.toolName })
      .from(externalToolEffects)
      .where(inArray(externalToolEffects.serverId, [...serverIds]))
      .all();
  },
  /** The reconciliation records of an effect, oldest first. */
  listRecords(db: DbHandle, effectId: string): ReconciliationRow[] {
    return db
      .select()
      .from(effectReconciliations)
      .where(eq(effectReconciliations.effectId, effectId))
      .orderBy(asc(effectReconciliations.id))
      .all();
  },
  /**
   * `unknown` effects of the `eligible` (server, tools) pairs whose next lookup is due at `nowMs`
   * (never-looked-up ones included) and that wait for no operator, oldest first, at most `limit`,
   * and only those with an id after `afterId` when given (keyset pagination: a caller pages through
   * every due effect with `afterId` = the last id of the previous page, holding one page at a time).
   * Effects no adapter can look up are excluded in SQL, so they can never crowd out due ones.
   */
  listDue(
    db: DbHandle,
    nowMs: number,
    limit: number,
    eligible: ReadonlyArray<{ serverId: string; tools: readonly string[] }>,
    afterId?: string,
  ) {
    if (eligible.length === 0) return [];
    const bound = or(
      ...eligible.map((e) => and(eq(externalToolEffects.serverId, e.serverId), inArray(externalToolEffects.toolName, [...e.tools]))),
    );
    return db
      .select()
      .from(externalToolEffects)
      .where(
        and(
          eq(externalToolEffects.status, "unknown"),
          afterId === undefined ? undefined : gt(externalToolEffects.id, afterId),
          bound,
          isNull(externalToolEffects.operatorAttention),
          or(
            lte(externalToolEffects.nextLookupAtMs, nowMs),
            and(isNull(externalToolEffects.nextLookupAtMs), eq(externalToolEffects.lookupCount, 0)),
          ),
          or(isNull(externalToolEffects.leaseOwner), lt(externalToolEffects.leaseExpiresAtMs, nowMs)),
        ),
      )
      .orderBy(asc(externalToolEffects.id))
      .limit(limit)
      .all();
  },
};
