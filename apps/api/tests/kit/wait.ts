/** Waiting in tests without racing timers: poll a condition (real time) or yield to the event loop. */

/** Polls `check` every 20 ms until true. @throws Error `timed out waiting for <what>` after `timeoutMs` (ms). */
export async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Yields to the event loop until `cond()` holds (at most ~500 turns); for work started without awaiting it. @throws Error when it never holds. */
export async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((resolve) => setImmediate(resolve));
  if (!cond()) throw new Error("condition never held");
}

/**
 * Polls the async `check` every 100 ms until it returns a value other than `undefined`; a check that
 * throws (a store still frozen, a request refused) counts as "not yet". A bound for a hang, not a timing
 * assertion. @throws Error `timeout: <what> within <timeoutMs> ms` (ms).
 */
export async function pollUntil<T>(check: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timeout: ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
