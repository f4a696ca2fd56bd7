import { monotonicFactory } from "ulid";
import { z } from "zod";

/**
 * A ULID: 26 characters of Crockford base32, time-ordered (https://github.com/ulid/spec).
 * Every id of the runtime (run, session, Driver instance, command, effect, idempotency key,
 * reconciliation record, run event) is one.
 */
export const UlidSchema = z.string().regex(/^[0-9A-HJKMNP-TV-Z]{26}$/, "expected a 26-character ULID");
/** A ULID string; see {@link UlidSchema}. */
export type Ulid = z.infer<typeof UlidSchema>;

const nextUlid = monotonicFactory();

/**
 * Returns a new ULID. Monotonic within one process, so ids minted in the same millisecond still
 * sort in creation order.
 * @param nowMs optional timestamp (ms since epoch) for the time part; defaults to `Date.now()`.
 */
export function newUlid(nowMs?: number): Ulid {
  return nextUlid(nowMs);
}
