import { EventEmitter, once } from "node:events";

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
   * Resolves when `driverInstanceId` is notified, after `waitMs` (ms), or when `signal` aborts,
   * whichever comes first. Never rejects.
   */
  async wait(driverInstanceId: string, waitMs: number, signal?: AbortSignal): Promise<void> {
    const signals = [AbortSignal.timeout(Math.max(0, waitMs)), ...(signal ? [signal] : [])];
    try {
      await once(this.emitter, driverInstanceId, { signal: AbortSignal.any(signals) });
    } catch {
      // timed out or aborted: the caller re-checks the database either way
    }
  }
}
