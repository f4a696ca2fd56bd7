// Closes lookups whose lease expired without an outcome (their reconciler died or stalled), without touching live leases.
import { newUlid, type ReconciliationTrigger } from "@mosoo/contracts";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import type { StoreTx, TransactionOptions } from "../../../platform/db/store.port.js";
import type { EffectRow } from "../../ledger/application/effect-rows.service.js";
import { scheduleNextLookup } from "../domain/lookup-schedule.js";
import { reconciliationRepository } from "../infrastructure/effect-reconciliation.repository.js";
import type { ReconciliationMetrics } from "../infrastructure/reconciliation.metrics.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";

/** Expired leases handled per transaction (a large backlog is worked through in several). */
const EXPIRED_LEASES_PER_TRANSACTION = 256;

/**
 * Lookups whose lease EXPIRED without an outcome (docs/DESIGN.md §11: leases expire; nothing releases
 * another instance's lease at startup): the process that took the lease died (or stalled past
 * `leaseMs`, longer than any lookup may run). Run by the sweep of any API instance (and once at
 * startup); a live lease, one whose holder may still be looking the effect up, is never touched.
 * Each such lookup had been recorded as started, and counted, when the lease was taken,
 * so for a bound `unknown` effect it is recorded as `still_unknown` / `lookup_interrupted`
 * (trigger `sweep`) and its next lookup scheduled by the usual backoff — or operator attention
 * `lookup_bound_reached` at the bound: a process that dies at every lookup ends at the operator, never
 * in a restart loop. Each write is a compare-and-set on (version, lease owner), so two instances doing
 * this at once record each interruption once; an expired lease of an effect no adapter is bound to
 * any more is only released. Works in transactions of at most {@link EXPIRED_LEASES_PER_TRANSACTION} effects.
 * `opts`: the transactions' options (`{ startup: true }` at API startup).
 * @returns how many expired leases were ended.
 */
export async function recordInterruptedLookups(
  ctx: RuntimeContext,
  settings: ReconciliationSettings,
  metrics: ReconciliationMetrics,
  opts: TransactionOptions = {},
): Promise<number> {
  const now = ctx.clock.nowMs();
  let ended = 0;
  for (;;) {
    const { seen, done } = await ctx.store.transaction(async (tx) => {
      const rows = await reconciliationRepository.listExpiredLeases(tx, now, EXPIRED_LEASES_PER_TRANSACTION);
      let done = 0;
      for (const row of rows) {
        const adapter = settings.bindings.get(row.serverId);
        if (row.leaseOwner === null) continue;
        if (!adapter) {
          if (await reconciliationRepository.releaseExpiredLease(tx, row.id, row.leaseOwner, now)) done += 1;
          continue;
        }
        const schedule = scheduleNextLookup({
          lookupCount: row.lookupCount,
          maxLookups: settings.maxLookups,
          nowMs: now,
          backoff: settings.backoff,
          attention: null,
        });
        const after = await reconciliationRepository.commitOutcome(tx, row, row.version, row.leaseOwner, {
          ...schedule,
          updatedAtMs: now,
        });
        if (!after) continue;
        done += 1;
        await recordInterrupted(tx, { row, adapter, trigger: "sweep", nowMs: now, nextLookupAtMs: after.nextLookupAtMs }, metrics);
      }
      return { seen: rows.length, done };
    }, opts);
    ended += done;
    // a page where nothing could be ended (another instance got there first) is not read again
    if (seen < EXPIRED_LEASES_PER_TRANSACTION || done === 0) return ended;
  }
}

/**
 * Records, in `tx`, the lookup that an expired lease counted and that ended without an outcome:
 * `still_unknown` / `lookup_interrupted` by the bound adapter, found by `trigger`, started at the row's
 * `updatedAtMs` as last written before the lease (ms), next lookup at `nextLookupAtMs`; counted in the
 * metrics. The one record both the cleanup ({@link recordInterruptedLookups}) and a takeover
 * ({@link acquireLeaseRecordingTakeover}) write.
 */
async function recordInterrupted(
  tx: StoreTx,
  lookup: { row: EffectRow; adapter: ReconciliationAdapter; trigger: ReconciliationTrigger; nowMs: number; nextLookupAtMs: number | null },
  metrics: ReconciliationMetrics,
): Promise<void> {
  const { id, version } = lookup.adapter.declaration;
  await reconciliationRepository.insertRecord(tx, {
    id: newUlid(lookup.nowMs),
    effectId: lookup.row.id,
    adapterId: id,
    adapterVersion: version,
    trigger: lookup.trigger,
    outcome: "still_unknown",
    reasonCode: "lookup_interrupted",
    receiptJson: null,
    resultJson: null,
    error: "the lookup's lease expired without an outcome (its API process stopped or stalled)",
    startedAtMs: lookup.row.updatedAtMs,
    finishedAtMs: lookup.nowMs,
    nextLookupAtMs: lookup.nextLookupAtMs,
  });
  metrics.record(id, "still_unknown", "lookup_interrupted");
}

/**
 * Takes the lease of `lease.effect` (the row as the caller read it) for `lease.owner` from `lease.nowMs`
 * until `lease.expiresAtMs` (ms), in `tx`. When that row carries a lease EXPIRED at `nowMs`, the lease
 * is taken over ({@link reconciliationRepository.takeOverExpiredLease}: compare-and-set on version and
 * the expired owner) and the lookup it counted, which died without an outcome, is recorded in the same
 * transaction exactly as the cleanup records it ({@link recordInterruptedLookups}: `still_unknown` /
 * `lookup_interrupted`; found by `lease.trigger`, next lookup now: the one taking over). Otherwise, or
 * when that lease was given back meanwhile, it is {@link reconciliationRepository.acquireLease}.
 * @returns the lookup count the lease stored (this lookup included) when taken; undefined when the effect
 * changed or another reconciler holds it (nothing written).
 */
export async function acquireLeaseRecordingTakeover(
  tx: StoreTx,
  lease: {
    effect: EffectRow;
    adapter: ReconciliationAdapter;
    trigger: ReconciliationTrigger;
    owner: string;
    nowMs: number;
    expiresAtMs: number;
  },
  metrics: ReconciliationMetrics,
): Promise<number | undefined> {
  const { effect, owner, nowMs, expiresAtMs } = lease;
  const expiredOwner =
    effect.leaseOwner !== null && effect.leaseExpiresAtMs !== null && effect.leaseExpiresAtMs < nowMs ? effect.leaseOwner : null;
  const takenOver =
    expiredOwner === null
      ? undefined
      : await reconciliationRepository.takeOverExpiredLease(tx, effect.id, effect.version, expiredOwner, owner, nowMs, expiresAtMs);
  if (takenOver !== undefined) {
    await recordInterrupted(tx, { row: effect, adapter: lease.adapter, trigger: lease.trigger, nowMs, nextLookupAtMs: nowMs }, metrics);
    return takenOver;
  }
  return await reconciliationRepository.acquireLease(tx, effect.id, effect.version, owner, nowMs, expiresAtMs);
}
