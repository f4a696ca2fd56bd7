/**
 * The time source of the provider double: `now()` in ms since the epoch, and a one-shot timer
 * `setTimer(callback, delayMs)` returning a cancel function.
 */
export interface DoubleClock {
  now(): number;
  setTimer(callback: () => void, delayMs: number): () => void;
}

/** Wall-clock time (`Date.now`, `setTimeout`). */
export const systemClock: DoubleClock = Object.freeze({
  now: () => Date.now(),
  setTimer(callback: () => void, delayMs: number): () => void {
    const handle = setTimeout(callback, delayMs);
    return () => clearTimeout(handle);
  },
});

/**
 * A clock that moves only when told: `advance(ms)` moves `now()` forward, firing due timers in due
 * order (ties in scheduling order), each with `now()` equal to its due time. Deterministic: tests
 * that use it never depend on real timing.
 */
export interface ManualClock extends DoubleClock {
  advance(ms: number): void;
  /** Timers scheduled and neither fired nor cancelled. */
  pendingTimers(): number;
}

/** Creates a {@link ManualClock} starting at `startMs` (default 1 700 000 000 000, i.e. Nov 2023). */
export function createManualClock(startMs = 1_700_000_000_000): ManualClock {
  let nowMs = startMs;
  let sequence = 0;
  const timers = new Map<number, { dueMs: number; callback: () => void }>();
  return {
    now: () => nowMs,
    setTimer(callback: () => void, delayMs: number): () => void {
      const id = sequence++;
      timers.set(id, { dueMs: nowMs + Math.max(0, delayMs), callback });
      return () => void timers.delete(id);
    },
    advance(ms: number): void {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError("advance(ms) needs a finite ms >= 0");
      const targetMs = nowMs + ms;
      for (;;) {
        let next: [number, { dueMs: number; callback: () => void }] | undefined;
        for (const entry of timers) {
          if (entry[1].dueMs <= targetMs && (next === undefined || entry[1].dueMs < next[1].dueMs)) next = entry;
        }
        if (next === undefined) break;
        timers.delete(next[0]);
        nowMs = next[1].dueMs;
        next[1].callback();
      }
      nowMs = targetMs;
    },
    pendingTimers: () => timers.size,
  };
}
