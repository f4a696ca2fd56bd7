// Bench scenario 1 on SQLite: the ledger's cost per tool-call lifecycle against a bare floor, at growing table sizes.
import { Bench, type Task } from "tinybench";
import { newUlid } from "@mosoo/contracts";
import { BENCH_BOUND_SERVER, BENCH_TOOL } from "./fixed-latency.adapter.js";
import { createBenchRuntime, openBenchStore, progress, seedEffects, type BenchStore } from "./bench-store.harness.js";
import { measureLifecycleWrites, type LifecycleWrites } from "./lifecycle-writes.measure.js";
import type { Runtime } from "../src/composition-root.js";

/**
 * tinybench latency statistics of one task over several rounds, in µs per lifecycle: `medianUs`
 * (the median of the rounds' medians), `roundMediansUs` (each round's median: the spread),
 * `madUs` (median of the rounds' median absolute deviations), `p99Us` (highest round p99), `samples` (all rounds).
 */
export interface LatencyStats {
  medianUs: number;
  roundMediansUs: number[];
  madUs: number;
  p99Us: number;
  samples: number;
}

/** One table size of the ledger scenario: existing effects (count) and the three measured tasks. */
export interface LedgerCostPoint {
  /** Effects (and floor rows) in the table before measuring. */
  existingEffects: number;
  /** Four bare single-row better-sqlite3 transactions (prepared statements) on an equivalent table in the same file. */
  floor: LatencyStats;
  /** The four ledger operations through the real runtime, reconciliation off. */
  ledgerOff: LatencyStats;
  /** The same, reconciliation on (the bound adapter is never asked: nothing goes `unknown`). */
  ledgerOn: LatencyStats;
}

/** Result of {@link runLedgerCost}: one {@link LedgerCostPoint} per table size. */
export interface LedgerCostResult {
  points: LedgerCostPoint[];
  /** SQLite only: statements and WAL pages per lifecycle step (mean of {@link WRITES_LIFECYCLES}, reconciliation off), measured after the timed rounds on a fresh store. */
  writes?: LifecycleWrites;
}

/** How many lifecycles the statement and WAL-page counts of the ledger row average. */
const WRITES_LIFECYCLES = 200;

/**
 * The ledger row's counts, on a fresh store (reconciliation off) so that they do not depend on how many
 * lifecycles the timed rounds ran (B-tree splits follow the tables' contents): the same figures on every run.
 * After the timed rounds, since the statement meter it installs stays on better-sqlite3's statements.
 */
async function measureWritesOnFreshStore(): Promise<LifecycleWrites> {
  const store = openBenchStore();
  try {
    const runtime = createBenchRuntime(store, { reconciliation: false, lookupLatencyMs: 10, concurrency: 64 });
    return await measureLifecycleWrites(runtime, store.sqlite, store.file, {
      n: WRITES_LIFECYCLES,
      serverId: BENCH_BOUND_SERVER,
      toolName: BENCH_TOOL,
    });
  } finally {
    store.dispose();
  }
}

/**
 * Options: the table sizes (existing effects), tinybench's `time` per task and round (ms), and
 * `rounds`: the three tasks run one after another in each round, so a change of machine load
 * between tasks shows as spread instead of bias.
 */
export interface LedgerCostOptions {
  sizes: number[];
  timeMs: number;
  rounds: number;
}

const FLOOR_DDL = `CREATE TABLE IF NOT EXISTS bench_floor_effects (
  id TEXT PRIMARY KEY, command_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0,
  attempt_count INTEGER NOT NULL DEFAULT 0, arguments_json TEXT NOT NULL, result_json TEXT, command_status TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL)`;

/**
 * The floor: the same four state changes a lifecycle makes (insert intent+command, claim,
 * complete, terminal update), each as ONE bare single-row transaction (`BEGIN IMMEDIATE`, one
 * prepared statement, commit with fsync) on an equivalent table in the same file.
 */
function floorLifecycle(store: BenchStore) {
  const sqlite = store.sqlite;
  sqlite.exec(FLOOR_DDL);
  const ins = sqlite.prepare(
    "INSERT INTO bench_floor_effects (id, command_id, status, arguments_json, command_status, created_at_ms, updated_at_ms) VALUES (?, ?, 'intent', ?, 'queued', ?, ?)",
  );
  const claim = sqlite.prepare(
    "UPDATE bench_floor_effects SET status = 'executing', attempt_count = attempt_count + 1, version = version + 1, updated_at_ms = ? WHERE id = ? AND status = 'intent'",
  );
  const complete = sqlite.prepare(
    "UPDATE bench_floor_effects SET status = 'succeeded', result_json = ?, version = version + 1, updated_at_ms = ? WHERE id = ? AND status = 'executing'",
  );
  const terminal = sqlite.prepare(
    "UPDATE bench_floor_effects SET command_status = 'completed', updated_at_ms = ? WHERE id = ? AND command_status = 'queued'",
  );
  const txInsert = sqlite.transaction((id: string, now: number) => ins.run(id, newUlid(now), '{"n":1}', now, now));
  const txClaim = sqlite.transaction((id: string, now: number) => claim.run(now, id));
  const txComplete = sqlite.transaction((id: string, now: number) => complete.run('{"outputText":"ok"}', now, id));
  const txTerminal = sqlite.transaction((id: string, now: number) => terminal.run(now, id));
  const seed = sqlite.transaction((n: number) => {
    const now = Date.now();
    for (let i = 0; i < n; i++) ins.run(newUlid(now), newUlid(now), '{"n":1}', now, now);
  });
  return {
    run(): void {
      const now = Date.now();
      const id = newUlid(now);
      txInsert.immediate(id, now);
      txClaim.immediate(id, now);
      txComplete.immediate(id, now);
      txTerminal.immediate(id, now);
    },
    seed: (n: number) => seed(n),
  };
}

