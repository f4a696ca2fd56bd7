// The persisted status lists (commands, effects, attempts, runs, Driver instances, work claims, outages) the store's checks use.
import { z } from "zod";

/**
 * Statuses of a Driver command. `completed`, `failed`, `expired` and `cancelled` are terminal:
 * a terminal command never changes again. The database CHECK constraint lists the same values.
 */
export const COMMAND_STATUSES = ["queued", "delivered", "accepted", "completed", "failed", "expired", "cancelled"] as const;
/** See {@link COMMAND_STATUSES}. */
export const CommandStatusSchema = z.enum(COMMAND_STATUSES);
/** See {@link COMMAND_STATUSES}. */
export type CommandStatus = z.infer<typeof CommandStatusSchema>;
/** The terminal command statuses. */
export const TERMINAL_COMMAND_STATUSES: readonly CommandStatus[] = ["completed", "failed", "expired", "cancelled"];

/**
 * Statuses of an external tool effect. `unknown` is fenced: it never becomes
 * `executing` again. `succeeded` and `not_executed` are final.
 */
export const EFFECT_STATUSES = ["intent", "executing", "succeeded", "unknown", "not_executed"] as const;
/** See {@link EFFECT_STATUSES}. */
export const EffectStatusSchema = z.enum(EFFECT_STATUSES);
/** See {@link EFFECT_STATUSES}. */
export type EffectStatus = z.infer<typeof EffectStatusSchema>;

/**
 * How a final effect status was reached:
 * - `provider_result`: the provider's own response, reported by the Driver while the effect was `executing`;
 * - `reconciled`: an adapter's validated proof (docs/DESIGN.md §5);
 * - `operator`: a manual resolution;
 * - `deadline_missed` (`not_executed` only): the Driver reported that the claim's send-by deadline
 *   passed before it sent `tools/call`, so nothing was sent (see `sendDeadlinePassed` in effect-claim.contract.ts);
 * - `reported_late` (`succeeded` only): the Driver reported the provider's real result after the
 *   effect had been fenced `unknown` meanwhile (late evidence, see `decideLateEvidence` in effect-lifecycle.machine.ts).
 * The database CHECK lists the same values.
 */
export const EFFECT_RESOLUTIONS = ["provider_result", "reconciled", "operator", "deadline_missed", "reported_late"] as const;
/** See {@link EFFECT_RESOLUTIONS}. */
export const EffectResolutionSchema = z.enum(EFFECT_RESOLUTIONS);
/** See {@link EFFECT_RESOLUTIONS}. */
export type EffectResolution = z.infer<typeof EffectResolutionSchema>;

/**
 * Statuses of one attempt (one dispatch) of an effect. `not_sent`: the Driver reported that the
 * claim's send-by deadline passed before it sent `tools/call` (see `sendDeadlinePassed` in effect-claim.contract.ts).
 */
export const ATTEMPT_STATUSES = ["executing", "succeeded", "unknown", "not_sent"] as const;
/** See {@link ATTEMPT_STATUSES}. */
export const AttemptStatusSchema = z.enum(ATTEMPT_STATUSES);
/** See {@link ATTEMPT_STATUSES}. */
export type AttemptStatus = z.infer<typeof AttemptStatusSchema>;

/** Statuses of a session run. Only an `active` run accepts new tool calls. */
export const RUN_STATUSES = ["active", "completed", "failed", "cancelled"] as const;
/** See {@link RUN_STATUSES}. */
export const RunStatusSchema = z.enum(RUN_STATUSES);
/** See {@link RUN_STATUSES}. */
export type RunStatus = z.infer<typeof RunStatusSchema>;

/**
 * Statuses of a Driver instance. `finalizing` means its finalization repair has started and not
 * finished (the sweep resumes it); `finalized` is final.
 */
export const DRIVER_INSTANCE_STATUSES = ["registered", "connected", "finalizing", "finalized"] as const;
/** See {@link DRIVER_INSTANCE_STATUSES}. */
export const DriverInstanceStatusSchema = z.enum(DRIVER_INSTANCE_STATUSES);
/** See {@link DRIVER_INSTANCE_STATUSES}. */
export type DriverInstanceStatus = z.infer<typeof DriverInstanceStatusSchema>;

/**
 * Kinds of work an API instance claims in the store before doing it, so that two instances sharing one
 * store never do the same work at once (table `work_claims`, primary key (kind, key)):
 * - `driver_finalization`: the finalization repair of one Driver instance (key: its id);
 * - `maintenance_sweep`: one pass of the maintenance sweep (key: `pass`, a single key for the store).
 */
export const WORK_CLAIM_KINDS = ["driver_finalization", "maintenance_sweep"] as const;
/** See {@link WORK_CLAIM_KINDS}. */
export type WorkClaimKind = (typeof WORK_CLAIM_KINDS)[number];

/**
 * How the store's last outage was recorded in `store_liveness` (see
 * `MaintenanceSweepService` in the API's maintenance-sweep.service.ts):
 * - `tick_gap`: the store's liveness record was not written for longer than the allowed gap (no API
 *   instance could reach the store, or the store itself was frozen or down);
 * - `instance_observed`: an API instance found the store unreachable or past its bound and recorded it
 *   once the store answered again.
 */
export const STORE_OUTAGE_SOURCES = ["tick_gap", "instance_observed"] as const;
/** See {@link STORE_OUTAGE_SOURCES}. */
export type StoreOutageSource = (typeof STORE_OUTAGE_SOURCES)[number];

// The other persisted lists the store's CHECK constraints are built from (apps/api/src/platform/db/sqlite/sqlite-schema.ts
// reads every list through this entry point, `@mosoo/contracts/statuses`).
export { RUN_EVENT_TYPES, TERMINAL_RUN_EVENT_TYPES } from "./run-events.contract.js";
export type { RunEventType } from "./run-events.contract.js";
export {
  RECONCILIATION_TRIGGERS,
  RECONCILIATION_OUTCOMES,
  OPERATOR_ATTENTION_REASONS,
  OPERATOR_ACTIONS,
  OPERATOR_REFUSAL_CODES,
} from "./reconciliation-records.contract.js";
export type {
  ReconciliationTrigger,
  ReconciliationOutcome,
  OperatorAttentionReason,
  OperatorAction,
  OperatorRefusalCode,
} from "./reconciliation-records.contract.js";
// The bounds of a command's stored trace context (its CHECK constraints).
export { TRACEPARENT_LENGTH, MAX_TRACESTATE_LENGTH } from "./trace-context.contract.js";
