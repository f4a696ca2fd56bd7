/**
 * The one manual clock of the API tests: the provider double's clock (`now()`, timers that fire in
 * order as `advance(ms)` passes them) that is also the runtime's `Clock` (`nowMs()`). Moving it
 * moves the runtime (expiry, backoff, deadlines) and the double (lookup delay, late commits)
 * together; nothing else moves it.
 */
import { createManualClock as createDoubleClock, type ManualClock as DoubleManualClock } from "@mosoo/effect-reconciliation/testing";
import type { Clock } from "../../src/platform/clock.js";

/** Where every test world's clock starts unless told otherwise: 2026-11-29T12:00:00Z (ms). */
export const START_MS = Date.UTC(2026, 10, 29, 12, 0, 0);

/**
 * A clock the test moves by hand (ms since the epoch): `now()` / `nowMs()` read it, `advance(ms)`
 * moves it forward and fires the double's timers that fall due in order (throws RangeError for a
 * negative or non-finite `ms`), `setTimer` / `pendingTimers` serve the provider double.
 */
export interface ManualClock extends DoubleManualClock, Clock {}

/** Creates a {@link ManualClock} at `startMs` (default {@link START_MS}). */
export function createManualClock(startMs: number = START_MS): ManualClock {
  const clock = createDoubleClock(startMs);
  return Object.assign(clock, { nowMs: () => clock.now() });
}
