import { sql } from "drizzle-orm";
import { bigint, check, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { WORK_CLAIM_KINDS } from "@mosoo/contracts/statuses";

/**
 * The PostgreSQL twin of `work_claims` (`../schema.ts` `workClaims`; docs/DESIGN.md §11): same table,
 * column and constraint names; the `*_ms` columns are `bigint` (64-bit) read as JS numbers. Belongs in
 * the PostgreSQL schema (`schema.pg.ts`) and its drizzle-kit migrations once both are on one branch.
 */
export const workClaimsPg = pgTable(
  "work_claims",
  {
    kind: text("kind", { enum: WORK_CLAIM_KINDS }).notNull(),
    key: text("key").notNull(),
    holder: text("holder").notNull(),
    holderInstanceId: text("holder_instance_id").notNull(),
    claimedAtMs: bigint("claimed_at_ms", { mode: "number" }).notNull(),
    expiresAtMs: bigint("expires_at_ms", { mode: "number" }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.kind, t.key] }),
    check("work_claims_kind_check", sql.raw(`kind IN (${WORK_CLAIM_KINDS.map((k) => `'${k}'`).join(", ")})`)),
    check("work_claims_key_check", sql`length(key) BETWEEN 1 AND 200`),
    check("work_claims_holder_check", sql`length(holder) = 26 AND length(holder_instance_id) = 26`),
    check("work_claims_expiry_check", sql`expires_at_ms > claimed_at_ms`),
  ],
);

/**
 * The DDL drizzle-kit generates for {@link workClaimsPg} (PostgreSQL dialect), for a store whose
 * migrations do not include it yet (the multi-instance tests create it with this).
 */
export const WORK_CLAIMS_PG_DDL = `CREATE TABLE IF NOT EXISTS "work_claims" (
  "kind" text NOT NULL,
  "key" text NOT NULL,
  "holder" text NOT NULL,
  "holder_instance_id" text NOT NULL,
  "claimed_at_ms" bigint NOT NULL,
  "expires_at_ms" bigint NOT NULL,
  CONSTRAINT "work_claims_kind_key_pk" PRIMARY KEY("kind","key"),
  CONSTRAINT "work_claims_kind_check" CHECK (kind IN (${WORK_CLAIM_KINDS.map((k) => `'${k}'`).join(", ")})),
  CONSTRAINT "work_claims_key_check" CHECK (length(key) BETWEEN 1 AND 200),
  CONSTRAINT "work_claims_holder_check" CHECK (length(holder) = 26 AND length(holder_instance_id) = 26),
  CONSTRAINT "work_claims_expiry_check" CHECK (expires_at_ms > claimed_at_ms)
)`;
