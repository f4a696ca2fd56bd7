import { EventEmitter } from "node:events";

/**
 * Wakes long-polling Drivers when a command is queued for their instance. In-process only: the
 * database stays the source of truth, a wake-up just shortens the wait.
 */
export class CommandNotifier {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  /** Signals that `driverInstanceId` may have a new command. */
  notify(driverInstanceId: string): void {
    this.emitter.emit(driverInstanceId);
  }

  /**
   * Resolves when `driverInstanceId` is notified, after `waitMs` (ms), or when any of `signals`
   * aborts (or already has), whichever comes first. Never rejects.
   *
   * Every listener and the timer it adds are removed when it resolves, whichever way: nothing
   * outlives one wait. (It used to combine the signals with `AbortSignal.any` and a fresh
   * `AbortSignal.timeout` per wait; on Node 20 each such combination stayed reachable from the
   * long-lived shutdown signal, and the heap after GC grew 110–200 bytes per long-poll: issue 10.)
   */
  wait(driverInstanceId: string, waitMs: number, signals: readonly AbortSignal[] = []): Promise<void> {
    if (signals.some((s) => s.aborted)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.emitter.off(driverInstanceId, done);
        for (const s of signals) s.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, waitMs));
      this.emitter.on(driverInstanceId, done);
      for (const s of signals) s.addEventListener("abort", done, { once: true });
    });
  }
}
