// The PostgreSQL schema's operator audit tables: actions and refusals (no foreign keys: audit outlives runs).
import { sql } from "drizzle-orm";
import { check, index, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { EFFECT_STATUSES, OPERATOR_ACTIONS, OPERATOR_REFUSAL_CODES } from "@mosoo/contracts/statuses";
import { oneOf, ms } from "./postgres-schema.columns.js";

/** The append-only audit trail of operator actions on effects; no foreign keys, as on SQLite. */
export const effectOperatorActions = pgTable(
  "effect_operator_actions",
  {
    id: text("id").primaryKey(),
    effectId: text("effect_id").notNull(),
    runId: text("run_id"),
    driverInstanceId: text("driver_instance_id"),
    action: text("action", { enum: OPERATOR_ACTIONS }).notNull(),
    actor: text("actor").notNull(),
    reason: text("reason").notNull(),
    outcome: text("outcome").notNull(),
    statusBefore: text("status_before", { enum: EFFECT_STATUSES }).notNull(),
    statusAfter: text("status_after", { enum: EFFECT_STATUSES }).notNull(),
    receiptJson: text("receipt_json"),
    compensationEffectId: text("compensation_effect_id"),
    createdAtMs: ms("created_at_ms").notNull(),
  },
  (t) => [
    check("effect_operator_actions_action_check", oneOf("action", OPERATOR_ACTIONS)),
    check("effect_operator_actions_status_before_check", oneOf("status_before", EFFECT_STATUSES)),
    check("effect_operator_actions_status_after_check", oneOf("status_after", EFFECT_STATUSES)),
    check("effect_operator_actions_compensation_check", sql`action = 'compensate' OR compensation_effect_id IS NULL`),
    check("effect_operator_actions_actor_check", sql`length(actor) BETWEEN 1 AND 200`),
    check("effect_operator_actions_reason_check", sql`length(reason) BETWEEN 1 AND 2000`),
    index("effect_operator_actions_effect_idx").on(t.effectId),
  ],
);

/** Refused operator actions, append-only; see the SQLite twin for each column. */
export const effectOperatorRefusals = pgTable(
  "effect_operator_refusals",
  {
    id: text("id").primaryKey(),
    effectId: text("effect_id").notNull(),
    action: text("action", { enum: OPERATOR_ACTIONS }).notNull(),
    actor: text("actor").notNull(),
    reason: text("reason").notNull(),
    outcome: text("outcome", { enum: OPERATOR_REFUSAL_CODES }).notNull(),
    message: text("message").notNull(),
    effectStatus: text("effect_status", { enum: EFFECT_STATUSES }),
    createdAtMs: ms("created_at_ms").notNull(),
  },
  (t) => [
    check("effect_operator_refusals_effect_check", sql`length(effect_id) = 26`),
    check("effect_operator_refusals_action_check", oneOf("action", OPERATOR_ACTIONS)),
    check("effect_operator_refusals_outcome_check", oneOf("outcome", OPERATOR_REFUSAL_CODES)),
    check("effect_operator_refusals_status_check", sql`effect_status IS NULL OR ${oneOf("effect_status", EFFECT_STATUSES)}`),
    check("effect_operator_refusals_actor_check", sql`length(actor) BETWEEN 1 AND 200`),
    check("effect_operator_refusals_reason_check", sql`length(reason) BETWEEN 1 AND 2000`),
    check("effect_operator_refusals_message_check", sql`length(message) BETWEEN 1 AND 2000`),
    index("effect_operator_refusals_effect_idx").on(t.effectId),
  ],
);
