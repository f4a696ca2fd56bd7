/**
 * Scenario 4 (SQLite): the costs that follow a store's history. The same measurements on a store with no
 * history and on one filled by {@link fillHistory} (finished effects with their runs, events, commands and
 * lookups, finalized Driver instances, one long-lived Driver with a long command history): store open,
 * a lifecycle on the long-lived Driver (enqueue, delivery, claim, outcome, terminal update), an empty
 * delivery check (what a long-poll runs on each wake-up), the console overview's reads and an idle sweep pass.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bench, type Task } from "tinybench";
import { openSqliteStore, type SqliteStore } from "../src/platform/db/sqlite/sqlite-store.js";
import { operatorQueryRepository } from "../src/modules/operator/infrastructure/operator-query.repository.js";
import type { Runtime } from "../src/composition-root.js";
import { LOOKUP_OUTCOME_WINDOW_MS } from "@mosoo/contracts";
import { createBenchRuntime, progress } from "./bench-store.harness.js";
import { BENCH_BOUND_SERVER, BENCH_TOOL } from "./fixed-latency.adapter.js";
import { fillHistory, type HistoryCounts } from "./history-store.generator.js";

/** Options: `effects` of the filled store, `longLivedCommands` past commands of its long-lived Driver, `finalizedDrivers`, `timeMs` per task and round, `rounds`. */
export interface HistoryOptions {
  effects: number;
  longLivedCommands: number;
  finalizedDrivers: number;
  timeMs: number;
  rounds: number;
}

/** The measured operations (µs medians, store open in ms). */
export const HISTORY_TASKS = ["lifecycle", "delivery", "overview", "sweep"] as const;
/** One of {@link HISTORY_TASKS}. */
export type HistoryTask = (typeof HISTORY_TASKS)[number];

/** One store's figures: store open (ms, median of 5), each task's median latency (µs, median of the rounds' medians). */
interface HistorySide {
  openMs: number;
  tasksUs: Record<HistoryTask, number>;
}

/** The scenario's result: the empty and the filled store, the filled one's row counts, file size (bytes) and how long filling took (ms). */
export interface HistoryResult {
  longLivedCommands: number;
  empty: HistorySide;
  filled: HistorySide;
  counts: HistoryCounts;
  fileBytes: number;
  fillMs: number;
}

const medianOf = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

function p50Us(task: Task | undefined): number {
  const r = task?.result;
  if (!r || !("latency" in r)) throw new Error(`task ${task?.name} has no result`);
  return r.latency.p50 * 1000;
}

/** Builds one store (filled or not), measures it, deletes it. */
async function measureSide(
  opts: HistoryOptions,
  filled: boolean,
): Promise<{ side: HistorySide; counts: HistoryCounts; fileBytes: number; fillMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-bench-history-"));
  const file = join(dir, "history.db");
  try {
    let store: SqliteStore = openSqliteStore(file);
    const { driverToken } = await createBenchRuntime(store, {
      reconciliation: true,
      lookupLatencyMs: 10,
      concurrency: 64,
    }).drivers.register({ name: "long-lived" }, { kind: "enrollment" });
    const longLivedId = store.sqlite.prepare("SELECT id FROM driver_instances WHERE name = 'long-lived'").pluck().get() as string;
    const t0 = performance.now();
    const counts = filled
      ? fillHistory(store.sqlite, {
          effects: opts.effects,
          finalizedDrivers: opts.finalizedDrivers,
          longLived: { driverInstanceId: longLivedId, commands: opts.longLivedCommands },
        })
      : { driverInstances: 0, runs: 0, commands: 0, effects: 0, runEvents: 0, reconciliations: 0 };
    const fillMs = performance.now() - t0;
    store.sqlite.pragma("wal_checkpoint(TRUNCATE)");
    store.closeNow();
    const fileBytes = statSync(file).size;
    if (filled)
      progress(`history: filled ${JSON.stringify(counts)} in ${(fillMs / 1000).toFixed(1)} s, ${(fileBytes / 1e6).toFixed(0)} MB`);
    const opens: number[] = [];
    for (let i = 0; i < 5; i++) {
      const s = performance.now();
      openSqliteStore(file).closeNow();
      opens.push(performance.now() - s);
    }
    store = openSqliteStore(file);
    try {
      const runtime = createBenchRuntime(store, { reconciliation: true, lookupLatencyMs: 10, concurrency: 64 });
      const tasksUs = await measureTasks(store, runtime, driverToken, opts);
      return { side: { openMs: medianOf(opens), tasksUs }, counts, fileBytes, fillMs };
    } finally {
      store.closeNow();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measureTasks(
  store: SqliteStore,
  runtime: Runtime,
  driverToken: string,
  opts: HistoryOptions,
): Promise<Record<HistoryTask, number>> {
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
  const fns: Record<HistoryTask, () => Promise<unknown>> = { lifecycle, delivery, overview, sweep };
  const perRound: Record<HistoryTask, number[]> = { lifecycle: [], delivery: [], overview: [], sweep: [] };
  for (let round = 0; round < opts.rounds; round++) {
    const bench = new Bench({ time: opts.timeMs, warmupTime: 100, warmupIterations: 10 });
    for (const name of HISTORY_TASKS) bench.add(name, fns[name]);
    await bench.run();
    for (const name of HISTORY_TASKS) perRound[name].push(p50Us(bench.getTask(name)));
  }
  return {
    lifecycle: medianOf(perRound.lifecycle),
    delivery: medianOf(perRound.delivery),
    overview: medianOf(perRound.overview),
    sweep: medianOf(perRound.sweep),
  };
}

/** Runs the scenario: the empty store, then the filled one (each built, measured and deleted in turn). */
export async function runHistory(opts: HistoryOptions): Promise<HistoryResult> {
  progress("history: measuring the store without history");
  const empty = await measureSide(opts, false);
  progress(`history: filling ${opts.effects} effects`);
  const filled = await measureSide(opts, true);
  return {
    longLivedCommands: opts.longLivedCommands,
    empty: empty.side,
    filled: filled.side,
    counts: filled.counts,
    fileBytes: filled.fileBytes,
    fillMs: filled.fillMs,
  };
}
