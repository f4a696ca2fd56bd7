// Bench scenario 3: how long finalization repair takes to end each executing command of a lost Driver.
import { BENCH_BOUND_SERVER, BENCH_TOOL } from "./fixed-latency.adapter.js";
import { DEFAULT_GROUP_COMMIT } from "../src/modules/reconciliation/application/outcome-group-commit.service.js";
import { createBenchRuntime, installDbTimeMeter, openBenchStore, progress } from "./bench-store.harness.js";

/** Options: `commands` executing effects per Driver (half bound, half unbound), the bound adapter's `lookupLatencyMs` (ms), `concurrency`, the flag, and `rounds` (one new Driver each). */
export interface RepairOptions {
  commands: number;
  lookupLatencyMs: number;
  concurrency: number;
  reconciliation: boolean;
  rounds: number;
  /** Outcomes per transaction at most (default: the API's default); 1 = each outcome alone (before group commit). */
  groupCommitMax?: number;
}

/**
 * Result of the repair scenario, per command latency from the start of `finalize` until the
 * transaction that made its command terminal and wrote its `tool_call.*` run event has COMMITTED
 * (visible to readers and the event stream; timed by a commit observer that reads the run's last
 * event `seq` after each commit), in ms:
 * - `p50Ms`, `p95Ms`: the median over rounds of each round's p50 / p95 (as the ledger takes the
 *   median of its rounds' medians: one round disturbed by a neighbour does not decide the figure);
 *   `maxMs`: the highest of all; `p95MsPerRound`: each round's p95 (the spread);
 * - `pooledP95Ms`: the p95 of every command of every round together;
 * - `finalizeMsMedian`: median wall time of `finalize` (ms), which returns after the run's
 *   terminal `run.failed` event committed;
 * - `boundMs`: bound commands × lookup latency / concurrency (ms; 0 with the flag off);
 * - `reconciled`: effects resolved by a lookup over all rounds; `eventsOk`: every command had
 *   exactly one terminal tool-call event and every run exactly one `run.failed`;
 * - `statementsPerFinalize`, `commitsPerFinalize`: the median over rounds of the SQLite statements
 *   (every `run/get/all`, BEGIN and COMMIT included; the commit observer's own read not counted) and
 *   of the committed transactions one `finalize` ran (counts: the steady figures on a noisy machine).
 */
export interface RepairResult {
  commands: number;
  reconciliation: boolean;
  rounds: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  p95MsPerRound: number[];
  pooledP95Ms: number;
  finalizeMsMedian: number;
  boundMs: number;
  reconciled: number;
  eventsOk: boolean;
  statementsPerFinalize: number;
  commitsPerFinalize: number;
}

const round1 = (ms: number): number => Math.round(ms * 10) / 10;

/** Nearest-rank percentile `p` (0–100) of ascending `sorted`. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** A new Driver (registered, connected) with a run and `opts.commands` effects enqueued, delivered and claimed (even ones on the bound server, odd ones unbound). */
async function putInFlight(
  runtime: ReturnType<typeof createBenchRuntime>,
  opts: RepairOptions,
  round: number,
): Promise<{ instance: Awaited<ReturnType<typeof runtime.drivers.authenticate>>; runId: string }> {
  const { driverToken } = await runtime.drivers.register({ name: `repair-${round}` }, { kind: "enrollment" });
  const { connectionId } = await runtime.drivers.connect(await runtime.drivers.authenticate(driverToken));
  const instance = await runtime.drivers.authenticate(driverToken);
  const { runId } = await runtime.runs.createRun({ driverInstanceId: instance.id });
  progress(`repair: round ${round}/${opts.rounds}, putting ${opts.commands} effects in flight`);
  for (let i = 0; i < opts.commands; i++) {
    const serverId = i % 2 === 0 ? BENCH_BOUND_SERVER : "unbound";
    const call = await runtime.runs.enqueueToolCall(runId, { serverId, toolName: BENCH_TOOL, arguments: { i } });
    await runtime.commands.nextCommand(instance, connectionId, 0);
    const claim = await runtime.ledger.claim(instance, connectionId, call.commandId);
    if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
  }
  return { instance, runId };
}

/** What the rounds collected: every latency (ms), each round's p50 and p95, each `finalize` wall time (ms) and statement and commit counts, lookups resolved, events check. */
interface RepairRounds {
  all: number[];
  p50MsPerRound: number[];
  p95MsPerRound: number[];
  finalizeMs: number[];
  statements: number[];
  commits: number[];
  reconciled: number;
  eventsOk: boolean;
}

