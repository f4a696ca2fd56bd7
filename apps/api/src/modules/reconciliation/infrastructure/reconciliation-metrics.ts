import { Counter, type Registry } from "prom-client";

/**
 * Prometheus counters of reconciliation (exposed at `GET /metrics`):
 * `mosoo_effect_reconciliation_lookups_total{adapter, outcome, reason_code}` counts every recorded
 * lookup outcome, `superseded` included (reason_code is "" when there is none).
 */
export class ReconciliationMetrics {
  readonly lookups: Counter<"adapter" | "outcome" | "reason_code">;

  constructor(registry: Registry) {
    this.lookups = new Counter({
      name: "mosoo_effect_reconciliation_lookups_total",
      help: "Reconciliation lookups of unknown external tool effects, by adapter, outcome and reason code",
      labelNames: ["adapter", "outcome", "reason_code"],
      registers: [registry],
    });
  }

  /** Counts one recorded outcome. */
  record(adapterId: string, outcome: string, reasonCode: string | null): void {
    this.lookups.inc({ adapter: adapterId, outcome, reason_code: reasonCode ?? "" });
  }
}
