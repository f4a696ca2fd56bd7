// The reconciler's batch lease: admits a page of unknown effects and takes all their leases in one transaction.
import type { StoreTx } from "../../../platform/db/store.port.js";
import { newUlid, type ReconciliationTrigger } from "@mosoo/contracts";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import type { ReconcileResult } from "../../ledger/application/effect-reconciliation.port.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import { reconciliationRepository } from "../infrastructure/effect-reconciliation.repository.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import type { ReconciliationAdmission } from "./reconciliation-admission.policy.js";
import { adapterRefOf, type ReconciliationOutcomeWriter } from "./reconciliation-outcome-writer.service.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";
import type { ReconciliationMetrics } from "../infrastructure/reconciliation.metrics.js";
import { acquireLeaseRecordingTakeover } from "./interrupted-lookups.service.js";

/**
 * An effect whose lease a reconciler holds: the row as read before the lease (`effect`), its bound
 * `adapter`, the lease `owner` token, the version the lease set (`leasedVersion`, the outcome's
 * compare-and-set), the lookup count the lease stored (`leasedLookupCount`, this lookup included, as the
 * lease statement returned it), and when the lease was taken (`startedAtMs`, ms).
 */
export interface LeasedEffect {
  effect: EffectRow;
  adapter: ReconciliationAdapter;
  owner: string;
  leasedVersion: number;
  leasedLookupCount: number;
  startedAtMs: number;
}

/**
 * The `ineligible` reason {@link leaseBatch} gives, for the `sweep` trigger only, to an
 * effect that another reconciler (another API instance's sweep) leased between the sweep's page read
 * and its lease: skipped, nothing written.
 */
export const LEASED_ELSEWHERE = "leased_elsewhere";

/** True when `effect` carries a lease that has not expired at `nowMs` (ms): the condition `listDue` and `acquireLease` exclude. */
export function hasLiveLease(effect: EffectRow, nowMs: number): boolean {
  return effect.leaseOwner !== null && effect.leaseExpiresAtMs !== null && effect.leaseExpiresAtMs >= nowMs;
}

/**
 * True while a lease expiring at `leaseExpiresAtMs` (ms since the epoch) still covers a whole lookup
 * bounded by `lookupTimeoutMs` (ms) started at `nowMs`: an adapter is asked only then (docs/DESIGN.md §7),
 * for the effect's lookup and for its retention canary alike.
 */
export function leaseOutlastsLookup(nowMs: number, lookupTimeoutMs: number, leaseExpiresAtMs: number): boolean {
  return nowMs + lookupTimeoutMs <= leaseExpiresAtMs;
}

/** What {@link leaseBatch} answers per effect: a lease, or why no lookup will be made. */
export type LeasedOrNot =
  LeasedEffect | Exclude<ReconcileResult, { kind: "confirmed_succeeded" | "confirmed_not_executed" | "still_unknown" }>;

/**
 * What {@link leaseBatch} works with: the runtime, the settings (`leaseMs`), the admission, the outcome
 * writer (for `superseded` records) and the metrics (a taken-over lease's `lookup_interrupted`).
 */
export interface LeaseBatchDeps {
  ctx: RuntimeContext;
  settings: ReconciliationSettings;
  admission: ReconciliationAdmission;
  writer: ReconciliationOutcomeWriter;
  metrics: ReconciliationMetrics;
}

/**
 * Takes the leases of `effects` (rows as read by the caller) in ONE transaction, each a
 * compare-and-set on (status `unknown`, the row's `version`) as `EffectReconciler.reconcile` takes one.
 * Returns, per input in order, the {@link LeasedEffect} or why no lookup will be made: `ineligible`
 * (checked on the row, as `EffectReconciler.reconcile` does, and again on the current row when the row
 * changed since the caller read it) or `superseded` (another reconciler holds it: a `superseded`
 * record is written, as for a single lease). For the `sweep` trigger (several API instances sweep the
 * same backlog at once) a lost compare-and-set is never `superseded`: an effect
 * with no lease whose version merely moved is leased at its current version, and one another
 * reconciler holds (or took meanwhile) is `ineligible` with reason {@link LEASED_ELSEWHERE}, nothing
 * written. Only leases are
 * batched: every outcome still commits in its own transaction (`EffectReconciler.reconcileLeased`).
 * `effects` may also be a reader run first inside the lease transaction (the sweep reads its due
 * page there, so another instance's leases committed before it are not even read).
 */
