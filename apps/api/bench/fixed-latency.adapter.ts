// The bench's reconciliation adapter: every lookup takes a fixed time, then answers from the key alone.
import type { AdapterDeclaration, ReconciliationAdapter, ReconciliationAdapterFactory } from "@mosoo/effect-reconciliation";

/** The MCP server id the bench binds to {@link createFixedLatencyAdapter}; effects of other servers are unbound. */
export const BENCH_BOUND_SERVER = "tracker";
/** The one tool the bench adapter declares. */
export const BENCH_TOOL = "create_issue";

const DECLARATION: AdapterDeclaration = {
  id: "bench-fixed-latency",
  version: "1.0.0",
  tools: [BENCH_TOOL],
  retentionWindowMs: 24 * 60 * 60 * 1000,
  keyFencing: { kind: "lookup_fences_key" },
};

/**
 * {@link createFixedLatencyAdapter} as an installable factory (options `{latencyMs}`, a positive integer
 * of ms), so that the recovery bench binds it through the API's sandboxing adapter host.
 * @throws Error when `latencyMs` is not a positive integer.
 */
export const fixedLatencyAdapterFactory: ReconciliationAdapterFactory = {
  declaration: DECLARATION,
  create(options: unknown): ReconciliationAdapter {
    const latencyMs = (options as { latencyMs?: unknown } | undefined)?.latencyMs;
    if (typeof latencyMs !== "number" || !Number.isInteger(latencyMs) || latencyMs < 1)
      throw new Error("latencyMs must be a positive integer");
    return createFixedLatencyAdapter(latencyMs);
  },
};

/**
 * A stateless reconciliation adapter whose every lookup takes `latencyMs` (ms, a `setTimeout`,
 * honouring the abort signal) and then answers from the key alone, so it holds no per-key memory
 * (peak RSS measures the runtime, not the double): keys whose last character has an even char code
 * are `confirmed_succeeded` (a small MCP result and receipt, no fingerprint), the others
 * `confirmed_not_executed` (the declaration says a lookup fences the key, so §5 accepts it).
 */
export function createFixedLatencyAdapter(latencyMs: number): ReconciliationAdapter {
  return {
    declaration: DECLARATION,
    lookup(request, { signal }): Promise<unknown> {
      return new Promise((resolve, reject) => {
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(signal.reason);
        };
        const timer = setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          const observedAt = new Date().toISOString();
          const succeeded = request.idempotencyKey.charCodeAt(request.idempotencyKey.length - 1) % 2 === 0;
          resolve(
            succeeded
              ? {
                  outcome: "confirmed_succeeded",
                  toolName: request.toolName,
                  idempotencyKey: request.idempotencyKey,
                  result: { content: [{ type: "text", text: `created ${request.idempotencyKey}` }] },
                  receipt: { providerOperationId: `op_${request.idempotencyKey}`, observedAt },
                }
              : {
                  outcome: "confirmed_not_executed",
                  toolName: request.toolName,
                  idempotencyKey: request.idempotencyKey,
                  receipt: { observedAt, detail: { fenced: true } },
                },
          );
        }, latencyMs);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    },
  };
}
