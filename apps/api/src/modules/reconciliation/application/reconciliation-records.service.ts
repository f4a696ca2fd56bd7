// The reconciliation module's read of an effect's reconciliation records, for the views other modules build.
import type { StoreTx } from "../../../platform/db/store.port.js";
import { reconciliationRepository, type ReconciliationRow } from "../infrastructure/effect-reconciliation.repository.js";

/**
 * Reads reconciliation records (oldest first), of one effect or of a whole run, for another module: the operator's `show`
 * imports it; the run view reaches it through the runs module's `ReconciliationRecordsPort`, wired by
 * the composition root. The records' table stays the reconciliation module's own.
 */
export const reconciliationRecordsService = {
  /** The reconciliation records of `effectId`, oldest first (reads only, through `tx`). */
  listRecords(tx: StoreTx, effectId: string): Promise<ReconciliationRow[]> {
    return reconciliationRepository.listRecords(tx, effectId);
  },
  /** The reconciliation records of every effect of run `runId`, oldest first, in one read (reads only, through `tx`). */
  listRecordsOfRun(tx: StoreTx, runId: string): Promise<ReconciliationRow[]> {
    return reconciliationRepository.listRecordsOfRun(tx, runId);
  },
};
