// The port through which the ledger and finalization repair reach reconciliation of unknown effects, and its result types.
import type { ReconciliationTrigger } from "@mosoo/contracts";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { EffectRow } from "../infrastructure/effect.repository.js";

/**
 * What an outcome's transaction did to the effect's command when the caller asked it to settle the
 * command ({@link ReconcileOptions.settleCommand}): `completed` (the effect `succeeded`), `failed`
 * (`not_executed` or still `unknown`), or null (not asked, or the command was already terminal).
 */
export type CommandSettlement = "completed" | "failed" | null;

/** Why a lookup was superseded: see {@link ReconcileResult}. */
type SupersededReason = "lease_held" | "cas_lost" | "waited";

/**
 * What one reconciliation of an effect did:
 * - `ineligible`: no lookup was made (flag off, no binding, undeclared tool, not `unknown`, bound reached…);
 * - `superseded`: another reconciler held the lease (`reasonCode` `lease_held`) or the effect changed under the
 *   lookup (`cas_lost`); nothing changed but a `superseded` record with that reason (`waited`: a redelivery that
 *   waited out another reconciler's lease, no record of its own);
 * - `confirmed_succeeded` / `confirmed_not_executed` / `still_unknown`: the outcome committed, with
 *   `commandSettled`, what the same transaction did to the effect's command, and for `still_unknown` the
 *   record's `error` (one line, URL credentials hidden: an adapter's thrown message, a timeout, a crash; null for
 *   a confirmed outcome or when the reason code says it all).
 * `effect` is the row after the call.
 */
export type ReconcileResult =
  | { kind: "ineligible"; reasonCode: string; effect: EffectRow | undefined }
  | { kind: "superseded"; reasonCode: SupersededReason; effect: EffectRow | undefined }
  | {
      kind: "confirmed_succeeded" | "confirmed_not_executed" | "still_unknown";
      reasonCode: string | null;
      error: string | null;
      effect: EffectRow;
      commandSettled: CommandSettlement;
    };

/** True when the lookup confirmed an outcome (`confirmed_succeeded` or `confirmed_not_executed`) and committed it. */
export function isConfirmed(result: ReconcileResult): boolean {
  return result.kind === "confirmed_succeeded" || result.kind === "confirmed_not_executed";
}

/**
 * Options of one reconciliation. `settleCommand`: the outcome's transaction also ends the effect's
 * command from the effect as committed (the ledger's `settleCommandFromEffect`), so outcome, receipt,
 * result, record, command and run event commit together (see `ReconciliationOutcomeWriter.commit` in reconciliation-outcome-writer.service.ts); the result's
 * `commandSettled` says what it did. Finalization repair asks for it; a redelivered claim does not.
 */
export interface ReconcileOptions {
  settleCommand?: boolean;
  /**
   * The caller's own writes in the outcome's transaction (the operator's audit row), handed the effect
   * as committed; it runs after the command's settlement, and a throw rolls the whole outcome back.
   */
  alsoWrite?: (tx: StoreTx, effect: EffectRow) => Promise<void>;
}

/**
 * Options of {@link EffectReconciliationPort.reconcileMany}: the `trigger` recorded with each outcome,
 * `concurrency` (lookups at once), `settleCommand` (as in {@link ReconcileOptions}, for every effect),
 * `onResult(result, effectId)` after each effect (its outcome already committed), `shouldStart()` (false: start no more lookups),
 * `onError(err, effectId)` (an effect's database error; without it the error rejects).
 */
export interface ReconcileManyOptions extends ReconcileOptions {
  trigger: ReconciliationTrigger;
  concurrency: number;
  onResult: (result: ReconcileResult, effectId: string | undefined) => void | Promise<void>;
  shouldStart?: () => boolean;
  onError?: (err: unknown, effectId: string | undefined) => void;
}

/**
 * The port through which the ledger (an inline claim of a redelivered command) and the drivers module
 * (finalization repair) reach reconciliation of `unknown` effects (docs/DESIGN.md §6).
 * The ledger owns this interface; the reconciliation module's `EffectReconciler` implements it and
 * the composition root hands it in (absent when reconciliation is off), so neither the ledger nor
 * the drivers module imports reconciliation.
 */
export interface EffectReconciliationPort {
  /** True when an automatic lookup may run now: `unknown`, bound, and not held back (operator attention, lookup bound, not due yet). `nowMs` in ms. */
  isDue(effect: EffectRow, nowMs: number): boolean;
  /** One lookup of `effectId` for `trigger`, outcome committed (with the command when `opts.settleCommand`). Never throws for adapter misbehaviour; a database error propagates. */
  reconcile(effectId: string, trigger: ReconciliationTrigger, opts?: ReconcileOptions): Promise<ReconcileResult>;
  /** Reconciles every effect `source` yields (a sync or async iterator, pulled lazily), `opts.concurrency` at a time; see {@link ReconcileManyOptions}. */
  reconcileMany(source: Iterator<EffectRow> | AsyncIterator<EffectRow>, opts: ReconcileManyOptions): Promise<void>;
  /** Waits (at most `maxWaitMs` ms) until no live lease is held on the effect; returns the row as it is then. */
  awaitLease(effectId: string, maxWaitMs: number): Promise<EffectRow | undefined>;
}
