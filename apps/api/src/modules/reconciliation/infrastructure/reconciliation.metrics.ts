// The Prometheus counters of reconciliation lookups, superseded reconcilers and adapter process terminations.
import { Counter, type Registry } from "prom-client";

/**
 * Prometheus counters of reconciliation (exposed at `GET /metrics`):
 * - `mosoo_effect_reconciliation_lookups_total{adapter, outcome, reason_code}`: every committed
 *   lookup outcome (reason_code is "" for confirmed outcomes);
 * - `mosoo_effect_reconciliation_superseded_total{adapter, reason}`: reconcilers that lost the lease
 *   (`lease_held`, no lookup made) or the compare-and-set (`cas_lost`) and changed nothing;
 * - `mosoo_effect_reconciliation_retention_canary_total{adapter, verdict}`: retention canaries asked
 *   before a fence-less "not executed" was believed (see `RetentionCanary` in retention-canary.service.ts): `confirmed`, `contradicted`
 *   (the miss was refused `retention_contradicted` and flagged), `unverified` (the canary lookup
 *   proved nothing), `none` (no committed key fits the window; the miss was refused).
 */
export class ReconciliationMetrics {
  readonly lookups: Counter<"adapter" | "outcome" | "reason_code">;
  readonly superseded: Counter<"adapter" | "reason">;
  readonly canaries: Counter<"adapter" | "verdict">;

  constructor(registry: Registry) {
    this.lookups = new Counter({
      name: "mosoo_effect_reconciliation_lookups_total",
      help: "Reconciliation lookups of unknown external tool effects, by adapter, outcome and reason code",
      labelNames: ["adapter", "outcome", "reason_code"],
      registers: [registry],
    });
    this.superseded = new Counter({
      name: "mosoo_effect_reconciliation_superseded_total",
      help: "Reconcilers that lost the lease or the compare-and-set on an effect and changed nothing",
      labelNames: ["adapter", "reason"],
      registers: [registry],
    });
    this.canaries = new Counter({
      name: "mosoo_effect_reconciliation_retention_canary_total",
      help: "Retention canaries asked before a not_executed answer without a key fence was believed, by adapter and verdict",
      labelNames: ["adapter", "verdict"],
      registers: [registry],
    });
  }

  /** Counts one retention canary verdict (`confirmed`, `contradicted`, `unverified`, or `none` when no canary fitted). */
  recordCanary(adapterId: string, verdict: "confirmed" | "contradicted" | "unverified" | "none"): void {
    this.canaries.inc({ adapter: adapterId, verdict });
  }

  /** Counts one superseded reconciler (`lease_held` or `cas_lost`). */
  recordSuperseded(adapterId: string, reason: string): void {
    this.superseded.inc({ adapter: adapterId, reason });
  }

  /** Counts one recorded outcome. */
  record(adapterId: string, outcome: string, reasonCode: string | null): void {
    this.lookups.inc({ adapter: adapterId, outcome, reason_code: reasonCode ?? "" });
  }
}

/**
 * Prometheus counter of adapter process terminations (see `createIsolatedAdapterHost` in adapter-sandbox.host.ts):
 * `mosoo_adapter_worker_terminations_total{adapter, reason}` (the name kept from when adapters ran in
 * worker threads), one per adapter call whose process was killed or died (`reason`: `timeout` — killed
 * at the call's bound; `crashed` — uncaught exception, floating rejection, a broken reply, or killed
 * with another call; `exited` — `process.exit`; `out_of_memory` — the heap limit `MOSOO_ADAPTER_HEAP_MB`
 * or the resident-memory bound; `cpu_limit` — `MOSOO_ADAPTER_CPU_MS`), and per process found dead between calls. `adapter` is the
 * adapter id (the factory's export name while it is being built).
 */
export class AdapterWorkerMetrics {
  readonly terminations: Counter<"adapter" | "reason">;

  constructor(registry: Registry) {
    this.terminations = new Counter({
      name: "mosoo_adapter_worker_terminations_total",
      help: "Adapter processes killed (timeout, cpu_limit, out_of_memory) or dead (crashed, exited), by adapter and reason",
      labelNames: ["adapter", "reason"],
      registers: [registry],
    });
  }

  /** Counts one termination of `adapterId`'s worker for `reason`. */
  record(adapterId: string, reason: string): void {
    this.terminations.inc({ adapter: adapterId, reason });
  }
}
