// The maintenance sweep: finalizes Drivers whose heartbeat expired, purges stale registrations, looks up due unknown effects again.
import { BACKGROUND_BUSY_RETRY, isStoreBusy, retryWhenBusy, storeBusyCause } from "../../../platform/db/store-busy.js";
import { driverInstanceRepository } from "../infrastructure/driver-instance.repository.js";
import { storeLivenessRepository, type LivenessState } from "../infrastructure/store-liveness.repository.js";
import type { FinalizationRepairService } from "./finalization-repair.service.js";
import type { WorkClaimService } from "./work-claim.service.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";

/**
 * The port through which the sweep looks up due `still_unknown` effects again (docs/DESIGN.md §6.3):
 * the drivers module owns it, the reconciliation module's `ReconciliationSweep` implements it and the
 * composition root hands it in (absent when reconciliation is off). `sweepOnce` answers how many
 * lookups committed (`lookedUp`) and how many of them resolved the effect (`resolved`).
 */
export interface ReconciliationSweepPort {
  sweepOnce(): Promise<{ lookedUp: number; resolved: number }>;
}

/** What one sweep pass did. */
export interface SweepReport {
  driversFinalized: number;
  /** Driver registrations that never connected, purged after `driverUnconnectedTtlMs`. */
  driversPurged: number;
  /** Effects looked up again by the reconciliation sweep (0 with the flag off). */
  effectsLookedUp: number;
  /** Of those, effects resolved to `succeeded` or `not_executed`. */
  effectsResolved: number;
}

/**
 * The maintenance sweep: every Driver instance whose heartbeat is older than the heartbeat TTL
 * (or whose finalization was left half-done by a crash) goes through the same finalization repair
 * as an explicit finalize (see {@link FinalizationRepairService}), so no effect stays `executing` behind a dead Driver.
 * Then it purges Driver registrations that never connected and have no run, once they are older than
 * `driverUnconnectedTtlMs` (registrations are bounded).
 * With reconciliation on, the pass then looks up due `still_unknown` effects again (docs/DESIGN.md §6.3).
 * Grace after startup: no heartbeat expires before the API has been up for one heartbeat TTL, so
 * an API outage longer than the TTL does not finalize every healthy Driver. Grace after a busy store:
 * likewise, no heartbeat expires until one heartbeat TTL has passed since the API last found its own
 * store busy (`ctx.storeBusy`: a `503 store.busy` answer, or a pass ended on `store.busy`), so a lock
 * held by another process longer than the TTL (a backup) does not finalize Drivers whose heartbeats
 * the API itself refused. A Driver that really died meanwhile is finalized up to one TTL later.
 * Grace after a store outage seen by ANY instance (docs/DESIGN.md §11, "Operating through store
 * outages"): every instance writes the store's liveness row (`store_liveness`) every
 * {@link livenessTickMs} ms while its sweep timer runs, and once more at the start of each Driver part;
 * a gap of more than half a heartbeat TTL between two writes (in the store's own time: nobody could
 * write, or the store was frozen) and every outage an instance found itself are recorded there, in the
 * store's time. No instance judges silence until one heartbeat TTL of the store's time has passed since
 * the last recorded outage, so an instance whose own queries merely stalled does not finalize a Driver
 * whose heartbeats the store could not take.
 *
 * Several API instances on one store (see {@link WorkClaimService}): any instance may run a pass. The Driver part
 * (expiry, finalization repair, purge) runs one at a time: only under the store claim
 * `maintenance_sweep` / `pass` (`work_claims`); an instance whose timer fires while another's Driver
 * part runs skips it. The reconciliation part runs on every instance at once, OUTSIDE that claim: its
 * lookups take per-effect leases (a compare-and-set; an effect leased by another instance is skipped),
 * so N instances share a backlog of due effects, each with its own lookup concurrency, and no effect is
 * looked up twice. A pass's repairs are each claimed per Driver as well.
 */
