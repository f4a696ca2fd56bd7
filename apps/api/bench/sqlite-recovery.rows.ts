// The bench's SQLite recovery rows: 10k unknown effects (flag on ×3, and off) and 100k (on), against the lookup bound.
import { child } from "./bench-child.runner.js";
import { QUICK, type BenchOptions } from "./bench-options.parser.js";
import { fmtK, type RowsAndFigures } from "./pg-bench.report.js";
import type { RecoveryResult } from "./recovery-throughput.scenario.js";
import { TARGETS } from "./sqlite-bench.targets.js";

const fmtMb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** The recovery scenarios' options shared by SQLite and PostgreSQL: 10 ms lookups, concurrency 64, `--group-commit-max` when given. */
export function recoveryBase(opts: BenchOptions): { lookupLatencyMs: number; concurrency: number; groupCommitMax?: number } {
  return {
    lookupLatencyMs: 10,
    concurrency: 64,
    ...(opts.groupCommitMax === undefined ? {} : { groupCommitMax: opts.groupCommitMax }),
  };
}

/** The recovery results of one run (empty or undefined: not run). */
interface RecoveryResults {
  recoveryOn: RecoveryResult[];
  recoveryOff: RecoveryResult | undefined;
  recoveryLargeOn: RecoveryResult | undefined;
}

/** The 10k row (flag on): the median wall time of `reps` runs against the lookup bound. */
function smallRow(recoveryOn: RecoveryResult[], small: number, reps: number, tally: RowsAndFigures): void {
  const walls = recoveryOn.map((r) => r.wallMs);
  const smallRatio = median(walls) / recoveryOn[0]!.boundMs;
  tally.figures.push({
    key: `recovery.on@${fmtK(small)}.ratio`,
    label: `recovery ${fmtK(small)} on, ratio to the lookup bound`,
    value: smallRatio,
    unit: "x",
  });
  tally.rows.push({
    scenario: `2 recovery, ${fmtK(small)} unknown, 10 ms lookups, c=64`,
    flag: "on",
    measured: `${median(walls).toFixed(0)} ms (${Math.min(...walls).toFixed(0)}–${Math.max(...walls).toFixed(0)}, n=${reps})`,
    floorOrBound: `bound ${recoveryOn[0]!.boundMs.toFixed(0)} ms`,
    ratio: `${smallRatio.toFixed(2)}×`,
    other: `API CPU ${median(recoveryOn.map((r) => r.cpuMsPerOutcome)).toFixed(3)} ms/outcome, DB ${median(recoveryOn.map((r) => r.dbUsPerOutcome)).toFixed(0)} µs/outcome (${recoveryOn[0]!.commitsPerOutcome.toFixed(2)} commits, ${recoveryOn[0]!.statementsPerOutcome.toFixed(1)} statements; bare commit ${median(recoveryOn.map((r) => r.bareCommitUs.before)).toFixed(0)} µs), peak RSS ${fmtMb(median(recoveryOn.map((r) => r.peakRssBytes)))}, sandboxed adapter processes ${recoveryOn[0]!.adapterProcesses} × ${fmtMb(median(recoveryOn.map((r) => r.adapterRssMedianBytes)))} RSS each, their CPU ${median(recoveryOn.map((r) => r.adapterCpuMsPerOutcome)).toFixed(3)} ms/outcome, resolved ${recoveryOn.map((r) => r.resolved).join("/")}`,
    target: `≤ ${TARGETS.recoveryRatio}×`,
    met: smallRatio <= TARGETS.recoveryRatio && recoveryOn.every((r) => r.resolved === r.effects) ? "yes" : "no",
  });
}

