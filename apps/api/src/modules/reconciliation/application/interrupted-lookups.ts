import { newUlid } from "@mosoo/contracts";
import type { RuntimeContext } from "../../ledger/application/runtime-context.js";
import { scheduleNextLookup } from "../domain/lookup-schedule.js";
import { reconciliationRepository } from "../../ledger/infrastructure/effect-reconciliation.repository.js";
import type { ReconciliationMetrics } from "../infrastructure/reconciliation-metrics.js";
import type { ReconciliationSettings } from "./reconciliation-settings.js";

/**
 * At API startup (one API process per store), in ONE transaction: every effect still holding a
 * lease was being looked up by a process that died. Its lookup had been recorded as started, and
 * counted, when the lease was taken (docs/DESIGN.md §4), so for a bound `unknown` effect it is recorded as
 * `still_unknown` / `lookup_interrupted` (trigger `sweep`) and its next lookup scheduled by the usual
 * backoff — or operator attention `lookup_bound_reached` at the bound: a process that dies at every
 * lookup ends at the operator, never in a restart loop. Then every lease is released.
 * @returns how many leases were released.
 */
export async function recordInterruptedLookups(
  ctx: RuntimeContext,
  settings: ReconciliationSettings,
  metrics: ReconciliationMetrics,
): Promise<number> {
  const now = ctx.clock.nowMs();
  // Startup work: nothing is served yet, so this one write may wait for a lock as long as the migrations did.
  return ctx.store.transaction(
    async (tx) => {
      for (const row of await reconciliationRepository.listLeased(tx)) {
        const adapter = settings.bindings.get(row.serverId);
        if (row.status !== "unknown" || !adapter || row.leaseOwner === null) continue;
        const schedule = scheduleNextLookup({
          lookupCount: row.lookupCount,
          maxLookups: settings.maxLookups,
          nowMs: now,
          backoff: settings.backoff,
          attention: null,
        });
        const after = await reconciliationRepository.commitOutcome(tx, row.id, row.version, row.leaseOwner, {
          ...schedule,
          updatedAtMs: now,
        });
        if (!after) continue;
        const { id, version } = adapter.declaration;
        await reconciliationRepository.insertRecord(tx, {
          id: newUlid(now),
          effectId: row.id,
          adapterId: id,
          adapterVersion: version,
          trigger: "sweep",
          outcome: "still_unknown",
          reasonCode: "lookup_interrupted",
          receiptJson: null,
          resultJson: null,
          error: "the API process stopped while this lookup ran",
          startedAtMs: row.updatedAtMs,
          finishedAtMs: now,
          nextLookupAtMs: after.nextLookupAtMs,
        });
        metrics.record(id, "still_unknown", "lookup_interrupted");
      }
      return reconciliationRepository.releaseAllLeases(tx);
    },
    { startup: true },
  );
}
