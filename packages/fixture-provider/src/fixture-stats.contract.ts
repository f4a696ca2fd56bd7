// The fixture provider's per-idempotency-key counters (writes, calls, lookups) and fenced keys, read from its SQLite file.
import { z } from "zod";

const CountsByKeySchema = z.record(z.string(), z.number().int().nonnegative());

/**
 * Per-idempotency-key counters of the fixture provider (`GET /control/stats`, `stats()`), all read
 * from its SQLite file, so they survive a restart:
 * - `writes`: committed `createIssue` inserts (issues created) per key; never above 1 unless the
 *   provider itself is broken;
 * - `createCalls`: every `createIssue` call that carried a key: first calls, replays and refusals
 *   (conflict, fenced, `provider_unavailable`). Calls without a key, or whose arguments fail
 *   validation, are not counted (there is no key to count them under);
 * - `lookups`: `getOperation` calls per key;
 * - `fenced`: keys with a tombstone (a lookup missed while `fenceOnLookupMiss` was on), sorted.
 * Keys with a zero count are absent from the maps.
 */
export const FixtureStatsSchema = z.object({
  writes: CountsByKeySchema,
  createCalls: CountsByKeySchema,
  lookups: CountsByKeySchema,
  fenced: z.array(z.string()),
});
/** See {@link FixtureStatsSchema}. */
export type FixtureStats = z.infer<typeof FixtureStatsSchema>;
