// Runs work under a claim in the store, so two API instances never do the same finalization or sweep work at once.
import { newUlid } from "@mosoo/contracts";
import type { WorkClaimKind } from "@mosoo/contracts/statuses";
import type { Logger } from "pino";
import type { Clock } from "../../../platform/clock.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { workClaimRepository } from "../infrastructure/work-claim.repository.js";

/** Runs `fn` as one unit of work of the store (its transaction) and resolves with its result. */
type ClaimUnitOfWork = <T>(fn: (tx: StoreTx) => Promise<T>) => Promise<T>;

/** What {@link WorkClaimService} needs: this API instance's id (a ULID), the clock, the store's unit of work, a logger. */
export interface WorkClaimDeps {
  instanceId: string;
  clock: Clock;
  unitOfWork: ClaimUnitOfWork;
  logger: Pick<Logger, "warn">;
}

/** Timing of claims (ms): `ttlMs` a claim lives without renewal; `renewEveryMs` how often a holder renews it (< ttlMs). */
export interface WorkClaimTiming {
  ttlMs: number;
  renewEveryMs: number;
}

/** Defaults: a claim lives 30 s and is renewed every 10 s, so a holder that died frees its work within 30 s. */
export const DEFAULT_WORK_CLAIM_TIMING: WorkClaimTiming = { ttlMs: 30_000, renewEveryMs: 10_000 };

/** The answer of {@link WorkClaimService.runClaimed}: the work's value, or `claimed: false` when another holder's claim is live. */
export type ClaimedRun<T> = { claimed: true; value: T } | { claimed: false };

/**
 * Runs work under a claim in the store (two API instances never do the same work at
 * once; `work_claims`, see work-claim.repository.ts for the claim semantics). Each run takes a fresh
 * holder token, so two runs of the same instance exclude each other too.
 */
export class WorkClaimService {
  constructor(
    private readonly deps: WorkClaimDeps,
    private readonly timing: WorkClaimTiming = DEFAULT_WORK_CLAIM_TIMING,
  ) {
    if (!(timing.renewEveryMs > 0 && timing.renewEveryMs < timing.ttlMs)) throw new RangeError("work claims: 0 < renewEveryMs < ttlMs");
  }

  /**
   * Claims (kind, key); when another holder's claim is live, returns `{ claimed: false }` at once
   * without running `work`. Otherwise runs `work(signal)` while renewing the claim every
   * `renewEveryMs`, and releases it when `work` settles (its rejection is rethrown). A renewal that
   * finds the claim taken over (this holder stalled past the TTL) aborts `signal`: the work must stop
   * starting new steps (every step it commits is still a compare-and-set, so a step of the new holder
   * and one of the old never both apply). A renewal that fails on a store error is logged and retried
   * at the next tick. Errors of the claim itself (the store) propagate.
   */
  async runClaimed<T>(kind: WorkClaimKind, key: string, work: (signal: AbortSignal) => Promise<T>): Promise<ClaimedRun<T>> {
    const { clock, unitOfWork, instanceId, logger } = this.deps;
    const holder = newUlid(clock.nowMs());
    const claimed = await unitOfWork((tx) =>
      workClaimRepository.claim(tx, { kind, key, holder, instanceId, nowMs: clock.nowMs(), ttlMs: this.timing.ttlMs }),
    );
    if (!claimed) return { claimed: false };
    const lost = new AbortController();
    let renewing: Promise<void> | undefined;
    const timer = setInterval(() => {
      renewing ??= unitOfWork((tx) => workClaimRepository.renew(tx, kind, key, holder, clock.nowMs(), this.timing.ttlMs))
        .then((held) => {
          if (!held && !lost.signal.aborted) {
            logger.warn({ kind, key, holder }, "work_claim.lost: another instance took the claim over; stopping");
            lost.abort();
          }
        })
        .catch((err: unknown) => logger.warn({ kind, key, err: String(err) }, "work_claim.renew_failed"))
        .finally(() => {
          renewing = undefined;
        });
    }, this.timing.renewEveryMs);
    timer.unref();
    try {
      return { claimed: true, value: await work(lost.signal) };
    } finally {
      clearInterval(timer);
      await renewing;
      await unitOfWork((tx) => workClaimRepository.release(tx, kind, key, holder)).catch((err: unknown) =>
        logger.warn({ kind, key, err: String(err) }, "work_claim.release_failed: it expires by itself"),
      );
    }
  }

  /** The live claim of (kind, key) at `nowMs` (its holder's instance), or undefined when there is none or it expired. */
  async liveHolder(kind: WorkClaimKind, key: string): Promise<string | undefined> {
    const row = await this.deps.unitOfWork((tx) => workClaimRepository.find(tx, kind, key));
    return row && row.expiresAtMs > this.deps.clock.nowMs() ? row.holderInstanceId : undefined;
  }
}
