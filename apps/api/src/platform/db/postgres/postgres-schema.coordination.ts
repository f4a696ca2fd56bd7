// The PostgreSQL schema's tables for several API instances on one store: work claims and the store's liveness row.
import { sql } from "drizzle-orm";
import { check, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { STORE_OUTAGE_SOURCES, WORK_CLAIM_KINDS } from "@mosoo/contracts/statuses";
import { oneOf, ms } from "./postgres-schema.columns.js";

/** Work claimed by one API instance: the twin of `../sqlite/sqlite-schema.ts` `workClaims` (one live holder per (kind, key)). */
export const workClaims = pgTable(
  "work_claims",
  {
    kind: text("kind", { enum: WORK_CLAIM_KINDS }).notNull(),
    key: text("key").notNull(),
    holder: text("holder").notNull(),
    holderInstanceId: text("holder_instance_id").notNull(),
    claimedAtMs: ms("claimed_at_ms").notNull(),
    expiresAtMs: ms("expires_at_ms").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.kind, t.key] }),
    check("work_claims_kind_check", oneOf("kind", WORK_CLAIM_KINDS)),
    check("work_claims_key_check", sql`length(key) BETWEEN 1 AND 200`),
    check("work_claims_holder_check", sql`length(holder) = 26 AND length(holder_instance_id) = 26`),
    check("work_claims_expiry_check", sql`expires_at_ms > claimed_at_ms`),
  ],
);

/** The store's liveness, one row: the twin of `../sqlite/sqlite-schema.ts` `storeLiveness`. */
export const storeLiveness = pgTable(
  "store_liveness",
  {
    id: integer("id").primaryKey().default(1),
    lastSeenAtMs: ms("last_seen_at_ms").notNull(),
    lastOutageAtMs: ms("last_outage_at_ms"),
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
