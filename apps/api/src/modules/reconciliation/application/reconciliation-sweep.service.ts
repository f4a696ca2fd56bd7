import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import type { EffectRow } from "../../ledger/application/effect-rows.service.js";
import { reconciliationRepository } from "../infrastructure/effect-reconciliation.repository.js";
import { isConfirmed } from "../../ledger/application/effect-reconciliation.port.js";
import type { EffectReconciler } from "./effect-reconciler.service.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";

/**
 * Due effects read per page. A pass pages through the due effects by id (keyset pagination) and
 * holds at most one page plus the lookups in flight in memory, however many effects are due.
 */
export const SWEEP_PAGE = 256;

/**
 * After this long (ms) a pass starts no new lookup (the ones in flight finish), so the
 * maintenance sweep that runs it still finalizes expired Drivers regularly during a large recovery;
 * the next pass continues where the due effects are.
 */
const SWEEP_PASS_BUDGET_MS = 5_000;

/** What one reconciliation sweep pass did (counts). */
export interface ReconciliationSweepReport {
  /** Lookups whose outcome this pass committed (superseded ones not counted). */
  lookedUp: number;
  /** Of those, effects resolved to `succeeded` or `not_executed`. */
  resolved: number;
}

/**
 * The reconciliation part of the maintenance sweep (docs/DESIGN.md §6.3): `unknown` effects whose next
 * lookup is due (persisted, so it survives API restarts) are looked up again with bounded
 * concurrency, until their lookup bound, after which they wait for an operator. A confirmed outcome
 * resolves the effect (and lifts the fence) even though its command is already terminal.
 */
export class ReconciliationSweep {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly reconciler: EffectReconciler,
    private readonly settings: ReconciliationSettings,
  ) {}

  /**
   * One pass over the effects due when it starts, streamed: due effects are read in pages
   * (keyset pagination by id, {@link SWEEP_PAGE} rows a page) and handed to the reconciler's worker
   * pool (`reconcileMany`: `concurrency` lookups in flight until the due effects, or
   * {@link SWEEP_PASS_BUDGET_MS}, run out; leases taken in small batches), so memory does not grow
   * with the backlog. Each effect's outcome still commits in its own transaction. An error on one
   * effect is logged and does not stop the pass.
   */
  async sweepOnce(): Promise<ReconciliationSweepReport> {
    const report: ReconciliationSweepReport = { lookedUp: 0, resolved: 0 };
    if (!this.settings.enabled) return report;
    // Lookups whose lease expired without an outcome (a dead or stalled API instance): recorded
    // `lookup_interrupted` and scheduled again, so they become due like any other (docs/DESIGN.md §11).
    await this.reconciler.endExpiredLeases();
    const now = this.ctx.clock.nowMs();
    const stopAtMs = now + SWEEP_PASS_BUDGET_MS;
    await this.reconciler.reconcileMany(this.dueEffects(now), {
      trigger: "sweep",
      concurrency: this.settings.concurrency,
      shouldStart: () => this.ctx.clock.nowMs() < stopAtMs,
      onResult: (result) => {
        if (result.kind !== "ineligible" && result.kind !== "superseded") report.lookedUp += 1;
        if (isConfirmed(result)) report.resolved += 1;
      },
      onError: (err, effectId) => this.ctx.logger.error({ effectId, err: String(err) }, "sweep.reconcile_failed"),
    });
    return report;
  }

  /** The effects due at `nowMs`, oldest first, read one page at a time (each page one store read; the workers share the iterator). */
  private async *dueEffects(nowMs: number): AsyncGenerator<EffectRow, void, undefined> {
    const eligible = [...this.settings.bindings].map(([serverId, adapter]) => ({ serverId, tools: adapter.declaration.tools }));
    let afterId: string | undefined;
    for (;;) {
      const from = afterId;
      const page = await this.ctx.store.read((tx) => reconciliationRepository.listDue(tx, nowMs, SWEEP_PAGE, eligible, from));
      for (const effect of page) if (this.reconciler.isDue(effect, nowMs)) yield effect;
      if (page.length < SWEEP_PAGE) return;
      afterId = page.at(-1)!.id;
    }
  }
}