/** The 100k row (flag on, one run): wall time against the lookup bound, and peak RSS. */
function largeRow(r: RecoveryResult, large: number, tally: RowsAndFigures): void {
  const largeRatio = r.wallMs / r.boundMs;
  tally.figures.push({
    key: `recovery.on@${fmtK(large)}.ratio`,
    label: `recovery ${fmtK(large)} on, ratio to the lookup bound`,
    value: largeRatio,
    unit: "x",
  });
  tally.figures.push({
    key: `recovery.on@${fmtK(large)}.peakRssMb`,
    label: `recovery ${fmtK(large)} on, peak RSS`,
    value: r.peakRssBytes / 1024 / 1024,
    unit: "MB",
  });
  tally.rows.push({
    scenario: `2 recovery, ${fmtK(large)} unknown, 10 ms lookups, c=64`,
    flag: "on",
    measured: `${r.wallMs.toFixed(0)} ms (n=1)`,
    floorOrBound: `bound ${r.boundMs.toFixed(0)} ms`,
    ratio: `${largeRatio.toFixed(2)}×`,
    other: `peak RSS ${fmtMb(r.peakRssBytes)} (at start ${fmtMb(r.rssBeforeBytes)}), API CPU ${r.cpuMsPerOutcome.toFixed(3)} ms/outcome, adapter processes' CPU ${r.adapterCpuMsPerOutcome.toFixed(3)} ms/outcome, DB ${r.dbUsPerOutcome.toFixed(0)} µs/outcome, resolved ${r.resolved}`,
    target: `≤ ${TARGETS.recoveryRatio}× and RSS < ${fmtMb(TARGETS.recoveryRssBytes)}`,
    met: largeRatio <= TARGETS.recoveryRatio && r.peakRssBytes < TARGETS.recoveryRssBytes && r.resolved === r.effects ? "yes" : "no",
  });
}

/** The flag-off row: no lookup may run, so nothing is resolved. */
function offRow(r: RecoveryResult, tally: RowsAndFigures): void {
  tally.rows.push({
    scenario: `2 recovery, ${fmtK(r.effects)} unknown (flag off: no lookup)`,
    flag: "off",
    measured: `${r.wallMs.toFixed(1)} ms`,
    floorOrBound: "bound 0 ms",
    ratio: "n/a",
    other: `peak RSS ${fmtMb(r.peakRssBytes)}, resolved ${r.resolved} (must be 0)`,
    target: "no work",
    met: r.resolved === 0 ? "yes" : "no",
  });
}

/** 2. Recovery throughput: 10k (repeated; `recovery`) and 100k (`recovery-100k`) unknown effects, 10 ms lookups, concurrency 64. */
export async function runRecoveryRows(
  runSmall: boolean,
  runLarge: boolean,
  base: ReturnType<typeof recoveryBase>,
  tally: RowsAndFigures,
): Promise<RecoveryResults> {
  const small = QUICK ? 2_000 : 10_000;
  const large = QUICK ? 20_000 : 100_000;
  const reps = QUICK ? 1 : 3;
  const recoveryOn: RecoveryResult[] = [];
  let recoveryOff: RecoveryResult | undefined;
  let recoveryLargeOn: RecoveryResult | undefined;
  if (runSmall) {
    for (let i = 1; i <= reps; i++)
      recoveryOn.push(
        await child<RecoveryResult>(`recovery ${fmtK(small)} on (${i}/${reps})`, "recovery", {
          ...base,
          effects: small,
          reconciliation: true,
        }),
      );
    recoveryOff = await child<RecoveryResult>(`recovery ${fmtK(small)} off`, "recovery", {
      ...base,
      effects: small,
      reconciliation: false,
    });
  }
  if (runLarge)
    recoveryLargeOn = await child<RecoveryResult>(`recovery ${fmtK(large)} on`, "recovery", {
      ...base,
      effects: large,
      reconciliation: true,
    });
  if (recoveryOn.length > 0) smallRow(recoveryOn, small, reps, tally);
  if (recoveryLargeOn) largeRow(recoveryLargeOn, large, tally);
  if (recoveryOff) offRow(recoveryOff, tally);
  return { recoveryOn, recoveryOff, recoveryLargeOn };
}
