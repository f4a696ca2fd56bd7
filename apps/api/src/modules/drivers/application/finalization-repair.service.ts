// Driver finalization repair, the one path every Driver's end takes: fence its executing effects and end its open commands.
import type { FinalizationSummary } from "@mosoo/contracts";
import { turnInterruptedRunError } from "../../ledger/domain/turn-account.js";
import { readTurnToolCallFacts } from "../../ledger/application/turn-account-facts.query.js";
import { settleCommandFromEffect, settleCommandsFromEffects } from "../../ledger/application/command-settlement.service.js";
import {
  isConfirmed,
  type CommandSettlement,
  type EffectReconciliationPort,
  type ReconcileResult,
} from "../../ledger/application/effect-reconciliation.port.js";
import type { EffectRow, OpenCommandWithEffect } from "../../ledger/application/effect-rows.service.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { commandRepository } from "../infrastructure/command.repository.js";
import { driverInstanceRepository } from "../infrastructure/driver-instance.repository.js";
import { runTables } from "../../ledger/application/owned-tables.port.js";
import { effectRows } from "../../ledger/application/effect-rows.service.js";
import { fenceExecutingEffectsOfDriver } from "../../ledger/application/effect-ledger.service.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import type { WorkClaimService } from "./work-claim.service.js";

/** Why a Driver instance is being finalized: its own request, the sweep (heartbeat expired), or an operator. */
export type FinalizationTrigger = "driver_request" | "heartbeat_expired" | "operator";

/** Adds a command the repair ended (`completed` or `failed`; null: none) to `summary`. */
function countSettlement(summary: FinalizationSummary, settled: CommandSettlement): void {
  if (settled === "completed") summary.commandsCompleted += 1;
  else if (settled === "failed") summary.commandsFailed += 1;
}

/** Adds one lookup's result to `summary`: the command its outcome's transaction ended, and a confirmed outcome. */
function countLookup(summary: FinalizationSummary, result: ReconcileResult): void {
  if ("commandSettled" in result) countSettlement(summary, result.commandSettled);
  if (isConfirmed(result)) summary.effectsReconciled += 1;
}

/** A summary with every count at zero. */
function emptyFinalizationSummary(): FinalizationSummary {
  return { effectsFenced: 0, commandsCompleted: 0, commandsFailed: 0, runsFailed: 0, effectsReconciled: 0 };
}

/**
 * Driver finalization repair (docs/DESIGN.md §3 rule 10): the one path every ending of a Driver goes
 * through (its own finalize request, heartbeat expiry found by the sweep, an operator).
 * 1. fence: every `executing` effect of the instance becomes `unknown`;
 * 2. every command without a terminal receipt ends: `completed` with the stored result when its
 *    effect `succeeded`, failed `external_effect.unknown` (not retryable, `details.effectIds`) when
 *    its effect is `unknown` (flag on or off, bound or not: see {@link settleCommandFromEffect}), failed
 *    `external_effect.not_executed` when it is `not_executed`, else (never dispatched) failed
 *    `driver.command_driver_terminal` (details name the effect);
 * 3. with reconciliation on, each `unknown` effect whose server is bound to an adapter that
 *    declares its tool is looked up (bounded concurrency) and, per effect, ONE transaction commits
 *    the outcome, receipt, result, reconciliation record, the command's terminal state (`completed`,
 *    failed `external_effect.not_executed` or failed `external_effect.unknown`) and the run event;
 *    such commands are not ended in step 2, so nothing terminal is published before that commit;
 * 4. the instance's active run fails with exactly one terminal `run.failed` event whose error carries
 *    the turn's account (every tool call of the run and what became of it, read from the ledger in the
 *    same transaction: {@link turnInterruptedRunError}): `external_effect.unknown` (`retryable: false`,
 *    `details.effectIds`) when any effect of the run is unknown, `runtime.turn_interrupted_after_writes`
 *    (not retryable, "continue from these results") when a write of the turn completed, and
 *    `runtime.turn_interrupted` ("please resend", retryable) only when nothing of the turn was written
 *    (see {@link settleCommandFromEffect} and {@link turnInterruptedRunError}).
 * Idempotent: a second run changes nothing more and reports zeros. Crash-safe: the instance stays
 * `finalizing` until the last step commits, and the sweep resumes such instances.
 *
 * Single flight across API instances (see {@link WorkClaimService}): a repair runs only under the store claim
 * `driver_finalization` / <Driver instance id> (`work_claims`), so two instances sharing one store
 * never repair the same Driver at once; within one instance a second caller also waits for the
 * repair in flight. A caller that finds another instance's claim live gets zeros at once (that
 * instance finishes the repair; if it dies, its claim expires and the sweep of any instance resumes
 * the `finalizing` Driver). A holder that loses its claim (it stalled past the claim's TTL and another
 * instance took over) stops before its next step; every step is a compare-and-set, so nothing is done twice.
 */
