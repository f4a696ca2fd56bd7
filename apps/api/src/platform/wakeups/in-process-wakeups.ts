// Wakes long-polling Drivers within one API process after a command is committed (an EventEmitter by Driver instance).
import { EventEmitter } from "node:events";
import type { CommandWakeups, WakeupTx } from "./command-wakeups.port.js";

/** The event every waiter also listens to: {@link InProcessWakeups.wakeAll}. */
const EVERYONE = Symbol("every waiter");

/**
 * The in-process {@link CommandWakeups} (embedded SQLite: one API process per store),
 * also the local half of the PostgreSQL implementation: an `EventEmitter` keyed by Driver
 * instance id. `notifyInTransaction` does nothing (a wake-up before COMMIT would only make the waiter
 * read too early); `notifyCommitted` wakes the instance's waiters; `wakeAll` wakes every waiter once
 * (after a cross-instance listener reconnected, so nothing waits out a missed notification).
 */
export class InProcessWakeups implements CommandWakeups {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  /** Nothing in-process: the wake-up is {@link notifyCommitted}, after the commit. */
  async notifyInTransaction(_tx: WakeupTx, _driverInstanceId: string): Promise<void> {}

  /** Wakes the waiters of `driverInstanceId` (call it after the queuing transaction committed). */
  notifyCommitted(driverInstanceId: string): void {
    this.emitter.emit(driverInstanceId);
  }

  /** Wakes every waiter of every Driver instance once. */
  wakeAll(): void {
    this.emitter.emit(EVERYONE);
  }

  /** How many waits are pending (tests: nothing of a wait outlives it). */
  pendingWaits(): number {
    return this.emitter.listenerCount(EVERYONE);
  }

  /**
   * Resolves when `driverInstanceId` is notified (or {@link wakeAll}), after `waitMs` (ms), or when any
   * of `signals` aborts (or already has), whichever comes first. Never rejects.
   *
   * Every listener and the timer it adds are removed when it resolves, whichever way: nothing
   * outlives one wait. (Combining the signals with `AbortSignal.any` and a fresh
   * `AbortSignal.timeout` per wait kept each combination reachable from the long-lived shutdown
   * signal on Node 20, and the heap after GC grew 110–200 bytes per long-poll.)
   */
  wait(driverInstanceId: string, waitMs: number, signals: readonly AbortSignal[] = []): Promise<void> {
    if (signals.some((s) => s.aborted)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.emitter.off(driverInstanceId, done);
        this.emitter.off(EVERYONE, done);
        for (const s of signals) s.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, waitMs));
      this.emitter.on(driverInstanceId, done);
      this.emitter.on(EVERYONE, done);
      for (const s of signals) s.addEventListener("abort", done, { once: true });
    });
  }

  /** Nothing to close in-process. */
  async close(): Promise<void> {}
}
