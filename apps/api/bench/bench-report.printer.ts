// The bench's report: prints the markdown table, the machine line and the CPU profiles, and writes `var/bench/<timestamp>.json` and `latest.json`.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import type { BenchFigure } from "./baseline-check.js";
import { profiles, REPO_ROOT, STAMP } from "./bench-child.runner.js";
import { QUICK, type BenchOptions } from "./bench-options.parser.js";
import { loadAverage } from "./pg-bench.harness.js";
import { PG_TARGETS, type BenchRow as Row } from "./pg-bench.report.js";
import type { PgResults } from "./pg-bench.runner.js";
import type { SqliteResults } from "./sqlite-bench.rows.js";
import { TARGETS } from "./sqlite-bench.targets.js";

/** The table's rows as markdown: a header, the separator, one line per row. */
function markdownTable(rows: readonly Row[]): string {
  const header: Row = {
    scenario: "scenario",
    flag: "on" as const,
    measured: "measured",
    floorOrBound: "floor / bound",
    ratio: "ratio",
    other: "other",
    target: "target",
    met: "n/a",
  };
  const line = (r: Row, flag: string, met: string) =>
    `| ${r.scenario} | ${flag} | ${r.measured} | ${r.floorOrBound} | ${r.ratio} | ${r.other} | ${r.target} | ${met} |`;
  return [line(header, "reconciliation", "met"), "|---|---|---|---|---|---|---|---|", ...rows.map((r) => line(r, r.flag, r.met))].join(
    "\n",
  );
}

/** Prints the table, the wall time (seconds) and machine line and each child's top self-time functions; returns the table. */
function printReport(rows: readonly Row[], wallSeconds: number): string {
  const table = markdownTable(rows);
  console.log(`\n${table}\n`);
  console.log(
    `bench wall time ${wallSeconds.toFixed(0)} s on ${cpus().length} × ${cpus()[0]?.model ?? "?"}, Node ${process.version}, load average at the end ${loadAverage()?.join(" ") ?? "n/a"}${QUICK ? " (QUICK: not comparable)" : ""}`,
  );
  for (const p of profiles) {
    console.log(`\ncpu profile, ${p.label}: top self time`);
    for (const e of p.top)
      console.log(`  ${e.selfMs.toFixed(0).padStart(7)} ms ${e.percent.toFixed(1).padStart(5)}%  ${e.functionName}  ${e.location}`);
  }
  return table;
}

/** Prints the report and writes the run (table, rows, figures, raw results, profiles) to `var/bench/<STAMP>.json` and `var/bench/latest.json`. */
export function reportRun(
  opts: BenchOptions,
  tally: { rows: Row[]; figures: BenchFigure[] },
  results: SqliteResults & PgResults,
  wallSeconds: number,
): void {
  const { rows, figures } = tally;
  const table = printReport(rows, wallSeconds);
  const outDir = join(REPO_ROOT, "var", "bench");
  mkdirSync(outDir, { recursive: true });
  const { ledger, recoveryOn, recoveryOff, recoveryLargeOn, repair, history, pgLedger, pgRecovery, pgServer, pgHistory } = results;
  const json = JSON.stringify(
    {
      startedAt: STAMP,
      wallSeconds,
      quick: QUICK,
      node: process.version,
      cpus: cpus().length,
      ...(cpus()[0]?.model ? { cpuModel: cpus()[0]!.model } : {}),
      ...(loadAverage() ? { loadAverage: loadAverage() } : {}),
      targets: { ...TARGETS, postgres: PG_TARGETS },
      store: opts.store,
      postgresServer: pgServer ?? null,
      table,
      rows,
      figures,
      results: { ledger, recoveryOn, recoveryOff, recoveryLargeOn, repair, history, pgLedger, pgRecovery, pgHistory },
      profiles,
    },
    null,
    2,
  );
  writeFileSync(join(outDir, `${STAMP}.json`), json);
  writeFileSync(join(outDir, "latest.json"), json);
  console.log(`results: var/bench/${STAMP}.json (and var/bench/latest.json)`);
}
