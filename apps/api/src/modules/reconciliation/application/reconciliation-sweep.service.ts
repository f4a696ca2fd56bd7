import pLimit from "p-limit";
import type { RuntimeContext } from "../../runtime/application/runtime-context.js";
import { reconciliationRepository } from "../infrastructure/reconciliation.repository.js";
import type { EffectReconciler } from "./effect-reconciler.service.js";
import type { ReconciliationSettings } from "./reconciliation-settings.js";

/** Largest number of due effects one sweep pass looks at. */
export const SWEEP_BATCH = 200;

/** What one reconciliation sweep pass did (counts). */
export interface ReconciliationSweepReport {
  /** Lookups whose outcome this pass committed (superseded ones not counted). */
  lookedUp: number;
  /** Of those, effects resolved to `succeeded` or `not_executed`. */
  resolved: number;
}

/**
 * The reconciliation part of the maintenance sweep (DESIGN.md §6.3): `unknown` effects whose next
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

  /** One pass over the due effects; an error on one effect is logged and does not stop the pass. */
  async sweepOnce(): Promise<ReconciliationSweepReport> {
    const report: ReconciliationSweepReport = { lookedUp: 0, resolved: 0 };
    if (!this.settings.enabled) return report;
    const now = this.ctx.clock.nowMs();
    const eligible = [...this.settings.bindings].map(([serverId, adapter]) => ({ serverId, tools: adapter.declaration.tools }));
    const due = reconciliationRepository.listDue(this.ctx.db, now, SWEEP_BATCH, eligible).filter((e) => this.reconciler.isDue(e, now));
    const limit = pLimit(this.settings.concurrency);
    await Promise.all(
      due.map((effect) =>
        limit(async () => {
          try {
            const result = await this.reconciler.reconcile(effect.id, "sweep");
            if (result.kind !== "ineligible" && result.kind !== "superseded") report.lookedUp += 1;
            if (result.kind === "confirmed_succeeded" || result.kind === "confirmed_not_executed") report.resolved += 1;
          } catch (err) {
            this.ctx.logger.error({ effectId: effect.id, err: String(err) }, "sweep.reconcile_failed");
          }
        }),
      ),
    );
    return report;
  }
}
