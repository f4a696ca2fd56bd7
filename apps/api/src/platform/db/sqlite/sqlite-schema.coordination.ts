// The SQLite schema's tables for several API instances on one store: work claims and the store's liveness row.
import { sql } from "drizzle-orm";
import { check, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { STORE_OUTAGE_SOURCES, WORK_CLAIM_KINDS } from "@mosoo/contracts/statuses";
import { oneOf } from "./sqlite-schema.columns.js";

/**
 * Work claimed by one API instance (several API instances on one store never do
 * the same work at once). At most ONE row per (kind, key) — the primary key — so at most one live
 * holder: a claim is taken with one atomic `INSERT … ON CONFLICT (kind, key) DO UPDATE … WHERE the row
 * expired OR it is the caller's own … RETURNING` (work-claim.repository.ts), renewed while the work
 * runs, and deleted when it ends; a holder that died loses its claim at `expires_at_ms` (ms since the
 * epoch, the claimer's clock). `holder` is a fresh token per claim (a second claim of the same
 * instance is a different holder); `holder_instance_id` names the API instance (diagnostics). `kind`
 * is one of {@link WORK_CLAIM_KINDS}.
 */
export const workClaims = sqliteTable(
  "work_claims",
  {
    kind: text("kind", { enum: WORK_CLAIM_KINDS }).notNull(),
    key: text("key").notNull(),
    holder: text("holder").notNull(),
    holderInstanceId: text("holder_instance_id").notNull(),
    claimedAtMs: integer("claimed_at_ms").notNull(),
    expiresAtMs: integer("expires_at_ms").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.kind, t.key] }),
    check("work_claims_kind_check", oneOf("kind", WORK_CLAIM_KINDS)),
    check("work_claims_key_check", sql`length(key) BETWEEN 1 AND 200`),
    check("work_claims_holder_check", sql`length(holder) = 26 AND length(holder_instance_id) = 26`),
    check("work_claims_expiry_check", sql`expires_at_ms > claimed_at_ms`),
  ],
);

/**
 * The store's liveness, one row (`id` 1) shared by every API instance (read by
 * `MaintenanceSweepService` in maintenance-sweep.service.ts): `last_seen_at_ms`, the store's time (ms since the epoch) when an instance
 * last wrote it (each instance does, every few seconds); `last_outage_at_ms` / `last_outage_source`,
 * the store's time when an outage was last recorded (a gap in those writes, or an instance that found
 * the store unreachable) and how. No instance judges a Driver's heartbeat silence within one heartbeat
 * TTL of a recorded outage. Both outage columns are null together; an outage is never after the last write.
 */
export const storeLiveness = sqliteTable(
  "store_liveness",
  {
    id: integer("id").primaryKey().default(1),
    lastSeenAtMs: integer("last_seen_at_ms").notNull(),
    lastOutageAtMs: integer("last_outage_at_ms"),
    lastOutageSource: text("last_outage_source", { enum: STORE_OUTAGE_SOURCES }),
  },
  () => [
    check("store_liveness_single_row_check", sql`id = 1`),
    check("store_liveness_seen_check", sql`last_seen_at_ms >= 0`),
    check(
      "store_liveness_outage_check",
      sql`(last_outage_at_ms IS NULL AND last_outage_source IS NULL) OR (last_outage_at_ms <= last_seen_at_ms AND ${oneOf("last_outage_source", STORE_OUTAGE_SOURCES)})`,
    ),
  ],
);
