/**
 * `npm run bench`: runs every scenario in its own child process (ledger cost per tool
 * call, recovery throughput, finalization repair latency; each with reconciliation on and off),
 * prints one table (markdown) and writes the raw results and the table to
 * `<repo>/var/bench/<timestamp>.json` and `<repo>/var/bench/latest.json`.
 * Every figure is a ratio against a floor or bound measured or derived in the same run.
 *
 * `MOSOO_BENCH_CPU_PROF=1` also runs each child under `node --cpu-prof` (profiles in
 * `var/bench/profiles/<timestamp>/`) and prints its top self-time functions.
 * `MOSOO_BENCH_QUICK=1` runs a smaller set (smoke test of the harness; figures not comparable).
 *
 * Options (after `npm run bench --`): `--only <scenarios>` (comma-separated: `ledger`, `recovery`
 * (10k on ×3 and off), `recovery-100k`, `repair`, `history` (a store filled with 1M effects against an empty one); default all), `--check` (compare this run's
 * figures with the committed baseline, `bench/baseline.json`: one line per figure, exit 1 when one
 * regressed by more than `--tolerance`, default 0.2 = 20%), `--write-baseline` (merge this run's
 * figures into that file), `--baseline <file>` (another baseline file), `--group-commit-max <n>`
 * (outcomes per transaction in the recovery and repair scenarios; 1 = each alone, as before group
 * commit: the "before" side of a comparison; not with `--check`/`--write-baseline`). See `baseline-check.ts`.
 *
 * `--store sqlite|postgres|all` (default `all`): which stores' rows. The PostgreSQL rows run `ledger` (against a floor of bare `pg` transactions) and `recovery` (10k
 * unknown effects with 1 and with 3 API instance processes, alternating, 2 rounds; the scaling ratio)
 * on the server at `--database-url` / `MOSOO_DATABASE_URL` (a role allowed to CREATE DATABASE), or
 * else on a throwaway durable server started here from `@mosoo/test-postgres` and stopped at the end.
 * `recovery-100k` and `repair` are SQLite rows only. `history` runs on both stores; `--history-effects <n>` sets its size.
 */
import type { BenchFigure } from "./baseline-check.js";
import { applyBaselineGate, refuseUngateableRun } from "./bench-check.gate.js";
import { BenchStoppedError, removeChildResults, stopOnSignals, stoppedSignal } from "./bench-child.runner.js";
import { parseOptions, type BenchOptions, type ScenarioName } from "./bench-options.parser.js";
import { reportRun } from "./bench-report.printer.js";
import { BenchPostgresUnavailableError } from "./pg-bench.harness.js";
import type { BenchRow as Row } from "./pg-bench.report.js";
import { runPgRows } from "./pg-bench.runner.js";
import { runSqliteRows } from "./sqlite-bench.rows.js";
import { redactDatabaseUrl } from "../src/config/configured-store.js";

/** Runs the selected scenarios (SQLite rows, then PostgreSQL rows), prints and writes the report, applies the gate; returns the exit code (0, 1 regression, 2 refused). */
async function main(opts: BenchOptions): Promise<number> {
  const started = performance.now();
  const tally: { rows: Row[]; figures: BenchFigure[] } = { rows: [], figures: [] };
  const sqlite = opts.store !== "postgres";
  const postgres = opts.store !== "sqlite";
  const runs = (name: ScenarioName) => sqlite && opts.only.includes(name);
  const runsPg = (name: ScenarioName) => postgres && opts.only.includes(name);
  const refused = refuseUngateableRun(opts);
  if (refused !== undefined) return refused;
  const sqliteResults = await runSqliteRows(runs, opts, tally);
  const pgResults = await runPgRows(postgres, runsPg, opts, tally);
  reportRun(opts, tally, { ...sqliteResults, ...pgResults }, (performance.now() - started) / 1000);
  return applyBaselineGate(opts, tally.figures);
}

const options = parseOptions(process.argv.slice(2));
stopOnSignals();
let exitCode = 1;
try {
  exitCode = await main(options);
} catch (err) {
  // One line, never a stack: a server the PostgreSQL rows cannot use is bad input (2), anything else a failed bench (1).
  if (err instanceof BenchPostgresUnavailableError) {
    process.stderr.write(`bench: ${err.message}\n`);
    exitCode = 2;
  } else if (err instanceof BenchStoppedError) {
    process.stderr.write(`bench: ${err.message}\n`);
    exitCode = err.exitCode;
  } else {
    process.stderr.write(
      `bench.failed: ${redactDatabaseUrl((err instanceof Error ? err.message : String(err)).split("\n")[0]!, options.databaseUrl ?? "")}\n`,
    );
    exitCode = 1;
  }
} finally {
  removeChildResults();
}
const stopped = stoppedSignal();
if (stopped !== undefined && exitCode === 0) {
  // the signal came after the last scenario: the report was written, but the run still says it was stopped
  process.stderr.write(`bench: stopped by ${stopped} after the last scenario; the report was written\n`);
  exitCode = new BenchStoppedError(stopped).exitCode;
}
process.exitCode = exitCode;