/** The result from the rounds' figures (see {@link RepairResult}); sorts `all` and `finalizeMs` in place. */
function summarizeRepair(opts: RepairOptions, rounds: RepairRounds): RepairResult {
  const { all, p50MsPerRound, p95MsPerRound, finalizeMs, statements, commits, reconciled, eventsOk } = rounds;
  all.sort((a, b) => a - b);
  finalizeMs.sort((a, b) => a - b);
  const bound = Math.ceil(opts.commands / 2);
  return {
    commands: opts.commands,
    reconciliation: opts.reconciliation,
    rounds: opts.rounds,
    p50Ms: round1(
      percentile(
        [...p50MsPerRound].sort((a, b) => a - b),
        50,
      ),
    ),
    p95Ms: round1(
      percentile(
        [...p95MsPerRound].sort((a, b) => a - b),
        50,
      ),
    ),
    pooledP95Ms: round1(percentile(all, 95)),
    maxMs: round1(all.at(-1) ?? Number.NaN),
    p95MsPerRound: p95MsPerRound.map(round1),
    finalizeMsMedian: percentile(finalizeMs, 50),
    boundMs: opts.reconciliation ? (bound * opts.lookupLatencyMs) / opts.concurrency : 0,
    reconciled,
    eventsOk,
    statementsPerFinalize: percentile(
      [...statements].sort((a, b) => a - b),
      50,
    ),
    commitsPerFinalize: percentile(
      [...commits].sort((a, b) => a - b),
      50,
    ),
  };
}

/**
 * Scenario 3: per round, a new Driver with `commands` executing effects (enqueued, delivered and
 * claimed through the real services; even ones on the bound server, odd ones on an unbound one)
 * is finalized through the real finalization repair; then the store is read for each command's
 * terminal time and run event.
 */
export async function runRepair(opts: RepairOptions): Promise<RepairResult> {
  const store = openBenchStore();
  try {
    // After every commit: the run's highest event seq (one indexed read), so each event's commit time is known.
    let observedRunId = "";
    const commits: Array<{ atMs: number; maxSeq: number }> = [];
    const maxSeq = store.sqlite.prepare("SELECT max(seq) FROM run_events WHERE run_id = ?").pluck();
    const meter = installDbTimeMeter(store.sqlite);
    // The store's durable-write seam: `afterCommit` runs once COMMIT returned (inside the store's mutex).
    store.observeDurableWrites({
      beforeCommit: () => undefined,
      afterCommit: () => {
        if (observedRunId) commits.push({ atMs: performance.now(), maxSeq: (maxSeq.get(observedRunId) as number | null) ?? 0 });
      },
    });
    const runtime = createBenchRuntime(store, {
      reconciliation: opts.reconciliation,
      lookupLatencyMs: opts.lookupLatencyMs,
      concurrency: opts.concurrency,
      ...(opts.groupCommitMax === undefined ? {} : { groupCommit: { ...DEFAULT_GROUP_COMMIT, maxBatch: opts.groupCommitMax } }),
    });
    const terminalOf = store.sqlite.prepare(
      `SELECT c.id AS commandId, c.terminal_at_ms AS terminalAtMs,
              (SELECT count(*) FROM run_events e WHERE e.run_id = c.run_id AND e.type IN ('tool_call.completed', 'tool_call.failed') AND json_extract(e.payload_json, '$.commandId') = c.id) AS events,
              (SELECT max(e.seq) FROM run_events e WHERE e.run_id = c.run_id AND e.type IN ('tool_call.completed', 'tool_call.failed') AND json_extract(e.payload_json, '$.commandId') = c.id) AS eventSeq
       FROM driver_commands c WHERE c.driver_instance_id = ?`,
    );
    const runFailed = store.sqlite.prepare("SELECT count(*) FROM run_events WHERE run_id = ? AND type = 'run.failed'").pluck();
    const reconciledCount = store.sqlite
      .prepare("SELECT count(*) FROM external_tool_effects WHERE driver_instance_id = ? AND resolution = 'reconciled'")
      .pluck();
    const all: number[] = [];
    const p95MsPerRound: number[] = [];
    const p50MsPerRound: number[] = [];
    const finalizeMs: number[] = [];
    const statements: number[] = [];
    const commitCounts: number[] = [];
    let reconciled = 0;
    let eventsOk = true;
    for (let round = 1; round <= opts.rounds; round++) {
      const { instance, runId } = await putInFlight(runtime, opts, round);
      commits.length = 0;
      observedRunId = runId;
      meter.reset();
      const p0 = performance.now();
      await runtime.repair.finalize(instance.id, "operator");
      finalizeMs.push(performance.now() - p0);
      observedRunId = "";
      const counted = meter.counts();
      // the observer's own read after each commit is not the repair's
      statements.push(counted.statements - commits.length);
      commitCounts.push(counted.commits);
      const rows = terminalOf.all(instance.id) as Array<{
        commandId: string;
        terminalAtMs: number | null;
        events: number;
        eventSeq: number | null;
      }>;
      const latencies = rows.map((r) => {
        if (r.terminalAtMs === null || r.events !== 1 || r.eventSeq === null) eventsOk = false;
        const commit = commits.find((c) => c.maxSeq >= (r.eventSeq ?? Number.POSITIVE_INFINITY));
        if (!commit) eventsOk = false;
        return (commit?.atMs ?? Number.POSITIVE_INFINITY) - p0;
      });
      if (runFailed.get(runId) !== 1) eventsOk = false;
      reconciled += reconciledCount.get(instance.id) as number;
      latencies.sort((a, b) => a - b);
      p95MsPerRound.push(percentile(latencies, 95));
      p50MsPerRound.push(percentile(latencies, 50));
      all.push(...latencies);
    }
    return summarizeRepair(opts, {
      all,
      p50MsPerRound,
      p95MsPerRound,
      finalizeMs,
      statements,
      commits: commitCounts,
      reconciled,
      eventsOk,
    });
  } finally {
    store.dispose();
  }
}
