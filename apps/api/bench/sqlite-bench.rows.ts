// The bench's SQLite rows: runs the ledger, recovery, repair and history scenarios (each in a child) and turns their results into table rows and figures.
import { child } from "./bench-child.runner.js";
import { QUICK, type BenchOptions } from "./bench-options.parser.js";
import type { RepairResult } from "./finalization-repair.scenario.js";
import { historyRows, historyScenarioOptions } from "./history-store.report.js";
import type { HistoryResult } from "./history-store.scenario.js";
import type { LatencyStats, LedgerCostResult } from "./ledger-cost.scenario.js";
import { lifecycleSum, type LifecycleWrites, type PerStep } from "./lifecycle-writes.measure.js";
import { fmtK, type RowsAndFigures as BenchTally } from "./pg-bench.report.js";
import type { RecoveryResult } from "./recovery-throughput.scenario.js";
import { TARGETS } from "./sqlite-bench.targets.js";
import { recoveryBase, runRecoveryRows } from "./sqlite-recovery.rows.js";

const fmtUs = (s: LatencyStats) => `${s.medianUs.toFixed(0)} µs (rounds ${s.roundMediansUs.join("/")})`;

/** The SQLite scenarios' raw results (undefined or empty: not run), written to the results file. */
export interface SqliteResults {
  ledger: LedgerCostResult | undefined;
  recoveryOn: RecoveryResult[];
  recoveryOff: RecoveryResult | undefined;
  recoveryLargeOn: RecoveryResult | undefined;
  repair: RepairResult[];
  history: HistoryResult | undefined;
}

/** 1. Ledger cost per lifecycle against four bare transactions, at 0 / 10k / 100k existing effects. */
async function runLedgerRows(run: boolean, tally: BenchTally): Promise<LedgerCostResult | undefined> {
  const ledger = run
    ? await child<LedgerCostResult>("ledger cost per lifecycle", "ledger", {
        sizes: QUICK ? [0, 10_000] : [0, 10_000, 100_000],
        timeMs: QUICK ? 300 : 700,
        rounds: 3,
      })
    : undefined;
  for (const flag of ["on", "off"] as const) {
    for (const p of ledger?.points ?? []) {
      const s = flag === "on" ? p.ledgerOn : p.ledgerOff;
      const ratio = s.medianUs / p.floor.medianUs;
      tally.figures.push({
        key: `ledger.${flag}@${fmtK(p.existingEffects)}.ratio`,
        label: `ledger ${flag} @ ${fmtK(p.existingEffects)} effects, ratio to its floor`,
        value: ratio,
        unit: "x",
      });
      tally.rows.push({
        scenario: `1 ledger, µs/lifecycle @ ${fmtK(p.existingEffects)} effects`,
        flag,
        measured: fmtUs(s),
        floorOrBound: `floor ${fmtUs(p.floor)}`,
        ratio: `${ratio.toFixed(2)}×`,
        other: `MAD ${s.madUs.toFixed(0)} µs, p99 ${s.p99Us.toFixed(0)} µs, n=${s.samples}`,
        target: `≤ ${TARGETS.ledgerRatio}×`,
        met: ratio <= TARGETS.ledgerRatio ? "yes" : "no",
      });
    }
  }
  if (ledger?.writes) ledgerWritesRows(ledger.writes, tally);
  return ledger;
}

const fmtSteps = (t: PerStep) =>
  `enqueue ${t.enqueue.toFixed(2)}, claim ${t.claim.toFixed(2)}, complete ${t.complete.toFixed(2)}, terminal ${t.terminal.toFixed(2)}`;

/**
 * 1. The ledger's writes per lifecycle (delivery excluded): statements besides BEGIN and COMMIT, and WAL pages
 * (one per B-tree page a commit dirtied), each against its target, with gated figures of unit `count`.
 */
