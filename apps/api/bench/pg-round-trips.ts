/** Round trips per lifecycle step on PostgreSQL: every `query` a `pg` client sends, counted step by step. */
import pg from "pg";
import type { Runtime } from "../src/composition-root.js";
import { BENCH_BOUND_SERVER, BENCH_TOOL } from "./fixed-latency.adapter.js";

/** The lifecycle's steps, as `npm run db:wal-pages` names them on SQLite. */
const STEPS = ["enqueue", "deliver", "claim", "complete", "terminal"] as const;

/** Round trips per step of one lifecycle, and `lifecycle`: their sum without the delivery (as the ledger bench times it). */
export type PgRoundTrips = Record<(typeof STEPS)[number] | "lifecycle", number>;

/**
 * Runs two lifecycles through `runtime` on a Driver of its own (the first warms the prepared statements)
 * and counts the second's `pg.Client.prototype.query` calls per step: each is one round trip (a named
 * prepared statement is parsed in the same round trip as its first execution). The counter is installed
 * for the call only, so run it while nothing else of this process queries.
 */
export async function countPgRoundTrips(runtime: Runtime): Promise<PgRoundTrips> {
  const { driverToken } = await runtime.drivers.register({ name: "round-trips" }, { kind: "enrollment" });
  const { connectionId } = await runtime.drivers.connect(await runtime.drivers.authenticate(driverToken));
  const instance = await runtime.drivers.authenticate(driverToken);
  const { runId } = await runtime.runs.createRun({ driverInstanceId: instance.id });
  const result = { outputText: "ok", requestId: "r", serverId: BENCH_BOUND_SERVER, toolName: BENCH_TOOL };
  let counts = {} as PgRoundTrips;
  for (let i = 0; i < 2; i++) {
    const step = async <T>(name: (typeof STEPS)[number], fn: () => Promise<T>): Promise<T> => {
      let out: T | undefined;
      counts[name] = await countRoundTrips(async () => (out = await fn()));
      return out as T;
    };
    counts = {} as PgRoundTrips;
    const call = await step("enqueue", () =>
      runtime.runs.enqueueToolCall(runId, { serverId: BENCH_BOUND_SERVER, toolName: BENCH_TOOL, arguments: { i }, requestId: "r" }),
    );
    await step("deliver", () => runtime.commands.nextCommand(instance, connectionId, 0));
    const claim = await step("claim", () => runtime.ledger.claim(instance, connectionId, call.commandId));
    if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
    await step("complete", () =>
      runtime.ledger.complete(instance, call.effectId, { connectionId, attempt: claim.attempt, result, receipt: null }),
    );
    await step("terminal", () => runtime.commands.updateCommand(instance, call.commandId, { connectionId, status: "completed", result }));
  }
  counts.lifecycle = counts.enqueue + counts.claim + counts.complete + counts.terminal;
  return counts;
}

/**
 * Calls `fn` once and counts the `pg` queries (round trips) it sends: every `pg.Client.prototype.query`
 * call while it runs. The counter is installed for the call only; run it while nothing else of this
 * process queries.
 */
export async function countRoundTrips(fn: () => Promise<unknown>): Promise<number> {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  let calls = 0;
  proto.query = function countedQuery(this: unknown, ...args: unknown[]) {
    calls += 1;
    return original.apply(this, args);
  };
  try {
    await fn();
    return calls;
  } finally {
    proto.query = original;
  }
}
