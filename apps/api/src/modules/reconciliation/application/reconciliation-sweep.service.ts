// The sweep's reconciliation pass: pages through unknown effects whose next lookup is due and looks them up again.
import { newUlid } from "@mosoo/contracts";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { reconciliationRepository } from "../infrastructure/effect-reconciliation.repository.js";
import { isConfirmed } from "../../ledger/application/effect-reconciliation.port.js";
import type { EffectReconciler } from "./effect-reconciler.service.js";
import { hasLiveLease, type LeasedOrNot } from "./reconciliation-lease-batch.service.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";

/**
 * After this long (ms) a pass starts no new lookup (the ones in flight finish), so the
 * maintenance sweep that runs it still finalizes expired Drivers regularly during a large recovery;
 * the next pass continues where the due effects are.
 */
const SWEEP_PASS_BUDGET_MS = 5_000;

/**
 * Lease batches per page: each lease transaction reads and leases this many times `concurrency` due
 * effects (a buffer the worker pool draws from as lookups end), so a backlog costs half as many lease
 * transactions, and commits, as one batch of `concurrency` per transaction would. A leased effect
 * waits at most this many lookup rounds for its turn, far within its lease (two lookup timeouts and
 * 10 s), and a lookup still starts only while the lease outlasts it.
 */
const LEASE_BATCHES_PER_PAGE = 2;

/** What one reconciliation sweep pass did (counts). */
export interface ReconciliationSweepReport {
  /** Lookups whose outcome this pass committed (superseded ones not counted). */
  lookedUp: number;
  /** Of those, effects resolved to `succeeded` or `not_executed`. */
  resolved: number;
}

/**
 * The reconciliation part of the maintenance sweep (docs/DESIGN.md §6.3): `unknown` effects whose next
 * lookup is due (persisted, so it survives API restarts) are looked up again with bounded
 * concurrency, until their lookup bound, after which they wait for an operator. A confirmed outcome
 * resolves the effect (and lifts the fence) even though its command is already terminal.
 */
