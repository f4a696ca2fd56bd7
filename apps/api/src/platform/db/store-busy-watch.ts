import type { Clock } from "../clock.js";

/**
 * Remembers when the API last found its own store busy (another connection held SQLite's write
 * lock past the bounded wait): when it last answered a request `503 store.busy`, or when a sweep
 * pass ended early on `store.busy`. The maintenance sweep reads it so that heartbeats refused
 * because of the API's own busy store do not count against a Driver: no heartbeat expires until a
 * full heartbeat TTL has passed since the store was last busy (docs/DESIGN.md §3 rule 10; README,
 * "A busy store"). In memory only, per API process; times come from the runtime's clock (ms since
 * the Unix epoch), so tests move them with a manual clock.
 */
export class StoreBusyWatch {
  private lastBusyMs: number | undefined;

  constructor(private readonly clock: Clock) {}

  /** Records that the store was found busy now (the runtime clock's `nowMs()`). */
  noteBusy(): void {
    this.lastBusyMs = this.clock.nowMs();
  }

  /** When the store was last found busy (ms since the Unix epoch), or `undefined` if never since this process started. */
  lastBusyAtMs(): number | undefined {
    return this.lastBusyMs;
  }
}
