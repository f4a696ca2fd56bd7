/** The store's liveness row (`store_liveness`): when the store was last written, and its last recorded outage, in the store's time. */
import { sql, type SQL } from "drizzle-orm";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** One write of the liveness row by an API instance (see {@link storeLivenessRepository.tick}). */
export interface LivenessTick {
  /** `sqlite` (one process: the store's time is the runtime clock's `localNowMs`) or `postgres` (the server's statement time). */
  dialect: "sqlite" | "postgres";
  /** The runtime clock's now (ms since the epoch); the store's time on SQLite. */
  localNowMs: number;
  /**
   * How long ago (ms, ≥ 0, measured on this instance's clock: a duration, so clocks need not agree) this
   * instance last found the store unreachable or busy; undefined if never. Recorded as an outage at the
   * store's time minus this, when that is later than the outage already recorded.
   */
  observedAgoMs?: number | undefined;
  /**
   * The longest gap (ms) allowed between two writes of the row by any instance; a longer gap is recorded
   * as an outage (`tick_gap`) at this write's time. Undefined: gaps are not judged (no instance writes
   * on a timer, e.g. a test that drives the sweep by hand).
   */
  maxGapMs?: number | undefined;
}

/** What a tick read back: the store's time of the write and its last recorded outage (ms since the epoch; null: none). */
export interface LivenessState {
  nowMs: number;
  lastOutageAtMs: number | null;
}

/** The store's own time in ms: PostgreSQL's statement time (one value for the whole statement), SQLite's the runtime clock's. */
function storeNow(t: LivenessTick): SQL {
  return t.dialect === "postgres" ? sql`(extract(epoch from statement_timestamp()) * 1000)::bigint` : sql`${t.localNowMs}`;
}

/** The liveness row (read by `MaintenanceSweepService` in maintenance-sweep.service.ts); dialect-neutral but for the store's clock. */
export const storeLivenessRepository = {
  /**
   * Writes the row in ONE statement (`INSERT … ON CONFLICT (id) DO UPDATE … RETURNING`, atomic on both
   * dialects): `last_seen_at_ms` becomes the store's now unless it is already later (instances race);
   * the last outage becomes the latest of the recorded one, `now - observedAgoMs` (`instance_observed`)
   * and, when `now - last_seen_at_ms > maxGapMs`, `now` (`tick_gap`). Returns the store's now and the
   * outage now recorded. Rejects as any query does (e.g. `store.busy`).
   */
  async tick(tx: StoreTx, t: LivenessTick): Promise<LivenessState> {
    const l = tx.tables.storeLiveness;
    const now = storeNow(t);
    const observed = t.observedAgoMs === undefined ? null : sql`(${now} - ${Math.max(0, Math.round(t.observedAgoMs))})`;
    const previous = sql`COALESCE(store_liveness.last_outage_at_ms, -1)`;
    const gapSeen =
      t.maxGapMs === undefined ? sql`1 = 0` : sql`${now} - store_liveness.last_seen_at_ms > ${Math.max(0, Math.round(t.maxGapMs))}`;
    const observedLater = observed === null ? sql`1 = 0` : sql`${observed} > ${previous}`;
    // the later of: a gap (at now), an observation (now - ago), the recorded outage
    const outageAt = sql`CASE WHEN ${gapSeen} THEN ${now} WHEN ${observedLater} THEN ${observed ?? sql`NULL`} ELSE store_liveness.last_outage_at_ms END`;
    const outageSource = sql`CASE WHEN ${gapSeen} THEN 'tick_gap' WHEN ${observedLater} THEN 'instance_observed' ELSE store_liveness.last_outage_source END`;
    const rows = await tx.db
      .insert(l)
      .values({
        id: 1,
        lastSeenAtMs: now as unknown as number,
        lastOutageAtMs: (observed ?? null) as unknown as number | null,
        lastOutageSource: observed === null ? null : "instance_observed",
      })
      .onConflictDoUpdate({
        target: l.id,
        set: {
          lastSeenAtMs: sql`CASE WHEN ${now} > store_liveness.last_seen_at_ms THEN ${now} ELSE store_liveness.last_seen_at_ms END`,
          lastOutageAtMs: outageAt,
          lastOutageSource: outageSource,
        },
      })
      .returning({ nowMs: sql<number>`${now}`.mapWith(Number), lastOutageAtMs: l.lastOutageAtMs });
    const row = rows[0];
    if (!row) throw new Error("store_liveness: the tick returned no row");
    return { nowMs: row.nowMs, lastOutageAtMs: row.lastOutageAtMs === null ? null : Number(row.lastOutageAtMs) };
  },
};
