// Append-only writes and reads of the operator actions' audit rows (`effect_operator_actions`).
import { asc, eq } from "drizzle-orm";
import type { effectOperatorActions } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** An operator action row. */
export type OperatorActionRow = typeof effectOperatorActions.$inferSelect;

/** Append-only writes and reads of `effect_operator_actions` (dialect-neutral: docs/ARCHITECTURE.md). */
export const operatorActionRepository = {
  /** Inserts one audit row (CHECKs: known action, actor 1–200 chars, reason 1–2000 chars). */
  async insert(tx: StoreTx, row: typeof effectOperatorActions.$inferInsert): Promise<void> {
    await tx.db.insert(tx.tables.effectOperatorActions).values(row);
  },
  /** The actions on an effect, oldest first. */
  async listByEffect(tx: StoreTx, effectId: string): Promise<OperatorActionRow[]> {
    const a = tx.tables.effectOperatorActions;
    return tx.db.select().from(a).where(eq(a.effectId, effectId)).orderBy(asc(a.id));
  },
};
