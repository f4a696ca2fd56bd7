// The bounded compare-and-set loop every Driver report of the ledger runs in: judged again on a fresh read when it loses.
import { StoreBusyError } from "../../../platform/db/store-busy.js";

/** How many times one Driver report is judged on a fresh read of the effect when its compare-and-set keeps losing. */
export const REPORT_ROUNDS = 3;

/**
 * Runs `judge` (one read of the effect, one decision, its compare-and-set) until it answers. `judge`
 * resolves `undefined` when its compare-and-set lost (another unit of work changed the effect after
 * its read and committed first: a fence by a redelivery or a repair, a reconciler taking the lease, the
 * sweep's attention flag; on
 * PostgreSQL's READ COMMITTED the UPDATE then matches nothing); what it wrote before that (the
 * evidence kept on the attempt row) holds whatever the next round decides. The report is then judged
 * again on the row as it is now (each statement of a round reads what is committed), so a lost
 * compare-and-set is never the final answer. A loss in each of
 * {@link REPORT_ROUNDS} rounds throws {@link StoreBusyError} (503 `store.busy`, `Retry-After`): the
 * transaction rolls back with nothing written, and the Driver sends the report again (it retries 5xx;
 * the report is idempotent).
 * @throws StoreBusyError `store.busy` after {@link REPORT_ROUNDS} losses in a row; whatever `judge` throws.
 */
export async function judgeUntilAnswered<T>(judge: () => Promise<T | undefined>): Promise<T> {
  for (let round = 1; ; round += 1) {
    const answer = await judge();
    if (answer !== undefined) return answer;
    if (round === REPORT_ROUNDS) throw new StoreBusyError();
  }
}
