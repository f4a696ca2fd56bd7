/** The bench table's rows and gated figures of the history scenario (`history-store.scenario.ts`): filled store against empty. */
import { fmtK, type BenchRow, type RowsAndFigures } from "./pg-bench.report.js";
import { HISTORY_TASKS, type HistoryOptions, type HistoryResult, type HistoryTask } from "./history-store.measure.js";

/**
 * The history scenario's options as `npm run bench` runs it: `effects` stored effects (`--history-effects`,
 * default 1,000,000; QUICK 100,000), a long-lived Driver with 100k past commands (QUICK 20k), 10k finalized
 * Drivers (QUICK 1k), 3 rounds of 700 ms per task (QUICK 300 ms) and 2,000 unknown effects recovered per
 * side and round (QUICK 500). The long-lived Driver's commands are capped at the effects.
 */
export function historyScenarioOptions(quick: boolean, effects?: number): HistoryOptions {
  const total = effects ?? (quick ? 100_000 : 1_000_000);
  return {
    effects: total,
    longLivedCommands: Math.min(total, quick ? 20_000 : 100_000),
    finalizedDrivers: Math.min(total, quick ? 1_000 : 10_000),
    timeMs: quick ? 300 : 700,
    rounds: 3,
    recoveryEffects: quick ? 500 : 2_000,
  };
}

/** Targets: each measured operation on the filled store within 1.2× of the empty store; store open under 1 s. */
export const HISTORY_TARGETS = { ratio: 1.2, openMs: 1000 } as const;

/** What each operation of the history rows is, for the table. */
export const HISTORY_LABELS: Record<HistoryTask | "recovery", string> = {
  lifecycle: "lifecycle on the long-lived Driver (enqueue, delivery, claim, outcome, terminal update)",
  delivery: "delivery check, nothing open (each long-poll wake-up)",
  overview: "console overview reads (unknown by reason, lookup outcomes of 24 h, change marker)",
  sweep: "idle maintenance sweep pass",
  recovery: "recovery per outcome (unknown effects seeded, sweep passes until none is due)",
};

/**
 * A ratio as the regression gate compares it: at least 1. A filled store is never really faster than an
 * empty one, so a ratio below 1 is the noise of a shared machine, and a baseline below 1 would make the
 * gate fail on that noise; from 1, the gate's +20% is the 1.2× target.
 */
export const gated = (ratio: number): number => Math.max(1, ratio);

/** The filled store's description for the `other` column. */
export const historyShapeText = (r: HistoryResult): string =>
  `${fmtK(r.counts.effects)} effects, ${fmtK(r.counts.driverInstances)} finalized Drivers, long-lived Driver with ${fmtK(r.longLivedCommands)} past commands`;

/** The operations with a figure on both sides, each with its filled and empty value (µs). */
export function historyOperations(r: HistoryResult): Array<{ op: HistoryTask | "recovery"; filled: number; empty: number }> {
  const ops: Array<{ op: HistoryTask | "recovery"; filled: number; empty: number }> = HISTORY_TASKS.map((task) => ({
    op: task,
    filled: r.filled.tasksUs[task],
    empty: r.empty.tasksUs[task],
  }));
  if (r.filled.recoveryUsPerOutcome !== null && r.empty.recoveryUsPerOutcome !== null)
    ops.push({ op: "recovery", filled: r.filled.recoveryUsPerOutcome, empty: r.empty.recoveryUsPerOutcome });
  return ops;
}

/**
 * The plan-check row of a history run (`history-plans.ts`): the measured operations' distinct statements
 * planned on the filled store, met when none reads a history table whole; its figure `<prefix>.plans@<size>.fullScans`
 * (a count, gated on both stores: its baseline is 0).
 */
export function planCheckRow(r: HistoryResult, prefix: "history" | "pg.history", scenario: string): RowsAndFigures {
  const size = fmtK(r.counts.effects);
  const c = r.planCheck;
  const offenders = c.fullScans.map((f) => `${f.operations.join("+")}: ${f.tables.join(", ")} (${f.sql.slice(0, 80)}…)`).join("; ");
  return {
    rows: [
      {
        scenario: `${scenario} @ ${size}`,
        flag: "on",
        measured: `${c.fullScans.length} of ${c.statements} statements read a history table whole`,
        floorOrBound: "0",
        ratio: "n/a",
        other: offenders === "" ? "every statement reaches the history tables through an index" : offenders,
        target: "0",
        met: c.fullScans.length === 0 ? "yes" : "no",
      },
    ],
    figures: [
      {
        key: `${prefix}.plans@${size}.fullScans`,
        label: `${prefix === "history" ? "history" : "PostgreSQL history"} @ ${size} effects, hot-path statements that read a history table whole`,
        value: c.fullScans.length,
        unit: "x",
      },
    ],
  };
}

/** The rows (one per operation, plus store open) and the figures the regression gate compares (the ratios, {@link gated}). */
export function historyRows(r: HistoryResult): RowsAndFigures {
  const size = fmtK(r.counts.effects);
  const history = historyShapeText(r);
  const rows: BenchRow[] = [];
  const figures: RowsAndFigures["figures"] = [];
  for (const { op, filled, empty } of historyOperations(r)) {
    const ratio = filled / empty;
    figures.push({
      key: `history.${op}@${size}.ratio`,
      label: `history ${op} @ ${size} effects, ratio to the empty store`,
      value: gated(ratio),
      unit: "x",
    });
    const cpu =
      op === "recovery" && r.filled.recoveryCpuUsPerOutcome !== null && r.empty.recoveryCpuUsPerOutcome !== null
        ? `API CPU ${r.filled.recoveryCpuUsPerOutcome.toFixed(0)} vs ${r.empty.recoveryCpuUsPerOutcome.toFixed(0)} µs/outcome, ${fmtK(r.recoveryEffects)} effects per round; `
        : "";
    rows.push({
      scenario: `4 history, ${HISTORY_LABELS[op]} @ ${size}`,
      flag: "on",
      measured: `${filled.toFixed(0)} µs`,
      floorOrBound: `empty store ${empty.toFixed(0)} µs`,
      ratio: `${ratio.toFixed(2)}×`,
      other: `${cpu}${history}`,
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
  const plans = planCheckRow(r, "history", "4 history, hot-path statements planned on the filled store (EXPLAIN QUERY PLAN)");
  return { rows: [...rows, ...plans.rows], figures: [...figures, ...plans.figures] };
}
