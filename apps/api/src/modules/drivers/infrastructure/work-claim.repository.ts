// The `work_claims` table's one-statement take, renew and release, so at most one holder per kind and key is live.
import { and, eq, lte, or } from "drizzle-orm";
import type { WorkClaimKind } from "@mosoo/contracts/statuses";
import type { workClaims } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** A `work_claims` row. Times in ms since the epoch (the claimer's clock). */
export type WorkClaimRow = typeof workClaims.$inferSelect;

/** One claim attempt: who (`holder`, a fresh ULID per claim; `instanceId`, the API instance), what, when (ms) and for how long (ms, > 0). */
interface ClaimRequest {
  kind: WorkClaimKind;
  key: string;
  holder: string;
  instanceId: string;
  nowMs: number;
  ttlMs: number;
}

/**
 * Work claims in the store (docs/DESIGN.md §11: "single-flight finalization and sweep work are claimed
 * in the database"). Each operation is ONE statement, atomic on SQLite and on PostgreSQL (READ
 * COMMITTED: `INSERT … ON CONFLICT DO UPDATE` locks the conflicting row and re-checks its `WHERE` on
 * the latest committed version), so at most one holder per (kind, key) is live at any moment:
 * - a claim is taken when there is no row, or the row expired (`expires_at_ms <= now`), or the row is
 *   the caller's own (same `holder` token: a renewal);
 * - a claim expires at `expires_at_ms`; a holder that is still working renews it ({@link renew})
 *   before then, and deletes it when done ({@link release});
 * - after expiry, the first other claimer takes it over; the old holder's {@link renew} and
 *   {@link release} then find nothing (false) and change nothing.
 * Clocks: expiry compares the claimer's `nowMs` with the stored time, so instances' clocks must agree
 * to well within the TTL (the TTLs used are seconds; NTP keeps hosts within milliseconds).
 */
export const workClaimRepository = {
  /**
   * Takes the claim (kind, key) for `holder` until `nowMs + ttlMs`, unless another holder's claim is
   * live. One statement: `INSERT … ON CONFLICT (kind, key) DO UPDATE SET … WHERE expires_at_ms <= now
   * OR holder = me RETURNING holder`. True when `holder` now holds it.
   */
  async claim(tx: StoreTx, req: ClaimRequest): Promise<boolean> {
    const w = tx.tables.workClaims;
    const row = {
      kind: req.kind,
      key: req.key,
      holder: req.holder,
      holderInstanceId: req.instanceId,
      claimedAtMs: req.nowMs,
      expiresAtMs: req.nowMs + req.ttlMs,
    };
    const rows = await tx.db
      .insert(w)
      .values(row)
      .onConflictDoUpdate({
        target: [w.kind, w.key],
        set: { holder: row.holder, holderInstanceId: row.holderInstanceId, claimedAtMs: row.claimedAtMs, expiresAtMs: row.expiresAtMs },
        setWhere: or(lte(w.expiresAtMs, req.nowMs), eq(w.holder, req.holder)),
      })
      .returning({ holder: w.holder });
    return rows.length > 0 && rows[0]!.holder === req.holder;
  },
  /**
   * Extends `holder`'s claim to `nowMs + ttlMs`. True when `holder` still holds the row (also when it
   * expired meanwhile but nobody took it over: nobody else did the work); false when it was taken
   * over or released (the caller must stop the work).
   */
  async renew(tx: StoreTx, kind: WorkClaimKind, key: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean> {
    const w = tx.tables.workClaims;
    const rows = await tx.db
      .update(w)
      .set({ expiresAtMs: nowMs + ttlMs })
      .where(and(eq(w.kind, kind), eq(w.key, key), eq(w.holder, holder)))
      .returning({ holder: w.holder });
    return rows.length > 0;
  },
  /** Deletes `holder`'s claim (the work is done). True when it still held it; another holder's claim is never touched. */
  async release(tx: StoreTx, kind: WorkClaimKind, key: string, holder: string): Promise<boolean> {
    const w = tx.tables.workClaims;
    const rows = await tx.db
      .delete(w)
      .where(and(eq(w.kind, kind), eq(w.key, key), eq(w.holder, holder)))
      .returning({ holder: w.holder });
    return rows.length > 0;
  },
  /** The row of (kind, key), live or expired, or undefined. */
  async find(tx: StoreTx, kind: WorkClaimKind, key: string): Promise<WorkClaimRow | undefined> {
    const w = tx.tables.workClaims;
    const rows = await tx.db
      .select()
      .from(w)
      .where(and(eq(w.kind, kind), eq(w.key, key)))
      .limit(1);
    return rows[0];
  },
};
