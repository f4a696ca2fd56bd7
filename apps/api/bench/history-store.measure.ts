/**
 * The history scenario's measurements, for either store: two prepared stores (one without history, one filled)
 * measured side by side in the same rounds (store open, lifecycle, delivery check, overview, idle sweep pass,
 * recovery per outcome), so load on a shared machine moves both sides alike.
 */
import { Bench, type Task } from "tinybench";
import { LOOKUP_OUTCOME_WINDOW_MS } from "@mosoo/contracts";
import { operatorQueryRepository } from "../src/modules/operator/infrastructure/operator-query.repository.js";
import type { Runtime } from "../src/composition-root.js";
import type { Store } from "../src/platform/db/store.port.js";
import { createBenchRuntime, progress } from "./bench-store.harness.js";
import { BENCH_BOUND_SERVER, BENCH_TOOL } from "./fixed-latency.adapter.js";
import type { HistoryCounts } from "./history-store.rows.js";
import type { PlanCheck } from "./history-plans.js";

/**
 * Options: `effects` of the filled store, `longLivedCommands` past commands of its long-lived Driver,
 * `finalizedDrivers`, `timeMs` per task and round, `rounds`, `recoveryEffects` unknown effects recovered per
 * side and round (0: no recovery row).
 */
export interface HistoryOptions {
  effects: number;
  longLivedCommands: number;
  finalizedDrivers: number;
  timeMs: number;
  rounds: number;
  recoveryEffects: number;
}

/** The operations measured by tinybench (µs medians). */
export const HISTORY_TASKS = ["lifecycle", "delivery", "overview", "sweep"] as const;
/** One of {@link HISTORY_TASKS}. */
export type HistoryTask = (typeof HISTORY_TASKS)[number];
/** The task functions of one side. */
type HistoryTaskFns = Record<HistoryTask, () => Promise<unknown>>;

/**
 * One side's tasks and `heartbeat()`: the long-lived Driver's heartbeat, as a real Driver sends it every few
 * seconds; called before each phase, or the idle sweep would expire the Driver a minute in (the runtime's TTL).
 */
export interface HistorySideFns {
  fns: HistoryTaskFns;
  heartbeat(): Promise<void>;
}

/**
 * One store's figures: store open (ms, median of the opens), each task's median latency (µs, median of the
 * rounds' p50), recovery wall time per outcome (µs, median of the rounds; null when not run) and the API's CPU
 * time per recovered outcome (µs, median; null when not run).
 */
export interface HistorySide {
  openMs: number;
  tasksUs: Record<HistoryTask, number>;
  recoveryUsPerOutcome: number | null;
  recoveryCpuUsPerOutcome: number | null;
}

/** The scenario's result: the empty and the filled store, the filled one's row counts, its size on disk (bytes) and how long filling took (ms). */
export interface HistoryResult {
  longLivedCommands: number;
  recoveryEffects: number;
  empty: HistorySide;
  filled: HistorySide;
  counts: HistoryCounts;
  fileBytes: number;
  fillMs: number;
  /** The measured operations' statements planned on the filled store (`history-plans.ts`). */
  planCheck: PlanCheck;
}

/**
 * A store ready to be measured: `open()` opens it as the API does at start (the timed store open) and
 * `close` closes what it returned; `driverToken` is the long-lived Driver's; `seedUnknown(n)` writes n
 * `unknown` effects bound to the bench's adapter (raw rows, not measured) on the open store.
 */
export interface PreparedHistoryStore<S extends Store> {
  open(): Promise<S>;
  close(store: S): Promise<void>;
  driverToken: string;
  seedUnknown(store: S, n: number): Promise<void>;
}

const medianOf = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

function p50Us(task: Task | undefined): number {
  const r = task?.result;
  if (!r || !("latency" in r)) throw new Error(`task ${task?.name} has no result`);
  return r.latency.p50 * 1000;
}

/**
 * A progress callback for a generator: prints the effects written, their rate and the estimated time left,
 * at most every 5 s and at the end.
 */