/**
 * One `mcp.execute` lifecycle through the real services: enqueue (intent + command), claim,
 * complete, terminal `completed` update. The command is delivered to the Driver between enqueue
 * and claim (the queue, not the ledger: it is excluded from the timed window, measured with
 * `performance.now()` and handed to tinybench as `overriddenDuration`).
 */
export async function ledgerLifecycle(runtime: Runtime): Promise<() => Promise<{ overriddenDuration: number }>> {
  const { driverToken } = await runtime.drivers.register({ name: "bench" }, { kind: "enrollment" });
  const { connectionId } = await runtime.drivers.connect(await runtime.drivers.authenticate(driverToken));
  const instance = await runtime.drivers.authenticate(driverToken);
  const { runId } = await runtime.runs.createRun({ driverInstanceId: instance.id });
  const result = { outputText: "ok", requestId: "r", serverId: BENCH_BOUND_SERVER, toolName: BENCH_TOOL };
  let n = 0;
  return async (): Promise<{ overriddenDuration: number }> => {
    const t0 = performance.now();
    const call = await runtime.runs.enqueueToolCall(runId, {
      serverId: BENCH_BOUND_SERVER,
      toolName: BENCH_TOOL,
      arguments: { n: n++ },
      requestId: "r",
    });
    const t1 = performance.now();
    await runtime.commands.nextCommand(instance, connectionId, 0);
    const t2 = performance.now();
    const claim = await runtime.ledger.claim(instance, connectionId, call.commandId);
    if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
    await runtime.ledger.complete(instance, call.effectId, { connectionId, attempt: claim.attempt, result, receipt: null });
    const update = await runtime.commands.updateCommand(instance, call.commandId, { connectionId, status: "completed", result });
    if (update.outcome !== "applied") throw new Error(`terminal update ${update.outcome}`);
    const t3 = performance.now();
    return { overriddenDuration: t1 - t0 + (t3 - t2) };
  };
}

function latency(task: Task | undefined) {
  const r = task?.result;
  if (!r || !("latency" in r)) throw new Error(`task ${task?.name} has no result (${r?.state})`);
  return r.latency;
}

const medianOf = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

function stats(tasks: Array<Task | undefined>): LatencyStats {
  const l = tasks.map(latency);
  return {
    medianUs: medianOf(l.map((x) => x.p50 * 1000)),
    roundMediansUs: l.map((x) => Math.round(x.p50 * 1000)),
    madUs: medianOf(l.map((x) => x.mad * 1000)),
    p99Us: Math.max(...l.map((x) => x.p99 * 1000)),
    samples: l.reduce((n, x) => n + x.samplesCount, 0),
  };
}

/** The three timed tasks of one ledger measurement: the floor's lifecycle and the ledger's with the flag off and on. */
export interface LedgerTasks {
  floor: () => unknown;
  off: () => Promise<{ overriddenDuration: number }>;
  on: () => Promise<{ overriddenDuration: number }>;
}

/**
 * The measuring loop both stores share: for each of `opts.sizes` (ascending) grows the tables to that
 * many existing effects (`grow(from, to)`: seeding, not timed), then runs `opts.rounds` tinybench
 * rounds of the three tasks one after another and summarises each task over the rounds.
 */
export async function measureLedgerPoints(
  label: string,
  opts: LedgerCostOptions,
  tasks: LedgerTasks,
  grow: (from: number, to: number) => Promise<void>,
): Promise<LedgerCostPoint[]> {
  const points: LedgerCostPoint[] = [];
  let seeded = 0;
  for (const size of opts.sizes) {
    if (size > seeded) {
      progress(`${label}: seeding to ${size} existing effects`);
      await grow(seeded, size);
      seeded = size;
    }
    progress(`${label}: measuring at ${size} existing effects (${opts.rounds} rounds × 3 tasks × ${opts.timeMs} ms)`);
    const benches: Bench[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      const bench = new Bench({ time: opts.timeMs, warmupTime: 200, warmupIterations: 20 });
      bench.add("floor", tasks.floor).add("ledger-off", tasks.off).add("ledger-on", tasks.on);
      await bench.run();
      benches.push(bench);
    }
    const of = (name: string) => stats(benches.map((b) => b.getTask(name)));
    points.push({ existingEffects: size, floor: of("floor"), ledgerOff: of("ledger-off"), ledgerOn: of("ledger-on") });
  }
  return points;
}

/**
 * Scenario 1: ledger cost per lifecycle against its floor, at each of `opts.sizes` existing
 * effects (sizes ascending; the table grows by seeding `succeeded` effects of other Drivers and
 * the same number of floor rows). Flag off and on are two runtimes on the same store.
 */
export async function runLedgerCost(opts: LedgerCostOptions): Promise<LedgerCostResult> {
  const store = openBenchStore();
  try {
    const floor = floorLifecycle(store);
    const off = await ledgerLifecycle(createBenchRuntime(store, { reconciliation: false, lookupLatencyMs: 10, concurrency: 64 }));
    const on = await ledgerLifecycle(createBenchRuntime(store, { reconciliation: true, lookupLatencyMs: 10, concurrency: 64 }));
    const points = await measureLedgerPoints("ledger", opts, { floor: () => floor.run(), off, on }, async (from, to) => {
      seedEffects(store.sqlite, { count: to - from, status: "succeeded", serverId: "seeded" });
      floor.seed(to - from);
      store.sqlite.pragma("wal_checkpoint(TRUNCATE)");
    });
    return { points, writes: await measureWritesOnFreshStore() };
  } finally {
    store.dispose();
  }
}