export class ReconciliationSweep {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly reconciler: EffectReconciler,
    private readonly settings: ReconciliationSettings,
  ) {}

  /**
   * One pass over the effects due when it starts, streamed: due effects are claimed in pages of
   * {@link LEASE_BATCHES_PER_PAGE} × `concurrency` (keyset pagination by id), each batch read and leased in ONE transaction
   * ({@link EffectReconciler.leaseBatch} with the page read inside it), and handed to the reconciler's
   * worker pool (`reconcileBatches`: `concurrency` lookups in flight until the due effects, or
   * {@link SWEEP_PASS_BUDGET_MS}, run out), so memory does not grow with the backlog. On PostgreSQL
   * the page read skips the rows another API instance's lease transaction holds (`FOR UPDATE SKIP
   * LOCKED`), and a lease committed elsewhere keeps a row out of the read, so instances sweeping one
   * backlog claim disjoint batches instead of reading and losing each other's. Each effect's outcome
   * still commits whole. An error on one effect is logged and does not stop the pass.
   */
  async sweepOnce(): Promise<ReconciliationSweepReport> {
    const report: ReconciliationSweepReport = { lookedUp: 0, resolved: 0 };
    if (!this.settings.enabled) return report;
    // Lookups whose lease expired without an outcome (a dead or stalled API instance): recorded
    // `lookup_interrupted` and scheduled again, so they become due like any other (see `recordInterruptedLookups` in interrupted-lookups.service.ts).
    await this.reconciler.endExpiredLeases();
    const now = this.ctx.clock.nowMs();
    const stopAtMs = now + SWEEP_PASS_BUDGET_MS;
    await this.reconciler.reconcileBatches(this.dueBatches(now), {
      trigger: "sweep",
      concurrency: this.settings.concurrency,
      shouldStart: () => this.ctx.clock.nowMs() < stopAtMs,
      onResult: (result) => {
        if (result.kind !== "ineligible" && result.kind !== "superseded") report.lookedUp += 1;
        if (isConfirmed(result)) report.resolved += 1;
      },
      onError: (err, effectId) => this.ctx.logger.error({ effectId, err: String(err) }, "sweep.reconcile_failed"),
    });
    return report;
  }

  /**
   * Flags `effect` `lookup_bound_reached` (compare-and-set) when the sweep meets it unflagged at or past
   * the lookup bound: every outcome at the bound flags it, but a lookup counted by an API instance that
   * died, whose expired lease another reconciler took over and gave back unused, or a bound lowered by a
   * restart, leaves it counted and unflagged; without the flag it would be listed, never looked up and
   * never reach an operator (docs/DESIGN.md §6.3). In the same transaction, as every other flag comes
   * with its lookup's record, it records why: `still_unknown` / `lookup_bound_reached` (trigger `sweep`,
   * the bound adapter, no lookup made, no next lookup), which is also what moves the console's change
   * feed (`changeMarker` in operator-query.repository.ts). A row changed meanwhile is left, and so is a
   * row still holding a lease, live or expired: an expired one's dead lookup is recorded
   * `lookup_interrupted` by the next pass's expired-lease cleanup first, so the history reads in order
   * (interrupted, then flagged) and never the flag before its lookup's record.
   */
  private async flagIfBoundReached(tx: StoreTx, effect: EffectRow, nowMs: number): Promise<void> {
    if (effect.status !== "unknown" || effect.operatorAttention !== null || effect.lookupCount < this.settings.maxLookups) return;
    if (effect.leaseOwner !== null) return;
    const flagged = await effectRows.updateIfCurrent(tx, effect, {
      operatorAttention: "lookup_bound_reached",
      nextLookupAtMs: null,
      updatedAtMs: nowMs,
    });
    if (!flagged) return;
    // always bound: the sweep pages only the bound servers' effects (`dueBatches`)
    const adapter = this.settings.bindings.get(effect.serverId)?.declaration;
    await reconciliationRepository.insertRecord(tx, {
      id: newUlid(nowMs),
      effectId: effect.id,
      adapterId: adapter?.id ?? "none",
      adapterVersion: adapter?.version ?? "none",
      trigger: "sweep",
      outcome: "still_unknown",
      reasonCode: "lookup_bound_reached",
      receiptJson: null,
      resultJson: null,
      error: `${effect.lookupCount} lookups counted, at or past the bound of ${this.settings.maxLookups}, with no outcome: no further lookup, waiting for an operator`,
      startedAtMs: nowMs,
      finishedAtMs: nowMs,
      nextLookupAtMs: null,
    });
    this.ctx.logger.warn({ effectId: effect.id, lookupCount: effect.lookupCount }, "reconciliation.lookup_bound_reached");
  }

  /**
   * The batches of effects due at `nowMs`, oldest first: each call reads the next page (at most
   * {@link LEASE_BATCHES_PER_PAGE} × `max` rows after the last one read) inside the lease transaction
   * and leases the ones due. Null once a page comes back short (nothing further is due).
   */
  private dueBatches(nowMs: number): (max: number) => Promise<LeasedOrNot[] | null> {
    const eligible = [...this.settings.bindings].map(([serverId, adapter]) => ({ serverId, tools: adapter.declaration.tools }));
    const skipLocked = this.ctx.store.dialect === "postgres";
    let afterId: string | undefined;
    let done = eligible.length === 0;
    return async (max) => {
      if (done) return null;
      const pageSize = max * LEASE_BATCHES_PER_PAGE;
      return await this.reconciler.leaseBatch(async (tx) => {
        const page = await reconciliationRepository.listDue(tx, nowMs, pageSize, eligible, afterId, { skipLocked });
        if (page.length < pageSize) done = true;
        if (page.length > 0) afterId = page.at(-1)!.id;
        const due: EffectRow[] = [];
        for (const effect of page) {
          if (this.reconciler.isDue(effect, nowMs)) due.push(effect);
          else await this.flagIfBoundReached(tx, effect, nowMs);
        }
        return due;
      }, "sweep");
    };
  }
}
