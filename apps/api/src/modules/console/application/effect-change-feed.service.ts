// Live updates for the operator console: polls the store's change marker while anyone listens and samples the unknown-effect count.
import type { Logger } from "pino";

/** Default interval (ms) at which the feed polls the store's change marker while anyone listens. */
export const DEFAULT_CHANGE_POLL_MS = 1_000;
/** At most this many samples of the unknown-effect count are kept (oldest dropped first). */
export const MAX_UNKNOWN_SAMPLES = 500;

/** What the feed reads from the operator service: a change marker and the number of unknown effects (store reads), and the clock (ms). */
export interface ChangeSource {
  changeMarker(): Promise<string>;
  unknownTotal(): Promise<number>;
  nowMs(): number;
}

/** One sample of the number of `unknown` effects (at `atMs`, ms since the epoch). */
export interface UnknownSample {
  atMs: number;
  count: number;
}

/**
 * Live updates for the operator console. There is no in-process hook on every
 * effect transition (several services and the reconciler's workers write the store), so the feed
 * polls the store's change marker (three primary-key maxima) every `pollMs` while at least one
 * listener is subscribed, and tells every listener when it moved. Each time it moves (and once at
 * the first subscription) it samples the number of `unknown` effects, kept in memory for the
 * console's "unknown effects over time" chart (since this API process started). One timer for all
 * listeners; none while nobody listens; `close()` stops it and ends every subscription.
 */
export class EffectChangeFeed {
  private readonly listeners = new Set<(marker: string) => void>();
  private readonly samples: UnknownSample[] = [];
  private marker: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The check in progress: a timer tick while one still reads joins it instead of reading twice. */
  private checking: Promise<void> | undefined;

  constructor(
    private readonly source: ChangeSource,
    private readonly logger: Logger,
    private readonly pollMs: number = DEFAULT_CHANGE_POLL_MS,
  ) {}

  /** Calls `listener(marker)` after every change from now on; returns the unsubscribe. */
  subscribe(listener: (marker: string) => void): () => void {
    if (this.closed) return () => {};
    this.listeners.add(listener);
    if (!this.timer) {
      void this.check();
      this.timer = setInterval(() => void this.check(), this.pollMs);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopTimer();
    };
  }

  /** The samples taken so far (oldest first); takes one now if there is none yet. */
  async unknownSeries(): Promise<UnknownSample[]> {
    if (this.samples.length === 0) await this.sample();
    return [...this.samples];
  }

  /**
   * Compares the marker with the last one seen; on a change samples and notifies. Never rejects.
   * A call while another check still reads shares that check.
   */
  check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    let next: string;
    try {
      next = await this.source.changeMarker();
    } catch (err) {
      this.logger.warn({ err }, "console.change_feed_failed");
      return;
    }
    if (next === this.marker) return;
    const first = this.marker === undefined;
    this.marker = next;
    await this.sample();
    if (first) return;
    for (const l of [...this.listeners]) l(next);
  }

  private async sample(): Promise<void> {
    try {
      const count = await this.source.unknownTotal();
      const atMs = this.source.nowMs();
      const last = this.samples.at(-1);
      if (last && last.count === count && last.atMs === atMs) return;
      this.samples.push({ atMs, count });
      if (this.samples.length > MAX_UNKNOWN_SAMPLES) this.samples.shift();
    } catch (err) {
      this.logger.warn({ err }, "console.sample_failed");
    }
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Stops polling and forgets every listener (the API is shutting down). */
  close(): void {
    this.closed = true;
    this.stopTimer();
    this.listeners.clear();
  }
}
