/** The bench table's rows and gated figures of the history scenario (`history-store.scenario.ts`): filled store against empty. */
import { fmtK, type BenchRow, type RowsAndFigures } from "./pg-bench.report.js";
import { HISTORY_TASKS, type HistoryResult, type HistoryTask } from "./history-store.scenario.js";

/** Targets: each measured operation on the filled store within 1.2× of the empty store; store open under 1 s. */
const HISTORY_TARGETS = { ratio: 1.2, openMs: 1000 } as const;

const LABELS: Record<HistoryTask, string> = {
  lifecycle: "lifecycle on the long-lived Driver (enqueue, delivery, claim, outcome, terminal update)",
  delivery: "delivery check, nothing open (each long-poll wake-up)",
  overview: "console overview reads (unknown by reason, lookup outcomes of 24 h, change marker)",
  sweep: "idle maintenance sweep pass",
};

/**
 * A ratio as the regression gate compares it: at least 1. A filled store is never really faster than an
 * empty one, so a ratio below 1 is the noise of a shared machine, and a baseline below 1 would make the
 * gate fail on that noise; from 1, the gate's +20% is the 1.2× target.
 */
const gated = (ratio: number): number => Math.max(1, ratio);

/** The rows (one per operation, plus store open) and the figures the regression gate compares (the ratios, {@link gated}). */
export function historyRows(r: HistoryResult): RowsAndFigures {
  const size = fmtK(r.counts.effects);
  const history = `${size} effects, ${fmtK(r.counts.driverInstances)} finalized Drivers, long-lived Driver with ${fmtK(r.longLivedCommands)} past commands`;
  const rows: BenchRow[] = [];
  const figures: RowsAndFigures["figures"] = [];
  for (const task of HISTORY_TASKS) {
    const ratio = r.filled.tasksUs[task] / r.empty.tasksUs[task];
    figures.push({
      key: `history.${task}@${size}.ratio`,
      label: `history ${task} @ ${size} effects, ratio to the empty store`,
      value: gated(ratio),
      unit: "x",
    });
    rows.push({
      scenario: `4 history, ${LABELS[task]} @ ${size}`,
      flag: "on",
      measured: `${r.filled.tasksUs[task].toFixed(0)} µs`,
      floorOrBound: `empty store ${r.empty.tasksUs[task].toFixed(0)} µs`,
      ratio: `${ratio.toFixed(2)}×`,
      other: history,
      target: `≤ ${HISTORY_TARGETS.ratio}×`,
      met: ratio <= HISTORY_TARGETS.ratio ? "yes" : "no",
    });
  }
  const openRatio = r.filled.openMs / r.empty.openMs;
  figures.push({
    key: `history.open@${size}.ratio`,
    label: `history store open @ ${size} effects, ratio to the empty store`,
    value: gated(openRatio),
    unit: "x",
  });
  rows.push({
    scenario: `4 history, store open @ ${size}`,
    flag: "on",
    measured: `${r.filled.openMs.toFixed(1)} ms`,
    floorOrBound: `empty store ${r.empty.openMs.toFixed(1)} ms`,
    ratio: `${openRatio.toFixed(2)}×`,
    other: `file ${(r.fileBytes / 1e6).toFixed(0)} MB, filled in ${(r.fillMs / 1000).toFixed(0)} s (${r.counts.runs} runs, ${r.counts.runEvents} events, ${r.counts.reconciliations} lookups)`,
    target: `< ${HISTORY_TARGETS.openMs} ms and ≤ ${HISTORY_TARGETS.ratio}×`,
    met: r.filled.openMs < HISTORY_TARGETS.openMs && openRatio <= HISTORY_TARGETS.ratio ? "yes" : "no",
  });
  return { rows, figures };
}
