// Prometheus counter of the repeat guard's refusals (exposed at `GET /metrics`).
import { Counter, type Registry } from "prom-client";

/**
 * `mosoo_tool_call_repeat_refused_total{server, tool, earlier_status}`: enqueues the repeat guard refused
 * (see `guardRepeat` in repeat-guard.policy.ts), by MCP server, tool and the earlier effect's status
 * (`succeeded`, `unknown`, `compensated`, or `in_flight` for one still queued or executing).
 */
export class RepeatGuardMetrics {
  readonly refused: Counter<"server" | "tool" | "earlier_status">;

  constructor(registry: Registry) {
    this.refused = new Counter({
      name: "mosoo_tool_call_repeat_refused_total",
      help: "Tool calls refused by the repeat guard (same request as a recent write of the same session), by server, tool and the earlier effect's status",
      labelNames: ["server", "tool", "earlier_status"],
      registers: [registry],
    });
  }
}
