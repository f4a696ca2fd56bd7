import { asc, eq } from "drizzle-orm";
import { effectOperatorRefusals } from "../../../platform/db/schema.js";
import type { DbHandle } from "../../ledger/infrastructure/db-handle.js";

/** A refused operator action row (`effect_operator_refusals`). */
export type OperatorRefusalRow = typeof effectOperatorRefusals.$inferSelect;

/** Append-only writes and reads of `effect_operator_refusals` (refused operator actions; no ledger state). */
export const operatorRefusalRepository = {
  /** Inserts one refusal row (CHECKs: a ULID effect id, known action and refusal code, actor 1–200, reason and message 1–2000 chars). */
  insert(db: DbHandle, row: typeof effectOperatorRefusals.$inferInsert): void {
    db.insert(effectOperatorRefusals).values(row).run();
  },
  /** The refused actions on an effect id, oldest first. */
  listByEffect(db: DbHandle, effectId: string): OperatorRefusalRow[] {
    return db
      .select()
      .from(effectOperatorRefusals)
      .where(eq(effectOperatorRefusals.effectId, effectId))
      .orderBy(asc(effectOperatorRefusals.id))
      .all();
  },
};