export class FinalizationRepairService {
  private readonly inFlight = new Map<string, Promise<FinalizationSummary | null>>();

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly claims: WorkClaimService,
    private readonly reconciler?: EffectReconciliationPort,
    private readonly concurrency = 4,
    /** How long (ms) to wait for another reconciler's lease on an effect before settling its command. */
    private readonly leaseWaitMs = 30_000,
  ) {}

  /**
   * Runs the repair for `driverInstanceId`.
   * @returns counts of what changed (all zero when it was already finalized, or another API instance is repairing it).
   * @throws UserFacingError `driver.not_found`.
   */
  async finalize(driverInstanceId: string, trigger: FinalizationTrigger): Promise<FinalizationSummary> {
    return (await this.finalizeUnless(driverInstanceId, trigger, undefined)) ?? emptyFinalizationSummary();
  }

  /**
   * The sweep's finalization of a Driver whose heartbeat expired: like {@link finalize}, but judged
   * again inside the repair's first transaction: when the instance heartbeated after `cutoffMs` (ms
   * since the epoch) since the sweep listed it (the heartbeat committed between the sweep's read and
   * this repair), nothing changes and the result is null (a live Driver is never finalized).
   * @throws UserFacingError `driver.not_found`.
   */
  async finalizeExpired(driverInstanceId: string, cutoffMs: number): Promise<FinalizationSummary | null> {
    return this.finalizeUnless(driverInstanceId, "heartbeat_expired", cutoffMs);
  }

  private async finalizeUnless(
    driverInstanceId: string,
    trigger: FinalizationTrigger,
    heartbeatCutoffMs: number | undefined,
  ): Promise<FinalizationSummary | null> {
    // Single flight per instance: a Driver's own finalize and the sweep must not repair it twice at
    // once (the second would settle commands from effects the first is still reconciling).
    const running = this.inFlight.get(driverInstanceId);
    if (running) {
      await running.catch(() => undefined);
      return emptyFinalizationSummary();
    }
    const run = this.claims
      .runClaimed("driver_finalization", driverInstanceId, (claimLost) =>
        this.repairOnce(driverInstanceId, trigger, claimLost, heartbeatCutoffMs),
      )
      .then((r) => {
        if (r.claimed) return r.value;
        this.ctx.logger.info({ driverInstanceId, trigger }, "driver.finalization_claimed_elsewhere: another API instance is repairing it");
        return emptyFinalizationSummary();
      })
      .finally(() => this.inFlight.delete(driverInstanceId));
    this.inFlight.set(driverInstanceId, run);
    return run;
  }

  private async repairOnce(
    driverInstanceId: string,
    trigger: FinalizationTrigger,
    claimLost: AbortSignal,
    heartbeatCutoffMs: number | undefined,
  ): Promise<FinalizationSummary | null> {
    const summary = emptyFinalizationSummary();
    const first = await this.fenceAndSettle(driverInstanceId, heartbeatCutoffMs);
    if (first.kind === "alive") {
      this.ctx.logger.info({ driverInstanceId, trigger }, "driver.finalization_skipped: it heartbeated after the sweep listed it");
      return null;
    }
    if (first.kind === "finalized") return summary;
    Object.assign(summary, first.counts);
    for (const line of first.logs) {
      if (line.level === "warn") this.ctx.logger.warn(line.fields, line.msg);
      else this.ctx.logger.info(line.fields, line.msg);
    }
    const deferred = first.deferred;
    if (!claimLost.aborted) await this.reconcileDeferred(deferred, summary);
    if (claimLost.aborted) {
      // Another instance took the claim over: it resumes the `finalizing` Driver from the store.
      this.ctx.logger.warn(
        { driverInstanceId, trigger, ...summary },
        "driver.finalization_claim_lost: stopped; another API instance resumes it",
      );
      return summary;
    }
    await this.failActiveRunAndClose(driverInstanceId, summary);
    this.ctx.logger.info({ driverInstanceId, trigger, ...summary }, "driver.finalized");
    return summary;
  }

  /**
   * Steps 1–2, one transaction. Returns the effects left for reconciliation (rows as fenced), the
   * counts and the log lines of what it changed (logged by the caller after the commit, and built
   * inside the callback, so a unit of work that runs again — PostgreSQL retries it whole after a
   * serialization failure — counts and logs once); `finalized` when it already was; `alive` when
   * `heartbeatCutoffMs` is given and the instance heartbeated after it (nothing changed).
   */
  private async fenceAndSettle(
    driverInstanceId: string,
    heartbeatCutoffMs: number | undefined,
  ): Promise<
    | { kind: "finalized" }
    | { kind: "alive" }
    | {
        kind: "repairing";
        deferred: EffectRow[];
        counts: FinalizationSummary;
        logs: { level: "info" | "warn"; fields: Record<string, unknown>; msg: string }[];
      }
  > {
    const now = this.ctx.clock.nowMs();
    return this.ctx.store.transaction(async (tx) => {
      const deferred: EffectRow[] = [];
      const summary = emptyFinalizationSummary();
      const logs: { level: "info" | "warn"; fields: Record<string, unknown>; msg: string }[] = [];
      const instance = await driverInstanceRepository.findById(tx, driverInstanceId);
      if (!instance) throw new UserFacingError("driver.not_found", `no Driver instance ${driverInstanceId}`);
      if (instance.status === "finalized") return { kind: "finalized" as const };
      if (
        heartbeatCutoffMs !== undefined &&
        instance.status !== "finalizing" &&
        instance.lastHeartbeatAtMs !== null &&
        instance.lastHeartbeatAtMs > heartbeatCutoffMs
      )
        return { kind: "alive" as const };
      await driverInstanceRepository.updateIfStatus(tx, driverInstanceId, ["registered", "connected", "finalizing"], {
        status: "finalizing",
        connectionId: null,
      });
      // one multi-row compare-and-set fences them all (each row judged as it is when written)
      for (const eff of await fenceExecutingEffectsOfDriver(tx, driverInstanceId, "driver_finalized", now)) {
        summary.effectsFenced += 1;
        logs.push({ level: "warn", fields: { driverInstanceId, effectId: eff.id, commandId: eff.commandId }, msg: "effect.fenced" });
      }
      // the open commands and their effects, read after fencing, in one query (two with a reconciler, whose
      // lookups take whole effect rows), not one query per command
      const toSettle: OpenCommandWithEffect[] = [];
      for (const { command: cmd, effect: eff, wholeEffect } of await this.openCommandsOfDriver(tx, driverInstanceId)) {
        if (wholeEffect?.status === "unknown" && this.reconciler?.isDue(wholeEffect, now)) {
          deferred.push(wholeEffect);
          continue;
        }
        // unknown here: no eligible adapter (flag off, unbound, undeclared tool) or not due (waits for its
        // next lookup or an operator): failed external_effect.unknown, never a resend; never dispatched
        // (intent) or no effect: the Driver ended before the command did (see settleCommandsFromEffects).
        // `cmd` was read in this transaction (the list above): not read again.
        toSettle.push({ command: cmd, effect: eff });
        logs.push({
          level: "info",
          fields: { driverInstanceId, commandId: cmd.id, effectId: eff?.id, effectStatus: eff?.status },
          msg: "command.repaired",
        });
      }
      for (const settled of await settleCommandsFromEffects(tx, toSettle, now)) countSettlement(summary, settled);
      return { kind: "repairing" as const, deferred, counts: summary, logs };
    });
  }

  /**
   * The instance's open commands, oldest first, each with its effect: the settling columns only
   * (`listOpenCommandsOfDriver`) without a reconciler, since nothing is then deferred to a lookup; with one,
   * also the effect's whole row as `wholeEffect` (a lookup and its admission take it), read in a second query.
   */
  private async openCommandsOfDriver(
    tx: StoreTx,
    driverInstanceId: string,
  ): Promise<Array<OpenCommandWithEffect & { wholeEffect?: EffectRow }>> {
    if (!this.reconciler) return effectRows.listOpenCommandsOfDriver(tx, driverInstanceId);
    const effects = await effectRows.mapByNonTerminalCommandOfDriver(tx, driverInstanceId);
    return (await commandRepository.listNonTerminalOfDriver(tx, driverInstanceId)).map((command) => {
      const wholeEffect = effects.get(command.id);
      return { command, effect: wholeEffect, ...(wholeEffect ? { wholeEffect } : {}) };
    });
  }

  /**
   * Step 3: reconcile the deferred effects, `concurrency` lookups at a time (the reconciler's worker
   * pool; leases taken in small batches). Each outcome commits with its command's terminal state
   * (`settleCommand`); the result says what that transaction did, and {@link followUpLookup} counts it.
   */
  private async reconcileDeferred(effects: EffectRow[], summary: FinalizationSummary): Promise<void> {
    const reconciler = this.reconciler;
    if (effects.length === 0 || !reconciler) return;
    await reconciler.reconcileMany(effects.values(), {
      trigger: "finalization",
      concurrency: this.concurrency,
      settleCommand: true,
      onResult: async (result, effectId) => {
        if (effectId !== undefined) await this.followUpLookup(reconciler, effectId, result, summary);
      },
    });
  }

  /**
   * After one deferred lookup (its outcome committed): counts it; a `superseded` one waits for the
   * other reconciler's lease and may look the effect up once more ({@link lookUpAgainAfterLease});
   * an effect no lookup of ours settled (`ineligible`, `superseded`) ends its command from the
   * effect as it is now ({@link settleCommandAsEffectIs}; a no-op when a lookup already did).
   */
  private async followUpLookup(
    reconciler: EffectReconciliationPort,
    effectId: string,
    result: ReconcileResult,
    summary: FinalizationSummary,
  ): Promise<void> {
    countLookup(summary, result);
    if (result.kind === "superseded") await this.lookUpAgainAfterLease(reconciler, effectId, summary);
    if (result.kind === "ineligible" || result.kind === "superseded") await this.settleCommandAsEffectIs(effectId, summary);
  }

  /**
   * Another reconciler held the effect: waits (at most `leaseWaitMs`) for its lease to end (its
   * outcome commits first); if the effect is still unknown and due (e.g. the other lease simply
   * expired), looks it up once more, its command settled in the outcome's transaction.
   */
  private async lookUpAgainAfterLease(reconciler: EffectReconciliationPort, effectId: string, summary: FinalizationSummary): Promise<void> {
    const now = await reconciler.awaitLease(effectId, this.leaseWaitMs);
    if (now && reconciler.isDue(now, this.ctx.clock.nowMs()))
      countLookup(summary, await reconciler.reconcile(effectId, "finalization", { settleCommand: true }));
  }

  /** Ends the effect's command from the effect as it is now, in a transaction of its own (a no-op when it already ended). */
  private async settleCommandAsEffectIs(effectId: string, summary: FinalizationSummary): Promise<void> {
    const settled = await this.ctx.store.transaction(async (tx): Promise<CommandSettlement> => {
      const effect = await effectRows.findById(tx, effectId);
      if (!effect || !(await settleCommandFromEffect(tx, effect, this.ctx.clock.nowMs()))) return null;
      return effect.status === "succeeded" ? "completed" : "failed";
    });
    countSettlement(summary, settled);
  }

  private async failActiveRunAndClose(driverInstanceId: string, summary: FinalizationSummary): Promise<void> {
    const now = this.ctx.clock.nowMs();
    await this.ctx.store.transaction(async (tx) => {
      // First the Driver's row lock (a no-op write; PostgreSQL runs writes at READ COMMITTED): an enqueue
      // takes the same lock (its command `seq`) before it writes, so one in flight commits before the
      // reads below (which then see its command and effect: nothing is left queued on a failed run, and
      // the account misses no tool call), and one that comes later sees `finalizing` and queues nothing.
      await driverInstanceRepository.updateIfStatus(tx, driverInstanceId, ["finalizing"], { status: "finalizing" });
      // Commands queued while the repair ran (the run was still active) end here, before the run does.
      const toSettle = await effectRows.listOpenCommandsOfDriver(tx, driverInstanceId);
      for (const settled of await settleCommandsFromEffects(tx, toSettle, now)) countSettlement(summary, settled);
      const run = await runTables().findActiveRunOfDriver(tx, driverInstanceId);
      if (run) {
        // See {@link settleCommandFromEffect} and {@link turnInterruptedRunError}: the turn's account, read from the ledger in this transaction;
        // it invites a resend only when nothing of the turn was written
        const error = turnInterruptedRunError(run.id, await readTurnToolCallFacts(tx, run.id), { driverInstanceId });
        if (await runTables().transitionRun(tx, run.id, "active", "failed", now, JSON.stringify(error))) {
          await runTables().appendEvent(tx, run.id, "run.failed", { error }, now);
          summary.runsFailed += 1;
        }
      }
      await driverInstanceRepository.updateIfStatus(tx, driverInstanceId, ["finalizing"], { status: "finalized", finalizedAtMs: now });
    });
  }
}