export class MaintenanceSweepService {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepReport> | undefined;
  /** When this API process started (ms): heartbeats missed while the API itself was down do not count. */
  private readonly startedAtMs: number;
  /** The liveness row's timer (while {@link start}ed). */
  private livenessTimer: NodeJS.Timeout | undefined;
  /** The longest gap (ms) between two writes of the liveness row that is not an outage; undefined until {@link start}. */
  private maxLivenessGapMs: number | undefined;

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly repair: FinalizationRepairService,
    private readonly claims: WorkClaimService,
    private readonly reconciliationSweep?: ReconciliationSweepPort,
  ) {
    this.startedAtMs = ctx.clock.nowMs();
  }

  /**
   * One pass (skipped, all zeros, while another API instance's pass holds the sweep claim). Concurrent calls share the pass in flight. Errors of one Driver are logged and do not
   * stop the pass. A store locked by another connection (`store.busy`, after the asynchronous
   * retries of `retryWhenBusy`) only ends the pass early with a warning: the next pass tries again,
   * and nothing is lost (every step is its own transaction and the repair resumes a half-done
   * finalization). Never rejects: a timer-driven pass can never crash the API.
   */
  sweepOnce(): Promise<SweepReport> {
    this.running ??= this.guardedPass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async guardedPass(): Promise<SweepReport> {
    const report: SweepReport = { driversFinalized: 0, driversPurged: 0, effectsLookedUp: 0, effectsResolved: 0 };
    try {
      const claimed = await this.claims.runClaimed("maintenance_sweep", "pass", () => this.driverPass());
      if (claimed.claimed) Object.assign(report, claimed.value);
      // not claimed: another instance runs the Driver part; the reconciliation part below is shared (see the class)
      if (this.reconciliationSweep) {
        const r = await this.reconciliationSweep.sweepOnce();
        report.effectsLookedUp = r.lookedUp;
        report.effectsResolved = r.resolved;
      }
      return report;
    } catch (err) {
      if (isStoreBusy(err)) {
        this.ctx.storeBusy.noteBusy();
        this.ctx.logger.warn(
          { cause: storeBusyCause(err) },
          "sweep.store_busy: the store is locked, out of connections or unreachable; the next pass tries again",
        );
      } else this.ctx.logger.error({ err: String(err) }, "sweep.failed");
      return report;
    }
  }

  /** The Driver part of a pass (expired heartbeats, finalization repair, purge), run under the sweep claim. */
  private async driverPass(): Promise<Pick<SweepReport, "driversFinalized" | "driversPurged">> {
    // A Driver cannot heartbeat an API that is down, nor one whose store is locked (its heartbeats
    // answer 503 store.busy): until this process has been up for one TTL, and until one TTL has
    // passed since the store was last busy, only half-done finalizations are resumed and no
    // heartbeat counts as expired.
    const now = this.ctx.clock.nowMs();
    const ttl = this.ctx.settings.heartbeatTtlMs;
    const graceFrom = Math.max(this.startedAtMs, this.ctx.storeBusy.lastBusyAtMs() ?? Number.MIN_SAFE_INTEGER);
    // the store's record of outages seen by any instance, in the store's time (written AFTER `now` was
    // read: a tick that waited for a frozen store sees the gap; one that ran before it only vouches for earlier silence)
    const liveness = await this.tickLiveness();
    const storeQuiet = liveness.lastOutageAtMs === null || liveness.nowMs - liveness.lastOutageAtMs >= ttl;
    const cutoff = now - graceFrom >= ttl && storeQuiet ? now - ttl : Number.MIN_SAFE_INTEGER;
    const report = { driversFinalized: 0, driversPurged: 0 };
    for (const instance of await this.ctx.store.read((tx) => driverInstanceRepository.listExpired(tx, cutoff))) {
      try {
        // judged again inside the repair: a heartbeat that committed since the read above keeps it alive
        if (await retryWhenBusy(() => this.repair.finalizeExpired(instance.id, cutoff), BACKGROUND_BUSY_RETRY))
          report.driversFinalized += 1;
      } catch (err) {
        if (isStoreBusy(err)) throw err; // the whole store is locked: stop here, the next pass resumes
        this.ctx.logger.error({ driverInstanceId: instance.id, err: String(err) }, "sweep.finalize_failed");
      }
    }
    try {
      report.driversPurged = await this.ctx.store.transaction((tx) =>
        driverInstanceRepository.purgeNeverConnected(tx, now - this.ctx.settings.driverUnconnectedTtlMs),
      );
      if (report.driversPurged > 0) this.ctx.logger.info({ count: report.driversPurged }, "sweep.drivers_purged");
    } catch (err) {
      this.ctx.logger.error({ err: String(err) }, "sweep.purge_failed");
    }
    return report;
  }

  /**
   * Writes the store's liveness row once (see the class): this instance's last own sighting of an
   * unavailable store as an outage, and (while the timer runs) a too-long gap since any instance's last write.
   * @returns the store's time of the write and its last recorded outage. Rejects as a query does (`store.busy`).
   */
  private async tickLiveness(): Promise<LivenessState> {
    const localNowMs = this.ctx.clock.nowMs();
    const lastBusy = this.ctx.storeBusy.lastBusyAtMs();
    return this.ctx.store.transaction((tx) =>
      storeLivenessRepository.tick(tx, {
        dialect: this.ctx.store.dialect,
        localNowMs,
        observedAgoMs: lastBusy === undefined ? undefined : Math.max(0, localNowMs - lastBusy),
        maxGapMs: this.maxLivenessGapMs,
      }),
    );
  }

  /** How often (ms) a started sweep writes the liveness row: its interval, but at least 4 times per heartbeat TTL. */
  livenessTickMs(intervalMs: number): number {
    return Math.max(50, Math.min(intervalMs, Math.floor(this.ctx.settings.heartbeatTtlMs / 4)));
  }

  /**
   * Runs {@link sweepOnce} every `intervalMs` (ms), and writes the store's liveness row every
   * {@link livenessTickMs} ms (a gap over half a heartbeat TTL counts as an outage), until {@link stop}.
   * The timers do not keep the process alive.
   */
  start(intervalMs: number): void {
    void this.stop();
    this.maxLivenessGapMs = Math.floor(this.ctx.settings.heartbeatTtlMs / 2);
    this.timer = setInterval(() => void this.sweepOnce(), intervalMs);
    this.timer.unref();
    let ticking = false; // one write at a time: a store that does not answer gets no pile of them
    this.livenessTimer = setInterval(() => {
      if (ticking) return;
      ticking = true;
      this.tickLiveness()
        .catch((err: unknown) => {
          if (isStoreBusy(err)) this.ctx.storeBusy.noteBusy();
          else this.ctx.logger.error({ err: String(err) }, "sweep.liveness_failed");
        })
        .finally(() => (ticking = false));
    }, this.livenessTickMs(intervalMs));
    this.livenessTimer.unref();
  }

  /** Stops the timers and waits for a pass in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.livenessTimer) clearInterval(this.livenessTimer);
    this.timer = undefined;
    this.livenessTimer = undefined;
    await this.running;
  }
}
