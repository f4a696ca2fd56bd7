/** A source of time in ms since the Unix epoch; injected so tests control expiry and backoff. */
export interface Clock {
  nowMs(): number;
}

/** The wall clock (`Date.now()`). */
export const systemClock: Clock = { nowMs: () => Date.now() };
