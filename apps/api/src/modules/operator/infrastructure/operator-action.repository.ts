import { asc, eq } from "drizzle-orm";
import { effectOperatorActions } from "../../../platform/db/schema.js";
import type { DbHandle } from "../../ledger/infrastructure/db-handle.js";

/** An operator action row. */
export type OperatorActionRow = typeof effectOperatorActions.$inferSelect;

/** Append-only writes and reads of `effect_operator_actions`. */
export const operatorActionRepository = {
  /** Inserts one audit row (CHECKs: known action, actor 1–200 chars, reason 1–2000 chars). */
  insert(db: DbHandle, row: typeof effectOperatorActions.$inferInsert): void {
    db.insert(effectOperatorActions).values(row).run();
  },
  /** The actions on an effect, oldest first. */
  listByEffect(db: DbHandle, effectId: string): OperatorActionRow[] {
    return db
      .select()
      .from(effectOperatorActions)
      .where(eq(effectOperatorActions.effectId, effectId))
      .orderBy(asc(effectOperatorActions.id))
      .all();
  },
};
