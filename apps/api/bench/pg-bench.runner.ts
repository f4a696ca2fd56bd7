// The bench's PostgreSQL rows: opens the server (given or throwaway), runs the ledger, recovery and history scenarios on it, stops it.
import { child } from "./bench-child.runner.js";
import { QUICK, type BenchOptions, type ScenarioName } from "./bench-options.parser.js";
import { historyScenarioOptions } from "./history-store.report.js";
import { openBenchPostgres, type BenchPostgres } from "./pg-bench.harness.js";
import { fmtK, pgLedgerRows, pgRecoveryRows, type RowsAndFigures } from "./pg-bench.report.js";
import { pgHistoryRows } from "./pg-history.report.js";
import type { PgHistoryResult } from "./pg-history.scenario.js";
import type { PgLedgerCostResult } from "./pg-ledger-cost.scenario.js";
import type { PgRecoveryResult } from "./pg-recovery.scenario.js";
import { recoveryBase } from "./sqlite-recovery.rows.js";

/** The PostgreSQL scenarios' raw results and which server ran them (`pgServer` undefined: no PostgreSQL row ran). */
export interface PgResults {
  pgLedger: PgLedgerCostResult | undefined;
  pgRecovery: PgRecoveryResult[];
  pgServer: { source: BenchPostgres["source"]; startMs: number | undefined } | undefined;
  pgHistory: PgHistoryResult | undefined;
}

/** Appends one part's rows and figures to the run's. */
function append(tally: RowsAndFigures, part: RowsAndFigures): void {
  tally.rows.push(...part.rows);
  tally.figures.push(...part.figures);
}

/** Runs the selected PostgreSQL scenarios on an open server (ledger, recovery with 1 and 3 instances alternating, history). */
async function runOnServer(
  server: BenchPostgres,
  runsPg: (name: ScenarioName) => boolean,
  opts: BenchOptions,
  tally: RowsAndFigures,
  out: PgResults,
): Promise<void> {
  if (runsPg("ledger")) {
    out.pgLedger = await child<PgLedgerCostResult>("postgres ledger cost per lifecycle", "pg-ledger", {
      adminUrl: server.adminUrl,
      sizes: QUICK ? [0, 10_000] : [0, 10_000, 100_000],
      timeMs: QUICK ? 300 : 700,
      rounds: 3,
    });
    append(tally, pgLedgerRows(out.pgLedger));
  }
  if (runsPg("recovery")) {
    const pgRounds = QUICK ? 1 : 2;
    for (let round = 1; round <= pgRounds; round++)
      for (const instances of [1, 3])
        out.pgRecovery.push(
          await child<PgRecoveryResult>(
            `postgres recovery ${fmtK(opts.pgEffects)}, ${instances} API instance(s) (${round}/${pgRounds})`,
            "pg-recovery",
            { ...recoveryBase(opts), adminUrl: server.adminUrl, effects: opts.pgEffects, instances },
          ),
        );
    append(tally, pgRecoveryRows(out.pgRecovery));
  }
  if (runsPg("history")) {
    out.pgHistory = await child<PgHistoryResult>("postgres history: filled database against empty", "pg-history", {
      ...historyScenarioOptions(QUICK, opts.historyEffects),
      adminUrl: server.adminUrl,
      serverCpu: server.source === "started",
    });
    append(tally, pgHistoryRows(out.pgHistory));
  }
}

/** 5. PostgreSQL rows: the ledger against a bare `pg` floor, recovery with 1 and 3 API instances, history; appended to `tally`. */
export async function runPgRows(
  postgres: boolean,
  runsPg: (name: ScenarioName) => boolean,
  opts: BenchOptions,
  tally: RowsAndFigures,
): Promise<PgResults> {
  const out: PgResults = { pgLedger: undefined, pgRecovery: [], pgServer: undefined, pgHistory: undefined };
  if (runsPg("ledger") || runsPg("recovery") || runsPg("history")) {
    console.error(
      opts.databaseUrl
        ? "▶ postgres: the server at --database-url / MOSOO_DATABASE_URL"
        : "▶ postgres: starting a throwaway durable server",
    );
    const server = await openBenchPostgres(opts.databaseUrl);
    out.pgServer = { source: server.source, startMs: server.startMs };
    if (server.startMs !== undefined) console.error(`  started in ${(server.startMs / 1000).toFixed(1)} s`);
    try {
      await runOnServer(server, runsPg, opts, tally, out);
    } finally {
      await server.stop();
    }
  } else if (postgres && opts.store === "postgres") {
    console.error(`bench.note: no PostgreSQL row among --only ${opts.only.join(",")} (PostgreSQL rows: ledger, recovery, history)`);
  }
  return out;
}
