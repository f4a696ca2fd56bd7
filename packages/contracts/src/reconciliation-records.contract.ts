/**
 * What started a reconciliation lookup (docs/DESIGN.md §6): the claim of a redelivered command
 * (`redelivery`), Driver finalization repair (`finalization`), the periodic sweep of
 * `still_unknown` effects (`sweep`), or an operator request (`operator`).
 */
export const RECONCILIATION_TRIGGERS = ["redelivery", "finalization", "sweep", "operator"] as const;
/** See {@link RECONCILIATION_TRIGGERS}. */
export type ReconciliationTrigger = (typeof RECONCILIATION_TRIGGERS)[number];

/**
 * The recorded outcome of one lookup: the three validated adapter outcomes, or `superseded`
 * (this reconciler lost the compare-and-set on (status, version) or the lease; it changed nothing).
 */
export const RECONCILIATION_OUTCOMES = ["confirmed_succeeded", "confirmed_not_executed", "still_unknown", "superseded"] as const;
/** See {@link RECONCILIATION_OUTCOMES}. */
export type ReconciliationOutcome = (typeof RECONCILIATION_OUTCOMES)[number];

/**
 * Why an effect waits for an operator. On an `unknown` effect: the provider recorded other
 * arguments under the key (`key_conflict`), the provider may have forgotten the key
 * (`retention_expired`), the lookups reached their configured bound (`lookup_bound_reached`), or
 * they reached it with the adapter's worker crashing, exiting or running out of memory on the last
 * one (`adapter_crashed`: a crash loop ends here, at the operator, never in an API restart loop;
 * docs/DESIGN.md §5), or a provider without a key fence answered "not executed" while the same
 * adapter could not confirm an older key known to have committed (`retention_contradicted`: the
 * retention canary). On a settled effect (`succeeded` / `not_executed`): a provider lookup
 * contradicted how it was settled, e.g. the provider has the write after an operator resolved it
 * `not_executed` (`contradicted_by_provider`), or a Driver reported the provider's
 * real result late (see `decideLateEvidence` in effect-lifecycle.machine.ts) and it contradicts the effect's confirmed outcome
 * (`late_evidence_contradiction`; the evidence is kept on the attempt row). The status is never
 * changed by either: the operator decides (nothing infers a rollback).
 * The DB CHECK `external_tool_effects_attention_check` lists the same values.
 */
export const OPERATOR_ATTENTION_REASONS = [
  "key_conflict",
  "retention_expired",
  "lookup_bound_reached",
  "adapter_crashed",
  "late_evidence_contradiction",
  "contradicted_by_provider",
  "retention_contradicted",
] as const;
/** See {@link OPERATOR_ATTENTION_REASONS}. */
export type OperatorAttentionReason = (typeof OPERATOR_ATTENTION_REASONS)[number];

/**
 * What an operator did to an effect: asked for a lookup now (`lookup`), resolved it
 * by hand (`resolve`), or requested its declared compensation (`compensate`, see `CompensationService` in compensation.service.ts).
 */
export const OPERATOR_ACTIONS = ["lookup", "resolve", "compensate"] as const;
/** See {@link OPERATOR_ACTIONS}. */
export type OperatorAction = (typeof OPERATOR_ACTIONS)[number];

/**
 * What an operator credential may do: `read` lists and shows effects (and
 * reads `/metrics`), `reconcile` asks for a lookup now, `resolve` settles an `unknown` effect by hand,
 * `compensate` requests a declared compensation. A credential holding all four is a full operator
 * (it may also delete runs, sessions and finalized Drivers, and register any Driver).
 */
export const OPERATOR_SCOPES = ["read", "reconcile", "resolve", "compensate"] as const;
/** See {@link OPERATOR_SCOPES}. */
export type OperatorScope = (typeof OPERATOR_SCOPES)[number];

/**
 * Why the operator service refused an action (the stable error codes it throws, docs/DESIGN.md §9):
 * the refusal is audited in `effect_operator_refusals` with this code as its `outcome`.
 * The DB CHECK `effect_operator_refusals_outcome_check` lists the same values.
 */
export const OPERATOR_REFUSAL_CODES = [
  "effect.not_found",
  "effect.not_unknown",
  // a reconciliation lookup holds the effect's lease (resolve refused until it ends or expires)
  "effect.lookup_in_progress",
  "effect.not_reconcilable",
  "effect.not_succeeded",
  "compensation.not_declared",
  "compensation.plan_failed",
  "compensation.exists",
  "compensation.driver_unavailable",
  "driver.not_found",
  // the operator credential lacks the action's scope (reconcile, resolve, compensate)
  "auth.scope",
] as const;
/** See {@link OPERATOR_REFUSAL_CODES}. */
export type OperatorRefusalCode = (typeof OPERATOR_REFUSAL_CODES)[number];
