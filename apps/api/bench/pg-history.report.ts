/**
 * The bench table's rows and gated figures of the PostgreSQL history scenario (`pg-history.scenario.ts`): the
 * filled database against the empty one, with round trips and CPU time per operation beside the wall times.
 */
import { fmtK, type BenchRow, type RowsAndFigures } from "./pg-bench.report.js";
import type { PgHistoryResult, OperationCpu } from "./pg-history.scenario.js";
import { gated, HISTORY_LABELS, HISTORY_TARGETS, historyOperations, historyShapeText, planCheckRow } from "./history-store.report.js";

/** CPU per operation (µs) as one number: the API's plus the server backends' when measured. */
const cpuTotal = (c: OperationCpu): number => c.apiUs + (c.serverUs ?? 0);

/** `API 120 + server 80 µs` (or `API 120 µs` when the server's CPU was not measurable). */
const fmtCpu = (c: OperationCpu): string =>
  c.serverUs === null ? `API ${c.apiUs.toFixed(0)} µs` : `API ${c.apiUs.toFixed(0)} + server ${c.serverUs.toFixed(0)} µs`;

/**
 * The PostgreSQL history rows: per operation the filled database's median against the empty one's (met at
 * ≤ 1.2× wall time, as on SQLite), with round trips and CPU per operation on both sides, and store open
 * (connect and migration check, as the API starts). Figures: `pg.history.<op>@<size>.ratio` (wall, printed,
 * never gated: too noisy on a shared machine), `pg.history.<op>@<size>.roundTrips` (the filled side's count)
 * and `pg.history.<op>@<size>.cpuRatio` (CPU time per operation filled / empty, API plus server backends when
 * the server is local, at least 1: see `gated`); the last two are gated.
 */
export function pgHistoryRows(r: PgHistoryResult): RowsAndFigures {
  const size = fmtK(r.counts.effects);
  const rows: BenchRow[] = [];
  const figures: RowsAndFigures["figures"] = [];
  for (const { op, filled, empty } of historyOperations(r)) {
    const ratio = filled / empty;
    figures.push({
      key: `pg.history.${op}@${size}.ratio`,
      label: `PostgreSQL history ${op} @ ${size} effects, ratio to the empty database (wall)`,
      value: gated(ratio),
      unit: "x",
    });
    let other: string;
    if (op === "recovery") {
      const f = r.filled.recoveryCpuUsPerOutcome!;
      const e = r.empty.recoveryCpuUsPerOutcome!;
      figures.push({
        key: `pg.history.recovery@${size}.cpuRatio`,
        label: `PostgreSQL history recovery @ ${size} effects, API CPU per outcome, ratio to the empty database`,
        value: gated(f / e),
        unit: "x",
      });
      other = `API CPU ${f.toFixed(0)} vs ${e.toFixed(0)} µs/outcome (${(f / e).toFixed(2)}×), ${fmtK(r.recoveryEffects)} effects per round`;
    } else {
      const f = r.extras.filled;
      const e = r.extras.empty;
      const cpuRatio = cpuTotal(f.cpu[op]) / cpuTotal(e.cpu[op]);
      figures.push({
        key: `pg.history.${op}@${size}.roundTrips`,
        label: `PostgreSQL history ${op} @ ${size} effects, round trips`,
        value: f.roundTrips[op],
        unit: "x",
      });
      figures.push({
        key: `pg.history.${op}@${size}.cpuRatio`,
        label: `PostgreSQL history ${op} @ ${size} effects, CPU per operation, ratio to the empty database`,
        value: gated(cpuRatio),
        unit: "x",
      });
      other = `round trips ${f.roundTrips[op]} (empty ${e.roundTrips[op]}), CPU ${fmtCpu(f.cpu[op])} vs ${fmtCpu(e.cpu[op])} (${cpuRatio.toFixed(2)}×)`;
    }
    rows.push({
      scenario: `4 PostgreSQL history, ${HISTORY_LABELS[op]} @ ${size}`,
      flag: "on",
      measured: `${filled.toFixed(0)} µs`,
      floorOrBound: `empty database ${empty.toFixed(0)} µs`,
      ratio: `${ratio.toFixed(2)}×`,
      other: `${other}; ${historyShapeText(r)}`,
      target: `≤ ${HISTORY_TARGETS.ratio}×`,
      met: ratio <= HISTORY_TARGETS.ratio ? "yes" : "no",
    });
  }
  const openRatio = r.filled.openMs / r.empty.openMs;
  figures.push({
    key: `pg.history.open@${size}.ratio`,
    label: `PostgreSQL history store open @ ${size} effects, ratio to the empty database (wall)`,
    value: gated(openRatio),
    unit: "x",
  });
  rows.push({
    scenario: `4 PostgreSQL history, store open (connect, migration check) @ ${size}`,
    flag: "on",
    measured: `${r.filled.openMs.toFixed(1)} ms`,
    floorOrBound: `empty database ${r.empty.openMs.toFixed(1)} ms`,
    ratio: `${openRatio.toFixed(2)}×`,
    other: `database ${(r.fileBytes / 1e6).toFixed(0)} MB, filled in ${(r.fillMs / 1000).toFixed(0)} s (${r.counts.runs} runs, ${r.counts.runEvents} events, ${r.counts.reconciliations} lookups), load ${r.loadAverage?.toFixed(2) ?? "n/a"}`,
    target: `< ${HISTORY_TARGETS.openMs} ms and ≤ ${HISTORY_TARGETS.ratio}×`,
    met: r.filled.openMs < HISTORY_TARGETS.openMs && openRatio <= HISTORY_TARGETS.ratio ? "yes" : "no",
  });
  const plans = planCheckRow(
    r,
    "pg.history",
    "4 PostgreSQL history, hot-path statements planned on the filled database (EXPLAIN, its statistics)",
  );
  return { rows: [...rows, ...plans.rows], figures: [...figures, ...plans.figures] };
}