export function fillProgress(total: number, t0: number): (effects: number) => void {
  let last = t0;
  let printed = 0;
  return (effects) => {
    const now = performance.now();
    if ((now - last < 5_000 && effects < total) || effects === printed) return;
    last = now;
    printed = effects;
    const rate = effects / ((now - t0) / 1000);
    progress(
      `history: ${effects} of ${total} effects written, ${rate.toFixed(0)} effects/s, about ${((total - effects) / rate).toFixed(0)} s left`,
    );
  };
}

/**
 * The task functions on `store` through `runtime`: a lifecycle on the Driver of `driverToken` (it connects
 * here; enqueue, delivery, claim, outcome, terminal update), an empty delivery check (what a long-poll runs
 * on each wake-up), the console overview's reads, an idle sweep pass.
 */
async function historyTaskFns(store: Store, runtime: Runtime, driverToken: string): Promise<HistorySideFns> {
  const { connectionId } = await runtime.drivers.connect(await runtime.drivers.authenticate(driverToken));
  const instance = await runtime.drivers.authenticate(driverToken);
  const { runId } = await runtime.runs.createRun({ driverInstanceId: instance.id });
  const result = { outputText: "ok", requestId: "r", serverId: BENCH_BOUND_SERVER, toolName: BENCH_TOOL };
  let n = 0;
  const lifecycle = async () => {
    const call = await runtime.runs.enqueueToolCall(runId, {
      serverId: BENCH_BOUND_SERVER,
      toolName: BENCH_TOOL,
      arguments: { n: n++ },
      requestId: "r",
    });
    const delivered = await runtime.commands.nextCommand(instance, connectionId, 0);
    if (delivered === null) throw new Error("history: the enqueued command was not delivered");
    const claim = await runtime.ledger.claim(instance, connectionId, call.commandId);
    if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
    await runtime.ledger.complete(instance, call.effectId, { connectionId, attempt: claim.attempt, result, receipt: null });
    const update = await runtime.commands.updateCommand(instance, call.commandId, { connectionId, status: "completed", result });
    if (update.outcome !== "applied") throw new Error(`terminal update ${update.outcome}`);
  };
  const delivery = async () => {
    if ((await runtime.commands.nextCommand(instance, connectionId, 0)) !== null) throw new Error("history: an open command was left");
  };
  const overview = () =>
    store.read(async (tx) => {
      await operatorQueryRepository.countUnknownByAttention(tx);
      await operatorQueryRepository.countLookupOutcomes(tx, Date.now() - LOOKUP_OUTCOME_WINDOW_MS);
      await operatorQueryRepository.changeMarker(tx);
    });
  const sweep = () => runtime.sweep.sweepOnce();
  return {
    fns: { lifecycle, delivery, overview, sweep },
    heartbeat: async () => {
      await runtime.drivers.heartbeat(instance, connectionId);
    },
  };
}

/** Hooks of {@link measureHistory} (the PostgreSQL side counts round trips and CPU with them). */
export interface MeasureHooks<S extends Store> {
  /**
   * Called once with both sides' open stores, task functions and `recover(n)` (seeds n unknown effects and
   * runs sweep passes until none is due; returns the effects looked up), before the rounds.
   */
  beforeRounds?(sides: Record<"empty" | "filled", HistorySideFns & { store: S; recover(n: number): Promise<number> }>): Promise<void>;
}

/**
 * Measures `empty` and `filled` side by side: store open (7 opens each, alternating), then both stores open
 * with a runtime each, tinybench rounds whose tasks alternate between the sides (`<side>:<task>`), then
 * `opts.recoveryEffects` unknown effects seeded and recovered by sweep passes on each side in turn, every round.
 */
