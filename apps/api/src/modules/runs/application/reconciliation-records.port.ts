// The port through which the run view reads a run's reconciliation records (implemented by the reconciliation module).
import type { effectReconciliations } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** A reconciliation record as stored (times in ms). */
type ReconciliationRecordRow = typeof effectReconciliations.$inferSelect;

/**
 * What the run view needs of reconciliation: the records of every effect of a run, oldest first (by
 * record id), in one read in the caller's transaction; the view groups them by `effectId`. The runs module owns this interface; the reconciliation module's
 * `reconciliationRecordsService` implements it and the composition root hands it in, so runs never
 * imports reconciliation.
 */
export interface ReconciliationRecordsPort {
  listRecordsOfRun(tx: StoreTx, runId: string): Promise<ReconciliationRecordRow[]>;
}
