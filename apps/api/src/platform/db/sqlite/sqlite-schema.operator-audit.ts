// The SQLite schema's operator audit tables: actions and refusals (no foreign keys: audit outlives runs).
import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { EFFECT_STATUSES, OPERATOR_ACTIONS, OPERATOR_REFUSAL_CODES } from "@mosoo/contracts/statuses";
import { oneOf } from "./sqlite-schema.columns.js";

/**
 * The audit trail of operator actions on effects: who (`actor`) did what
 * (`action`: a lookup, a manual resolution, a compensation request), why (`reason`), what came of
 * it (`outcome`), the effect's status before and after (`status_before`, `status_after`), the
 * receipt an operator supplied with a manual resolution, and the compensation effect it created.
 * Each row commits in the same transaction as the change it records. Append-only.
 * Audit rows outlive the runs they mention (docs/DESIGN.md §7): no id here is a foreign key, so deleting a
 * run, a session or a Driver never deletes (or rewrites) an audit row; `run_id` and
 * `driver_instance_id` are copied from the effect when the row is written (null only on rows
 * written before migration 0008 whose effect was already gone).
 */
export const effectOperatorActions = sqliteTable(
  "effect_operator_actions",
  {
    id: text("id").primaryKey(),
    effectId: text("effect_id").notNull(),
    /** The effect's run (denormalised: the run may be deleted later; the row stays). */
    runId: text("run_id"),
    /** The effect's Driver instance (denormalised, like `run_id`). */
    driverInstanceId: text("driver_instance_id"),
    action: text("action", { enum: OPERATOR_ACTIONS }).notNull(),
    actor: text("actor").notNull(),
    reason: text("reason").notNull(),
    outcome: text("outcome").notNull(),
    statusBefore: text("status_before", { enum: EFFECT_STATUSES }).notNull(),
    statusAfter: text("status_after", { enum: EFFECT_STATUSES }).notNull(),
    /** The provider receipt an operator supplied with a manual `succeeded` resolution (JSON, at most 4096 bytes). */
    receiptJson: text("receipt_json"),
    /** The compensation effect a `compensate` action created (a plain id: it stays when that effect is deleted). */
    compensationEffectId: text("compensation_effect_id"),
    createdAtMs: integer("created_at_ms").notNull(),
  },
  (t) => [
    check("effect_operator_actions_action_check", oneOf("action", OPERATOR_ACTIONS)),
    check("effect_operator_actions_status_before_check", oneOf("status_before", EFFECT_STATUSES)),
    check("effect_operator_actions_status_after_check", oneOf("status_after", EFFECT_STATUSES)),
    // Only a compensate row names a compensation (rows from before migration 0008 whose compensation's
    // Driver was purged lost that link by SET NULL, so a compensate row may also have none).
    check("effect_operator_actions_compensation_check", sql`action = 'compensate' OR compensation_effect_id IS NULL`),
    check("effect_operator_actions_actor_check", sql`length(actor) BETWEEN 1 AND 200`),
    check("effect_operator_actions_reason_check", sql`length(reason) BETWEEN 1 AND 2000`),
    // The actions on an effect (`show`). No index on run_id: no query reads the audit by run (effect_operator_actions_run_idx
    // was dropped; docs/ARCHITECTURE.md "Indexes").
    index("effect_operator_actions_effect_idx").on(t.effectId),
  ],
);

/**
 * Refused operator actions (every action, refused ones included, is audited): who
 * (`actor`) asked for what (`action`) on which effect (`effect_id`: as given; no foreign key, so a
 * refusal for an id that does not exist, or of an effect deleted later, is kept), why (`reason`),
 * the refusal code (`outcome`, one of {@link OPERATOR_REFUSAL_CODES}) and message, the effect's status
 * at the time (null when there was no such effect), and when. Written in its own transaction after
 * the refused action rolled back: it changes no ledger state. Append-only.
 */
export const effectOperatorRefusals = sqliteTable(
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
    createdAtMs: integer("created_at_ms").notNull(),
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