export async function measureHistory<S extends Store>(
  empty: PreparedHistoryStore<S>,
  filled: PreparedHistoryStore<S>,
  opts: Pick<HistoryOptions, "rounds" | "timeMs" | "recoveryEffects">,
  hooks: MeasureHooks<S> = {},
): Promise<{ empty: HistorySide; filled: HistorySide }> {
  const sides = { empty, filled } as const;
  const names = ["empty", "filled"] as const;
  const opens: Record<"empty" | "filled", number[]> = { empty: [], filled: [] };
  for (let i = 0; i < 7; i++)
    for (const name of names) {
      const t0 = performance.now();
      const s = await sides[name].open();
      opens[name].push(performance.now() - t0);
      await sides[name].close(s);
    }
  const stores = { empty: await empty.open(), filled: await filled.open() };
  try {
    const runtimes = {
      empty: createBenchRuntime(stores.empty, { reconciliation: true, lookupLatencyMs: 10, concurrency: 64 }),
      filled: createBenchRuntime(stores.filled, { reconciliation: true, lookupLatencyMs: 10, concurrency: 64 }),
    };
    const both = {
      empty: await historyTaskFns(stores.empty, runtimes.empty, empty.driverToken),
      filled: await historyTaskFns(stores.filled, runtimes.filled, filled.driverToken),
    };
    const fns = { empty: both.empty.fns, filled: both.filled.fns };
    const heartbeat = async () => {
      for (const name of names) await both[name].heartbeat();
    };
    // seeds n unknown effects (not timed), then sweep passes until none is due: effects looked up, wall and API CPU time (µs)
    const recover = async (name: "empty" | "filled", n: number): Promise<{ resolved: number; wallUs: number; cpuUs: number }> => {
      await sides[name].seedUnknown(stores[name], n);
      await both[name].heartbeat();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      let resolved = 0;
      for (;;) {
        const report = await runtimes[name].sweep.sweepOnce();
        if (report.effectsLookedUp === 0) break;
        resolved += report.effectsLookedUp;
      }
      const cpu = process.cpuUsage(cpu0);
      return { resolved, wallUs: (performance.now() - t0) * 1000, cpuUs: cpu.user + cpu.system };
    };
    await hooks.beforeRounds?.({
      empty: { store: stores.empty, ...both.empty, recover: async (n) => (await recover("empty", n)).resolved },
      filled: { store: stores.filled, ...both.filled, recover: async (n) => (await recover("filled", n)).resolved },
    });
    const perRound = { empty: emptyRounds(), filled: emptyRounds() };
    for (let round = 0; round < opts.rounds; round++) {
      progress(`history: round ${round + 1} of ${opts.rounds}`);
      await heartbeat();
      const bench = new Bench({ time: opts.timeMs, warmupTime: 100, warmupIterations: 10, throws: true });
      for (const task of HISTORY_TASKS) for (const name of names) bench.add(`${name}:${task}`, fns[name][task]);
      await bench.run();
      for (const task of HISTORY_TASKS) for (const name of names) perRound[name][task].push(p50Us(bench.getTask(`${name}:${task}`)));
    }
    const recovery = { empty: { wall: [] as number[], cpu: [] as number[] }, filled: { wall: [] as number[], cpu: [] as number[] } };
    for (let round = 0; opts.recoveryEffects > 0 && round < opts.rounds; round++)
      for (const name of names) {
        const { resolved, wallUs, cpuUs } = await recover(name, opts.recoveryEffects);
        if (resolved < opts.recoveryEffects)
          throw new Error(`history: recovery on the ${name} store looked up ${resolved} of ${opts.recoveryEffects} effects`);
        recovery[name].wall.push(wallUs / resolved);
        recovery[name].cpu.push(cpuUs / resolved);
        progress(`history: recovery round ${round + 1}, ${name} store: ${(wallUs / resolved).toFixed(0)} µs per outcome`);
      }
    const side = (name: "empty" | "filled"): HistorySide => ({
      openMs: medianOf(opens[name]),
      tasksUs: Object.fromEntries(HISTORY_TASKS.map((t) => [t, medianOf(perRound[name][t])])) as Record<HistoryTask, number>,
      recoveryUsPerOutcome: recovery[name].wall.length > 0 ? medianOf(recovery[name].wall) : null,
      recoveryCpuUsPerOutcome: recovery[name].cpu.length > 0 ? medianOf(recovery[name].cpu) : null,
    });
    return { empty: side("empty"), filled: side("filled") };
  } finally {
    await empty.close(stores.empty);
    await filled.close(stores.filled);
  }
}

function emptyRounds(): Record<HistoryTask, number[]> {
  return { lifecycle: [], delivery: [], overview: [], sweep: [] };
}