export async function leaseBatch(
  { ctx, settings, admission, writer, metrics }: LeaseBatchDeps,
  effects: readonly EffectRow[] | ((tx: StoreTx) => Promise<readonly EffectRow[]>),
  trigger: ReconciliationTrigger,
): Promise<Array<LeasedOrNot>> {
  const startedAtMs = ctx.clock.nowMs();
  const lost: Array<{ effect: EffectRow; adapter: ReconciliationAdapter }> = [];
  const out = await ctx.store.transaction(async (tx) => {
    const rows: LeasedOrNot[] = [];
    // Admission first (per row, as reconcile does), then every admitted row's lease in ONE statement
    // (each row still a compare-and-set on status, version and no live lease; one owner token per batch).
    const admitted: Array<{ at: number; adapter: ReconciliationAdapter; effect: EffectRow }> = [];
    for (const row of typeof effects === "function" ? await effects(tx) : effects) {
      const verdict = admission.admit(row, trigger);
      if ("kind" in verdict) rows.push(verdict);
      else admitted.push({ at: rows.push(verdict as unknown as LeasedOrNot) - 1, ...verdict });
    }
    const owner = newUlid(startedAtMs);
    const expiresAtMs = startedAtMs + settings.leaseMs;
    const lease = (effect: EffectRow, adapter: ReconciliationAdapter) =>
      acquireLeaseRecordingTakeover(tx, { effect, adapter, trigger, owner, nowMs: startedAtMs, expiresAtMs }, metrics);
    // A row read with an expired lease is taken over on its own (its dead lookup recorded `lookup_interrupted`).
    const takenOver = new Map<string, number>();
    for (const { adapter, effect } of admitted) {
      if (effect.leaseOwner === null || hasLiveLease(effect, startedAtMs)) continue;
      const count = await lease(effect, adapter);
      if (count !== undefined) takenOver.set(effect.id, count);
    }
    const taken = await reconciliationRepository.acquireLeases(
      tx,
      admitted.filter(({ effect }) => !takenOver.has(effect.id)).map(({ effect }) => ({ effectId: effect.id, version: effect.version })),
      owner,
      startedAtMs,
      expiresAtMs,
    );
    for (const [id, count] of takenOver) taken.set(id, count);
    for (const { at, adapter, effect } of admitted) {
      const leasedLookupCount = taken.get(effect.id);
      if (leasedLookupCount !== undefined) {
        rows[at] = { effect, adapter, owner, leasedVersion: effect.version + 1, leasedLookupCount, startedAtMs } satisfies LeasedEffect;
        continue;
      }
      // The row changed since the caller read it: if it may no longer be looked up (resolved,
      // rescheduled, flagged), say why, as reconcile would on a fresh read; else another reconciler holds it.
      const current = admission.admit(await effectRows.findById(tx, effect.id), trigger);
      if ("kind" in current) {
        rows[at] = current;
        continue;
      }
      if (trigger === "sweep") {
        // Several API instances sweep one backlog. No lease on the current row:
        // only its version moved since the page read (another instance leased it, then gave the unused
        // lease back at the end of its pass), so the lease is taken on the current row. A live lease:
        // another instance's sweep leased it after this one read its page; the sweep's own read would no
        // longer list it (`listDue` skips live leases), so it is skipped and no `superseded` record is
        // written (no lookup raced).
        const row = current.effect;
        const count = hasLiveLease(row, startedAtMs) ? undefined : await lease(row, current.adapter);
        rows[at] =
          count !== undefined
            ? ({
                effect: row,
                adapter: current.adapter,
                owner,
                leasedVersion: row.version + 1,
                leasedLookupCount: count,
                startedAtMs,
              } satisfies LeasedEffect)
            : { kind: "ineligible", reasonCode: LEASED_ELSEWHERE, effect: row };
        continue;
      }
      lost.push({ effect, adapter });
      rows[at] = { kind: "superseded" as const, reasonCode: "lease_held" as const, effect };
    }
    return rows;
  });
  for (const { effect, adapter } of lost) await writer.recordSuperseded(effect, adapterRefOf(adapter), trigger, startedAtMs, "lease_held");
  // a lost lease answers with the effect as it is now, as reconcile does
  const answers: LeasedOrNot[] = [];
  for (const r of out) {
    answers.push(
      "kind" in r && r.kind === "superseded"
        ? {
            kind: "superseded" as const,
            reasonCode: r.reasonCode,
            effect: await ctx.store.read((tx) => effectRows.findById(tx, r.effect!.id)),
          }
        : r,
    );
  }
  return answers;
}
