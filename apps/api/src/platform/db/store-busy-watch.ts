// Remembers when the API last found its own store busy or unreachable, and logs and counts each store outage.
import type { Logger } from "pino";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Clock } from "../clock.js";
import { storeBusyCause } from "./store-busy.js";
import type { StoreAvailabilityObserver } from "./store.port.js";

/** Options of {@link StoreBusyWatch}: where its transitions are logged and counted (both optional). */
export interface StoreBusyWatchOptions {
  /** Gets one `store.unavailable` (warn) and one `store.available` (info) line per outage. */
  logger?: Logger | undefined;
  /** Gets `mosoo_store_available` (gauge, 1/0) and `mosoo_store_outages_total` (counter). */
  metricsRegistry?: Registry | undefined;
}

/**
 * Remembers when the API last found its own store busy or away, and tells the store's outages:
 * - busy: when it last answered a request `503 store.busy`, or when a sweep pass ended early on
 *   `store.busy`, or a unit of work found the database unreachable ({@link failed}). The maintenance
 *   sweep reads it so that heartbeats refused because of the API's own store do not count against a
 *   Driver: no heartbeat expires until a full heartbeat TTL has passed since the store was last busy
 *   (see `FinalizationRepairService` in finalization-repair.service.ts; README, "A busy store").
 * - availability (a store that can be unreachable reports every unit of work's end, `Store.watchAvailability`):
 *   the first failure while available logs `store.unavailable` with its cause code (`57P01`, `53300`,
 *   `ECONNREFUSED`, `timeout`, …), counts one outage and sets the gauge to 0; the first success after
 *   that logs `store.available` with the outage's duration (`outageMs`) and sets the gauge to 1. One
 *   line per transition, never one per request.
 * In memory only, per API process; times come from the runtime's clock (ms since the Unix epoch), so
 * tests move them with a manual clock.
 */
export class StoreBusyWatch implements StoreAvailabilityObserver {
  private lastBusyMs: number | undefined;
  private unavailableSince: { atMs: number; code: string } | undefined;
  private readonly gauge: Gauge | undefined;
  private readonly outages: Counter | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly options: StoreBusyWatchOptions = {},
  ) {
    const registers = options.metricsRegistry ? [options.metricsRegistry] : [];
    if (options.metricsRegistry) {
      this.gauge = new Gauge({ name: "mosoo_store_available", help: "1 while the store answers, 0 during an outage", registers });
      this.gauge.set(1);
      this.outages = new Counter({
        name: "mosoo_store_outages_total",
        help: "Store outages seen by this API process (transitions from available to unavailable)",
        registers,
      });
    }
  }

  /** Records that the store was found busy now (the runtime clock's `nowMs()`). */
  noteBusy(): void {
    this.lastBusyMs = this.clock.nowMs();
  }

  /** When the store was last found busy (ms since the Unix epoch), or `undefined` if never since this process started. */
  lastBusyAtMs(): number | undefined {
    return this.lastBusyMs;
  }

  /** True unless the last unit of work that ended found the store unreachable. */
  isAvailable(): boolean {
    return this.unavailableSince === undefined;
  }

  /** A unit of work could not reach the store (see `StoreAvailabilityObserver`): notes it busy; logs and counts the first of an outage. */
  failed(cause: unknown): void {
    this.noteBusy();
    if (this.unavailableSince) return;
    const found = storeBusyCause(cause);
    const code = found?.code ?? (/timeout/i.test(found?.message ?? "") ? "timeout" : "unknown");
    this.unavailableSince = { atMs: this.clock.nowMs(), code };
    this.gauge?.set(0);
    this.outages?.inc();
    this.options.logger?.warn({ cause: { code, message: found?.message } }, "store.unavailable");
  }

  /** A unit of work reached the store: ends an outage (logged with its duration in ms). */
  succeeded(): void {
    const since = this.unavailableSince;
    if (!since) return;
    this.unavailableSince = undefined;
    this.gauge?.set(1);
    this.options.logger?.info({ outageMs: Math.max(0, this.clock.nowMs() - since.atMs), cause: { code: since.code } }, "store.available");
  }
}
