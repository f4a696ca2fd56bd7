// The ULID ids of the runtime: their schema, a monotonic generator, and the smallest id of a given millisecond.
import { encodeTime, monotonicFactory } from "ulid";
import { z } from "zod";

/** The text of a ULID, anchored: a first character `0`–`7` (128 bits in 26 base32 characters), then 25 of Crockford base32. */
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

/**
 * A ULID: 26 characters of Crockford base32 (upper case), time-ordered (https://github.com/ulid/spec).
 * A ULID is 128 bits and 26 base32 characters hold 130, so the first character is at most `7`: the
 * largest ULID is `7ZZZZZZZZZZZZZZZZZZZZZZZZZ` and anything above it (`8ZZZ…`) is refused, as the
 * spec's decoders do (it would overflow the 48-bit time part).
 * Every id of the runtime (run, session, Driver instance, command, effect, idempotency key,
 * reconciliation record, run event) is one.
 */
export const UlidSchema = z.string().regex(ULID_PATTERN, "expected a 26-character ULID");
/** A ULID string; see {@link UlidSchema}. */
export type Ulid = z.infer<typeof UlidSchema>;

/** Bytes of crypto randomness drawn at once for {@link pooledRandom} (one `getRandomValues` per 4096 bytes instead of one per character). */
const RANDOM_POOL_BYTES = 4096;
const pool = new Uint8Array(RANDOM_POOL_BYTES);
let poolAt = RANDOM_POOL_BYTES;

/**
 * The ULID library's PRNG contract (a fraction in [0, 1)) fed from a pool of cryptographically
 * random bytes (Web Crypto `crypto.getRandomValues`, global in Node and browsers), each byte used once: the same source and distribution as
 * the library's default (one `getRandomValues` of one byte per character), without a native call
 * per character (2% of the recovery's CPU profile went to it).
 */
function pooledRandom(): number {
  if (poolAt >= RANDOM_POOL_BYTES) {
    globalThis.crypto.getRandomValues(pool);
    poolAt = 0;
  }
  return pool[poolAt++]! / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

/**
 * Returns a new ULID. Monotonic within one process, so ids minted in the same millisecond still
 * sort in creation order.
 * @param nowMs optional timestamp (ms since epoch) for the time part; defaults to `Date.now()`.
 */
export function newUlid(nowMs?: number): Ulid {
  return nextUlid(nowMs);
}

/**
 * The smallest ULID of millisecond `ms` (its time part, then 16 zeros): `id >= ulidFloor(ms)` selects the
 * ids minted at or after `ms`, a range over the primary key (every id of the runtime is a ULID of its
 * row's creation time). `ms` is clamped to 0; it must be at most 2^48 - 1 (the ULID time part).
 */
export function ulidFloor(ms: number): Ulid {
  return `${encodeTime(Math.max(0, Math.floor(ms)), 10)}${"0".repeat(16)}`;
}