function ledgerWritesRows(w: LifecycleWrites, tally: BenchTally): void {
  const statements = lifecycleSum(w.dataStatements);
  const pages = lifecycleSum(w.pages);
  tally.figures.push(
    { key: "ledger.statements", label: "ledger, statements per lifecycle (BEGIN/COMMIT excluded)", value: statements, unit: "count" },
    { key: "ledger.walPages", label: "ledger, WAL pages per lifecycle", value: pages, unit: "count" },
  );
  tally.rows.push(
    {
      scenario: "1 ledger, statements per lifecycle (delivery excluded)",
      flag: "off",
      measured: statements.toFixed(2),
      floorOrBound: "4 commits",
      ratio: `${(statements / 4).toFixed(2)} per commit`,
      other: `${fmtSteps(w.dataStatements)}; with BEGIN/COMMIT ${lifecycleSum(w.statements).toFixed(2)}`,
      target: `≤ ${TARGETS.ledgerStatements}`,
      met: statements <= TARGETS.ledgerStatements ? "yes" : "no",
    },
    {
      scenario: "1 ledger, WAL pages per lifecycle (delivery excluded)",
      flag: "off",
      measured: pages.toFixed(2),
      floorOrBound: "4 commits",
      ratio: `${(pages / 4).toFixed(2)} per commit`,
      other: fmtSteps(w.pages),
      target: `≤ ${TARGETS.ledgerWalPages}`,
      met: pages <= TARGETS.ledgerWalPages ? "yes" : "no",
    },
  );
}

/** 3. Finalization repair: 1,000 executing effects, half bound (5 ms lookups), half unbound; flag on, then off. */
async function runRepairRows(run: boolean, opts: BenchOptions, tally: BenchTally): Promise<RepairResult[]> {
  const repairOpts = {
    commands: 1_000,
    lookupLatencyMs: 5,
    concurrency: 64,
    rounds: QUICK ? 1 : 5,
    ...(opts.groupCommitMax === undefined ? {} : { groupCommitMax: opts.groupCommitMax }),
  };
  const repair: RepairResult[] = [];
  for (const flag of run ? (["on", "off"] as const) : []) {
    const r = await child<RepairResult>(`finalization repair ${flag}`, "repair", { ...repairOpts, reconciliation: flag === "on" });
    repair.push(r);
    const over = r.p95Ms - r.boundMs;
    tally.figures.push({
      key: `repair.${flag}.p95OverBoundMs`,
      label: `repair ${flag}, p95 minus the lookup bound`,
      value: over,
      unit: "ms",
    });
    tally.rows.push({
      scenario: `3 repair, 1k executing (500 bound, 5 ms lookups), c=64`,
      flag,
      measured: `p50 ${r.p50Ms} / p95 ${r.p95Ms} / max ${r.maxMs} ms (median of ${r.rounds} rounds)`,
      floorOrBound: `bound ${r.boundMs.toFixed(0)} ms`,
      ratio: `p95 − bound ${over.toFixed(0)} ms`,
      other: `p95 per round ${r.p95MsPerRound.join("/")} ms (all rounds pooled: ${r.pooledP95Ms}), finalize ${r.finalizeMsMedian.toFixed(0)} ms, ${r.statementsPerFinalize} statements and ${r.commitsPerFinalize} commits per finalize, reconciled ${r.reconciled}, events ${r.eventsOk ? "ok" : "MISSING"}`,
      target: `p95 ≤ bound + ${TARGETS.repairP95OverBoundMs} ms`,
      met: over <= TARGETS.repairP95OverBoundMs && r.eventsOk ? "yes" : "no",
    });
  }
  return repair;
}

/** 4. History: a store filled with 1M finished effects (finalized Drivers, a long-lived Driver's commands) against an empty one. */
async function runHistoryRows(run: boolean, opts: BenchOptions, tally: BenchTally): Promise<HistoryResult | undefined> {
  if (!run) return undefined;
  const history = await child<HistoryResult>(
    "history: filled store against empty",
    "history",
    historyScenarioOptions(QUICK, opts.historyEffects),
  );
  const part = historyRows(history);
  tally.rows.push(...part.rows);
  tally.figures.push(...part.figures);
  return history;
}

/** Runs the selected SQLite scenarios in table order (ledger, recovery, repair, history), appending their rows and figures to `tally`. */
export async function runSqliteRows(
  runs: (name: BenchOptions["only"][number]) => boolean,
  opts: BenchOptions,
  tally: BenchTally,
): Promise<SqliteResults> {
  const ledger = await runLedgerRows(runs("ledger"), tally);
  const recovery = await runRecoveryRows(runs("recovery"), runs("recovery-100k"), recoveryBase(opts), tally);
  const repair = await runRepairRows(runs("repair"), opts, tally);
  const history = await runHistoryRows(runs("history"), opts, tally);
  return { ledger, ...recovery, repair, history };
}
