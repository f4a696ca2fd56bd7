// The bench's regression gate: the baseline checks before a run (`--check`, `--group-commit-max`) and after it (`--check`, `--write-baseline`).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import {
  BenchBaselineSchema,
  compareWithBaseline,
  describeComparison,
  mergeBaseline,
  type BenchBaseline,
  type BenchFigure,
} from "./baseline-check.js";
import { QUICK, type BenchOptions } from "./bench-options.parser.js";
import { isBaselineFigure } from "./pg-bench.report.js";

/** Reads the baseline file, or undefined when it does not exist; a malformed one prints `bench.baseline_invalid: …` and exits 2. */
function readBaseline(file: string): BenchBaseline | undefined {
  if (!existsSync(file)) return undefined;
  const parsed = BenchBaselineSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (!parsed.success) {
    process.stderr.write(`bench.baseline_invalid: ${file}: ${parsed.error.issues[0]?.message ?? "invalid"}\n`);
    process.exit(2);
  }
  return parsed.data;
}

/**
 * Refuses a run whose figures could not be gated, before any scenario runs: returns 2 after one line
 * (`bench.invalid` for `--group-commit-max` with `--check`/`--write-baseline`, `bench.baseline_missing`,
 * `bench.baseline_mismatch` for a QUICK baseline against a full run or the reverse), else undefined.
 */
export function refuseUngateableRun(opts: BenchOptions): number | undefined {
  if (opts.groupCommitMax !== undefined && (opts.check || opts.writeBaseline)) {
    process.stderr.write(
      "bench.invalid: --group-commit-max is for side-by-side comparisons; its figures are never checked against or written to the baseline\n",
    );
    return 2;
  }
  if (opts.check) {
    const baseline = readBaseline(opts.baseline);
    if (!baseline) {
      process.stderr.write(`bench.baseline_missing: ${opts.baseline} does not exist; write one with npm run bench -- --write-baseline\n`);
      return 2;
    }
    if (baseline.quick !== QUICK) {
      process.stderr.write(
        `bench.baseline_mismatch: the baseline is ${baseline.quick ? "a QUICK" : "a full"} run and this one is ${QUICK ? "QUICK" : "full"}; their figures are not comparable\n`,
      );
      return 2;
    }
  }
  return undefined;
}

/** After the run: `--check` prints one line per figure and returns 1 when one regressed beyond the tolerance (else 0); `--write-baseline` merges the gated figures into the file. */
export function applyBaselineGate(opts: BenchOptions, figures: readonly BenchFigure[]): number {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "?"}, Node ${process.version}`;
  let exitCode = 0;
  if (opts.check) {
    const baseline = readBaseline(opts.baseline)!;
    const compared = compareWithBaseline(figures, baseline.figures, opts.tolerance);
    console.log(`\nregression check against ${opts.baseline} (measured ${baseline.measuredAt} on ${baseline.machine}):`);
    for (const c of compared) console.log(describeComparison(c, opts.tolerance));
    const regressed = compared.filter((c) => c.regressed).length;
    console.log(
      regressed === 0
        ? `bench.check: ${compared.length} figures within +${(opts.tolerance * 100).toFixed(0)}% of the baseline`
        : `bench.check: ${regressed} of ${compared.length} figures regressed`,
    );
    if (regressed > 0) exitCode = 1;
  }
  if (opts.writeBaseline) {
    const kept = figures.filter((f) => isBaselineFigure(f.key));
    const merged = mergeBaseline(readBaseline(opts.baseline), kept, { measuredAt: new Date().toISOString(), machine, quick: QUICK });
    writeFileSync(opts.baseline, `${JSON.stringify(merged, null, 2)}\n`);
    console.log(
      `baseline: ${kept.length} figures written to ${opts.baseline}${kept.length < figures.length ? ` (${figures.length - kept.length} PostgreSQL figures not: too noisy to gate)` : ""}`,
    );
  }
  return exitCode;
}
