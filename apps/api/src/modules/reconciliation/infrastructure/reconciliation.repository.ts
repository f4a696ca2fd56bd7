import { and, asc, eq, isNull, lt, lte, or, sql } from "drizzle-orm";
import { effectReconciliations, externalToolEffects } from "../../../platform/db/schema.js";
import type { DbHandle } from "../../runtime/infrastructure/db-handle.js";

/** A reconciliation record row. */
export type ReconciliationRow = typeof effectReconciliations.$inferSelect;

/** Reads and compare-and-set writes of reconciliation state (effect lease, outcome) and records. */
export const reconciliationRepository = {
  /**
   * Takes the effect's lease for `owner` until `expiresAtMs` (ms) as a compare-and-set on
   * (status `unknown`, `version`), only when no live lease is held; bumps the version. True when taken.
   */
  acquireLease(db: DbHandle, effectId: string, version: number, owner: string, nowMs: number, expiresAtMs: number): boolean {
    const res = db
      .update(externalToolEffects)
      .set({ leaseOwner: owner, leaseExpiresAtMs: expiresAtMs, version: sql`${externalToolEffects.version} + 1` })
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
   * `owner`): sets `set`, releases the lease, counts the lookup and bumps the version. True when it
   * changed; false means another reconciler or an operator got there first (record `superseded`).
   */
  commitOutcome(db: DbHandle, effectId: string, version: number, owner: string, set: Partial<typeof externalToolEffects.$inferInsert>): boolean {
    const res = db
      .update(externalToolEffects)
      .set({
        ...set,
        leaseOwner: null,
        leaseExpiresAtMs: null,
        lookupCount: sql`${externalToolEffects.lookupCount} + 1`,
        version: sql`${externalToolEffects.version} + 1`,
      })
      .where(
        and(
          eq(externalToolEffects.id, effectId),
          eq(externalToolEffects.status, "unknown"),
          eq(externalToolEffects.version, version),
          eq(externalToolEffects.leaseOwner, owner),
        ),
      )
      .run();
    return res.changes > 0;
  },
  insertRecord(db: DbHandle, row: typeof effectReconciliations.$inferInsert): void {
    db.insert(effectReconciliations).values(row).run();
  },
  listRecords(db: DbHandle, effectId: string): ReconciliationRow[] {
    return db.select().from(effectReconciliations).where(eq(effectReconciliations.effectId, effectId)).orderBy(asc(effectReconciliations.id)).all();
  },
  /** `unknown` effects whose next lookup is due at `nowMs` (never-looked-up ones included), oldest first, at most `limit`. */
  listDue(db: DbHandle, nowMs: number, limit: number) {
    return db
      .select()
      .from(externalToolEffects)
      .where(
        and(
          eq(externalToolEffects.status, "unknown"),
          isNull(externalToolEffects.operatorAttention),
          or(lte(externalToolEffects.nextLookupAtMs, nowMs), and(isNull(externalToolEffects.nextLookupAtMs), eq(externalToolEffects.lookupCount, 0))),
          or(isNull(externalToolEffects.leaseOwner), lt(externalToolEffects.leaseExpiresAtMs, nowMs)),
        ),
      )
      .orderBy(asc(externalToolEffects.id))
      .limit(limit)
      .all();
  },
};
