// The reconciler of unknown effects: takes the leases and runs the adapter lookups, one at a time or as a bounded worker pool.
import type { StoreTx, TransactionOptions } from "../../../platform/db/store.port.js";
import { newUlid, type ReconciliationTrigger } from "@mosoo/contracts";
import type { AdapterLogger, ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import { askAdapter } from "@mosoo/effect-reconciliation/host";
import { withSpan } from "@mosoo/telemetry";
import { BACKGROUND_BUSY_RETRY, isStoreBusy, retryWhenBusy } from "../../../platform/db/store-busy.js";
import type {
  EffectReconciliationPort,
  ReconcileManyOptions,
  ReconcileResult,
  ReconcileOptions,
} from "../../ledger/application/effect-reconciliation.port.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import { reconciliationRepository } from "../infrastructure/effect-reconciliation.repository.js";
import { pgOutcomeWriteRepository } from "../infrastructure/pg-outcome-write.repository.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import type { ReconciliationMetrics } from "../infrastructure/reconciliation.metrics.js";
import { acquireLeaseRecordingTakeover, recordInterruptedLookups } from "./interrupted-lookups.service.js";
import { ReconciliationAdmission, toReconcilable } from "./reconciliation-admission.policy.js";
import { adapterRefOf, ReconciliationOutcomeWriter } from "./reconciliation-outcome-writer.service.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";
import { RetentionCanary } from "./retention-canary.service.js";
import { runLeasedPool } from "./leased-lookup-pool.service.js";
import {
  hasLiveLease,
  leaseBatch as takeLeases,
  leaseOutlastsLookup,
  type LeasedEffect,
  type LeasedOrNot,
} from "./reconciliation-lease-batch.service.js";

/**
 * The `ineligible` reason of a lookup given up before its adapter call because what was left of its
 * lease no longer covered a whole lookup (the reconciler stalled between the lease and the call): the
 * lease is given back uncounted and the adapter is not asked (see `lookUpAndCommit` below).
 */
export const LEASE_LAPSED = "lease_lapsed";

/**
 * Reconciles `unknown` effects through their server's adapter (docs/DESIGN.md §5, §6);
 * the ledger's {@link EffectReconciliationPort}. Split by job: {@link ReconciliationAdmission} says
 * whether a lookup may start, this class takes the leases and runs the lookups (one, or a worker
 * pool of `concurrency` with p-queue; the adapter code itself runs in the adapter host), and
 * {@link ReconciliationOutcomeWriter} commits each outcome in one transaction, as a compare-and-set
 * on (status, version, lease). A loser records `superseded` and changes nothing.
 */
export class EffectReconciler implements EffectReconciliationPort {
  private readonly admission: ReconciliationAdmission;
  private readonly writer: ReconciliationOutcomeWriter;
  private readonly canary: RetentionCanary;
  /** Lookups under way ({@link reconcileLeased}), until their outcome committed or failed; see {@link drain}. */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly settings: ReconciliationSettings,
    private readonly metrics: ReconciliationMetrics,
  ) {
    this.admission = new ReconciliationAdmission(ctx, settings);
    this.writer = new ReconciliationOutcomeWriter(ctx, settings, metrics);
    this.canary = new RetentionCanary(ctx, settings, metrics);
  }

  /** Commits every outcome waiting for its group commit's window now (call before closing the store). */
  async flushOutcomes(): Promise<void> {
    return await this.writer.flushOutcomes();
  }

  /**
   * Shutdown: waits until every lookup under way has settled — its outcome
   * committed, or its error propagated — then commits what waits for a group commit's window. Call
   * it AFTER the adapter host is closed (closing it rejects the lookups still running, whose
   * outcomes are then submitted) and BEFORE the store closes, so that no outcome submitted during
   * the shutdown is lost and then misrecorded `lookup_interrupted` at the next start. Never rejects.
   */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await this.flushOutcomes();
  }

  /** The adapter bound to the effect's server when reconciliation is on and the adapter declares the tool; else null. */
  adapterFor(effect: Pick<EffectRow, "serverId" | "toolName">): ReconciliationAdapter | null {
    return this.admission.adapterFor(effect);
  }

  /** Why effects of this server and tool get no lookup, or null (see {@link ReconciliationAdmission.noLookupReason}). */
  noLookupReason(effect: Pick<EffectRow, "serverId" | "toolName" | "status">): string | null {
    return this.admission.noLookupReason(effect);
  }

  /** True when an automatic lookup may run now (see {@link ReconciliationAdmission.isDue}). `nowMs` in ms. */
  isDue(effect: EffectRow, nowMs: number): boolean {
    return this.admission.isDue(effect, nowMs);
  }

  /**
   * One lookup of effect `effectId` for `trigger`, with the outcome committed as described on the
   * class. With `opts.settleCommand` the outcome's transaction also ends the effect's command. Never throws for adapter misbehaviour
   * (the reconcile step turns it into `still_unknown`); a database error propagates.
   */
  async reconcile(effectId: string, trigger: ReconciliationTrigger, opts: ReconcileOptions = {}): Promise<ReconcileResult> {
    const admitted = this.admission.admit(await this.ctx.store.read((tx) => effectRows.findById(tx, effectId)), trigger);
    if ("kind" in admitted) return admitted;
    const { adapter, effect } = admitted;
    const owner = newUlid();
    const startedAtMs = this.ctx.clock.nowMs();
    // an expired lease is taken over, its dead lookup recorded `lookup_interrupted` in this transaction
    const lease = { effect, adapter, trigger, owner, nowMs: startedAtMs, expiresAtMs: startedAtMs + this.settings.leaseMs };
    const leasedLookupCount = await this.ctx.store.transaction((tx) => acquireLeaseRecordingTakeover(tx, lease, this.metrics));
    if (leasedLookupCount === undefined) {
      await this.writer.recordSuperseded(effect, adapterRefOf(adapter), trigger, startedAtMs, "lease_held");
      return {
        kind: "superseded",
        reasonCode: "lease_held",
        effect: await this.ctx.store.read((tx) => effectRows.findById(tx, effect.id)),
      };
    }
    return this.reconcileLeased(
      { effect, adapter, owner, leasedVersion: effect.version + 1, leasedLookupCount, startedAtMs },
      trigger,
      opts,
    );
  }

  /**
   * Takes the leases of `effects` (rows, or a reader run inside the lease transaction) in ONE
   * transaction: see {@link leaseBatch} for what each input is answered.
   */
  async leaseBatch(
    effects: readonly EffectRow[] | ((tx: StoreTx) => Promise<readonly EffectRow[]>),
    trigger: ReconciliationTrigger,
  ): Promise<Array<LeasedOrNot>> {
    const { ctx, settings, admission, writer, metrics } = this;
    return await takeLeases({ ctx, settings, admission, writer, metrics }, effects, trigger);
  }

  /** Gives back leases taken by {@link leaseBatch} that will not be used, and their counted lookups (one transaction; nothing else changes). */
  async releaseLeases(leased: readonly LeasedEffect[]): Promise<void> {
    if (leased.length === 0) return;
    const leases = leased.map((l) => ({ effectId: l.effect.id, owner: l.owner }));
    await this.ctx.store.transaction(async (tx) => {
      // PostgreSQL: the batch's give-backs in one statement
      if (tx.pgPrepared) await pgOutcomeWriteRepository.releaseLeases(tx, leases);
      else for (const l of leased) await reconciliationRepository.releaseLease(tx, l.effect.id, l.owner, true);
    });
  }

  /**
   * The lookup of an effect whose lease this reconciler holds (the lease took count of it before
   * the adapter runs), and the outcome's commit (one transaction, compare-and-set on the leased
   * version and owner; with `opts.settleCommand` the command's terminal state commits in it too). The adapter's answer is judged inside that
   * transaction against the effect as its lease left it, which the compare-and-set proves stored:
   * nothing the adapter was handed is ever read back. A miss without a key fence is first checked against the retention canary
   * ({@link RetentionCanary}: one more lookup of the same adapter, so the lease covers two lookup timeouts). A busy store is waited for asynchronously (`retryWhenBusy`, background policy)
   * before the commit gives up; if the commit throws, the lease is given back with its count (or
   * left to expire while the store is locked) and the error propagates.
   */
  async reconcileLeased(leased: LeasedEffect, trigger: ReconciliationTrigger, opts: ReconcileOptions = {}): Promise<ReconcileResult> {
    const running = this.lookUpAndCommit(leased, trigger, opts);
    this.inFlight.add(running);
    try {
      return await running;
    } finally {
      this.inFlight.delete(running);
    }
  }

  /** The body of {@link reconcileLeased} (tracked there for {@link drain}). */
  private async lookUpAndCommit(leased: LeasedEffect, trigger: ReconciliationTrigger, opts: ReconcileOptions): Promise<ReconcileResult> {
    const { effect, adapter, owner, leasedVersion, leasedLookupCount, startedAtMs } = leased;
    const adapterRef = adapterRefOf(adapter);
    const logger = boundLogger(this.ctx.logger, {
      effectId: effect.id,
      commandId: effect.commandId,
      driverInstanceId: effect.driverInstanceId,
      adapterId: adapterRef.id,
    });
    if (this.settings.beforeLookup) await this.settings.beforeLookup(effect.id);
    // The adapter is asked only under a lease that outlasts the whole lookup (docs/DESIGN.md §7): an
    // operator may resolve the effect once its lease expired, so a lookup that could still run then
    // is not started. Checked in the same synchronous step as the call (askAdapter calls the adapter
    // before its first await), so nothing can come in between on this instance.
    if (!leaseOutlastsLookup(this.ctx.clock.nowMs(), this.settings.lookupTimeoutMs, startedAtMs + this.settings.leaseMs)) {
      return await this.giveUpLapsedLease(leased, logger);
    }
    // Still the same synchronous step (startActiveSpan calls its callback at once, askAdapter calls the
    // adapter before its first await). One span per adapter lookup (docs/OPERATIONS.md "Traces"): the adapter, the trigger, and how it answered.
    const answer = await withSpan(
      "reconciliation.lookup",
      {
        "mosoo.adapter.id": adapterRef.id,
        "mosoo.reconciliation.trigger": trigger,
        "mosoo.server.id": effect.serverId,
        "mosoo.effect.id": effect.id,
      },
      async (span) => {
        const got = await askAdapter({
          effect: toReconcilable(effect),
          binding: { serverId: effect.serverId, adapter },
          nowMs: this.ctx.clock.nowMs(),
          timeoutMs: this.settings.lookupTimeoutMs,
          logger,
        });
        span.setAttribute("mosoo.reconciliation.answer", got.kind);
        return got;
      },
    );
    // A miss without a key fence stands only once the same adapter confirmed the retention canary
    // (see `RetentionCanary`); asked here, under the same lease, before the outcome's transaction.
    const canary = await this.canary.check(effect, answer, adapter, logger, startedAtMs + this.settings.leaseMs);
    try {
      // The adapter's answer is in memory: a store locked by another connection is waited for
      // asynchronously (the event loop stays free) rather than losing the answer to `store.busy`.
      return await retryWhenBusy(
        () =>
          this.writer.commit({
            effect,
            leasedVersion,
            leasedLookupCount,
            owner,
            adapterRef,
            trigger,
            startedAtMs,
            answer,
            settleCommand: opts.settleCommand ?? false,
            alsoWrite: opts.alsoWrite,
            canary,
          }),
        BACKGROUND_BUSY_RETRY,
      );
    } catch (err) {
      // The outcome's transaction rolled back (nothing of it was written): give the lease back, and
      // its count, so the effect is due again as before. If the store is still locked, the lease
      // expires by itself and the sweep looks the effect up again.
      try {
        await this.ctx.store.transaction((tx) => reconciliationRepository.releaseLease(tx, effect.id, owner, true));
      } catch (releaseErr) {
        if (!isStoreBusy(releaseErr)) throw releaseErr;
      }
      throw err;
    }
  }

  /**
   * A lease that no longer outlasts a lookup: given back uncounted (no adapter call was made; a
   * no-op when another reconciler or an operator has changed the lease since), logged, and answered
   * `ineligible` {@link LEASE_LAPSED} with the effect as it is now. A locked store leaves the lease to expire.
   */
  private async giveUpLapsedLease(leased: LeasedEffect, logger: AdapterLogger): Promise<ReconcileResult> {
    const { effect, owner, startedAtMs } = leased;
    try {
      await this.ctx.store.transaction((tx) => reconciliationRepository.releaseLease(tx, effect.id, owner, true));
    } catch (err) {
      if (!isStoreBusy(err)) throw err;
    }
    logger.warn({ leasedAtMs: startedAtMs, leaseMs: this.settings.leaseMs }, "reconciliation.lease_lapsed");
    return {
      kind: "ineligible",
      reasonCode: LEASE_LAPSED,
      effect: await this.ctx.store.read((tx) => effectRows.findById(tx, effect.id)),
    };
  }

  /**
   * Reconciles every effect `source` yields (rows; pulled lazily, so a caller can stream pages),
   * `opts.concurrency` lookups at a time (p-queue), as {@link reconcileLeased}: leases are taken in batches
   * ({@link leaseBatch}, up to `concurrency` per transaction: outcomes are group-committed, so lookup
   * slots free up in bursts of a batch, which one lease transaction refills) and each outcome is
   * committed whole through the group commit. `onResult` runs after each effect (its outcome already committed);
   * `shouldStart` returning false stops starting new lookups (leases taken but unused are released).
   * An error of one effect goes to `onError` (then the others continue), or, without `onError`,
   * rejects the returned promise.
   */
  async reconcileMany(source: Iterator<EffectRow> | AsyncIterator<EffectRow>, opts: ReconcileManyOptions): Promise<void> {
    // the next rows are pulled and leased (one transaction per batch) only when the buffered leases are used up
    await this.reconcileBatches(async (max) => {
      const rows: EffectRow[] = [];
      for (let next = await source.next(); !next.done; next = await source.next()) {
        rows.push(next.value);
        if (rows.length >= max) break;
      }
      return rows.length === 0 ? null : await this.leaseBatch(rows, opts.trigger);
    }, opts);
  }

  /**
   * The worker pool of {@link reconcileMany}: `nextBatch(max)` answers the next leased batch (`max` =
   * `opts.concurrency` items, or a fixed multiple of it: the sweep's pages hold two batches; each item a
   * lease or why no lookup will be made), or null when the
   * work ran out; it is called only when the previous batch is used up. Each leased item is looked up
   * and committed as {@link reconcileLeased}; the rest is the same as {@link reconcileMany}.
   */
  async reconcileBatches(nextBatch: (max: number) => Promise<LeasedOrNot[] | null>, opts: ReconcileManyOptions): Promise<void> {
    await runLeasedPool({
      nextBatch,
      concurrency: opts.concurrency,
      shouldStart: opts.shouldStart ?? (() => true),
      run: async (item) => {
        const isLeased = "owner" in item;
        const effectId = isLeased ? item.effect.id : item.effect?.id;
        try {
          const result = isLeased ? await this.reconcileLeased(item, opts.trigger, opts) : item;
          await opts.onResult(result, effectId);
        } catch (err) {
          if (!opts.onError) throw err;
          opts.onError(err, effectId);
        }
      },
      release: (unused) => this.releaseLeases(unused.filter((b): b is LeasedEffect => "owner" in b)),
    });
  }

  /**
   * Waits until no live lease is held on the effect (another reconciler's outcome has committed or
   * its lease expired), polling every 25 ms, at most `maxWaitMs` (ms). Returns the effect as it is then.
   */
  async awaitLease(effectId: string, maxWaitMs: number): Promise<EffectRow | undefined> {
    const deadline = Date.now() + maxWaitMs;
    for (;;) {
      const effect = await this.ctx.store.read((tx) => effectRows.findById(tx, effectId));
      // the lease is judged on the ledger's clock, the wait bounded in real time
      if (!effect || !hasLiveLease(effect, this.ctx.clock.nowMs()) || Date.now() >= deadline) return effect;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /**
   * Ends the reconciliation leases that EXPIRED without an outcome (their API process died or stalled)
   * and records each such lookup as `lookup_interrupted` (see {@link recordInterruptedLookups}); a live
   * lease, held by this or another API instance, is never touched. Called at
   * startup (`{ startup: true }`) and by every reconciliation sweep pass. Returns how many were ended.
   */
  async endExpiredLeases(opts: TransactionOptions = {}): Promise<number> {
    const n = await recordInterruptedLookups(this.ctx, this.settings, this.metrics, opts);
    if (n > 0) this.ctx.logger.warn({ ended: n }, "reconciliation.expired_leases_ended");
    return n;
  }
}

/**
 * A logger that writes to `parent` with `bindings` added to every entry's fields, as pino's
 * `child(bindings)` would, without building a child logger per lookup (most lookups log nothing:
 * the bindings are merged only when an entry is written). A binding wins over an entry's field of the
 * same name: an adapter's log line cannot pass itself off as another effect's, command's or Driver's.
 */
export function boundLogger(parent: RuntimeContext["logger"], bindings: Record<string, unknown>): AdapterLogger {
  return {
    debug: (fields, message) => parent.debug({ ...fields, ...bindings }, message),
    info: (fields, message) => parent.info({ ...fields, ...bindings }, message),
    warn: (fields, message) => parent.warn({ ...fields, ...bindings }, message),
    error: (fields, message) => parent.error({ ...fields, ...bindings }, message),
  };
}
