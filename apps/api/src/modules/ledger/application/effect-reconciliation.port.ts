import type { ReconciliationTrigger } from "@mosoo/contracts";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { EffectRow } from "../infrastructure/effect.repository.js";

/**
 * What one reconciliation of an effect did:
 * - `ineligible`: no lookup was made (flag off, no binding, undeclared tool, not `unknown`, bound reached…);
 * - `superseded`: another reconciler held the lease or won the compare-and-set; nothing changed but a `superseded` record;
 * - `confirmed_succeeded` / `confirmed_not_executed` / `still_unknown`: the outcome committed.
 * `effect` is the row after the call.
 */
export type ReconcileResult =
  | { kind: "ineligible"; reasonCode: string; effect: EffectRow | undefined }
  | { kind: "superseded"; effect: EffectRow | undefined }
  | { kind: "confirmed_succeeded" | "confirmed_not_executed" | "still_unknown"; reasonCode: string | null; effect: EffectRow };

/** True when the lookup confirmed an outcome (`confirmed_succeeded` or `confirmed_not_executed`) and committed it. */
export function isConfirmed(result: ReconcileResult): boolean {
  return result.kind === "confirmed_succeeded" || result.kind === "confirmed_not_executed";
}

/**
 * Called inside the outcome's transaction with the effect as committed: the place where a caller
 * (finalization repair) writes the command's terminal state through the ledger's
 * `settleCommandFromEffect`, so that outcome, receipt, result, record, command and run event commit
 * together (docs/DESIGN.md §3 rule 6).
 */
export type SettleInTransaction = (tx: StoreTx, effect: EffectRow) => Promise<void>;

/**
 * Options of {@link EffectReconciliationPort.reconcileMany}: the `trigger` recorded with each outcome,
 * `concurrency` (lookups at once), `settle` (runs in each outcome's transaction),
 * `onResult(result, effectId)` after each effect, `shouldStart()` (false: start no more lookups),
 * `onError(err, effectId)` (an effect's database error; without it the error rejects).
 */
export interface ReconcileManyOptions {
  trigger: ReconciliationTrigger;
  concurrency: number;
  settle?: SettleInTransaction;
  onResult: (result: ReconcileResult, effectId: string | undefined) => void | Promise<void>;
  shouldStart?: () => boolean;
  onError?: (err: unknown, effectId: string | undefined) => void;
}

/**
 * The port through which the ledger (an inline claim of a redelivered command) and the drivers module
 * (finalization repair) reach reconciliation of `unknown` effects (docs/DESIGN.md §3 rules 4–7, §6).
 * The ledger owns this interface; the reconciliation module's `EffectReconciler` implements it and
 * the composition root hands it in (absent when reconciliation is off), so neither the ledger nor
 * the drivers module imports reconciliation.
 */
export interface EffectReconciliationPort {
  /** True when an automatic lookup may run now: `unknown`, bound, and not held back (operator attention, lookup bound, not due yet). `nowMs` in ms. */
  isDue(effect: EffectRow, nowMs: number): boolean;
  /** One lookup of `effectId` for `trigger`, outcome committed (`settle` runs in its transaction). Never throws for adapter misbehaviour; a database error propagates. */
  reconcile(effectId: string, trigger: ReconciliationTrigger, settle?: SettleInTransaction): Promise<ReconcileResult>;
  /** Reconciles every effect `source` yields (a sync or async iterator, pulled lazily), `opts.concurrency` at a time; see {@link ReconcileManyOptions}. */
  reconcileMany(source: Iterator<EffectRow> | AsyncIterator<EffectRow>, opts: ReconcileManyOptions): Promise<void>;
  /** Waits (at most `maxWaitMs` ms) until no live lease is held on the effect; returns the row as it is then. */
  awaitLease(effectId: string, maxWaitMs: number): Promise<EffectRow | undefined>;
}
