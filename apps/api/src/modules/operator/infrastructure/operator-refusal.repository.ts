// Append-only writes and reads of refused operator actions (`effect_operator_refusals`).
import { asc, eq } from "drizzle-orm";
import type { effectOperatorRefusals } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** A refused operator action row (`effect_operator_refusals`). */
export type OperatorRefusalRow = typeof effectOperatorRefusals.$inferSelect;

/** Append-only writes and reads of `effect_operator_refusals` (refused operator actions; no ledger state; dialect-neutral). */
export const operatorRefusalRepository = {
  /** Inserts one refusal row (CHECKs: a ULID effect id, known action and refusal code, actor 1–200, reason and message 1–2000 chars). */
  async insert(tx: StoreTx, row: typeof effectOperatorRefusals.$inferInsert): Promise<void> {
    await tx.db.insert(tx.tables.effectOperatorRefusals).values(row);
  },
  /** The refused actions on an effect id, oldest first. */
  async listByEffect(tx: StoreTx, effectId: string): Promise<OperatorRefusalRow[]> {
    const r = tx.tables.effectOperatorRefusals;
    return tx.db.select().from(r).where(eq(r.effectId, effectId)).orderBy(asc(r.id));
  },
};
