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
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command, InvalidArgumentError, Option } from "commander";
import { entryFile } from "../src/platform/compiled-entry.js";
import { summarizeCpuProfile, type SelfTimeEntry } from "./cpu-profile.summary.js";
import {
  BenchBaselineSchema,
  compareWithBaseline,
  DEFAULT_TOLERANCE,
  describeComparison,
  mergeBaseline,
  type BenchBaseline,
  type BenchFigure,
} from "./baseline-check.js";
import type { LedgerCostResult, LatencyStats } from "./ledger-cost.scenario.js";
import type { RecoveryResult } from "./recovery-throughput.scenario.js";
import type { RepairResult } from "./finalization-repair.scenario.js";
import type { PgLedgerCostResult } from "./pg-ledger-cost.scenario.js";
import type { HistoryResult } from "./history-store.scenario.js";
import { historyRows, historyScenarioOptions } from "./history-store.report.js";
import type { PgHistoryResult } from "./pg-history.scenario.js";
import { pgHistoryRows } from "./pg-history.report.js";
import type { PgRecoveryResult } from "./pg-recovery.scenario.js";
import { BenchPostgresUnavailableError, loadAverage, openBenchPostgres, type BenchPostgres } from "./pg-bench.harness.js";
import { databaseUrlProblem, redactDatabaseUrl } from "../src/config/configured-store.js";
import {
  BENCH_STORES,
  fmtK,
  isBaselineFigure,
  parseStoreChoice,
  pgLedgerRows,
  pgRecoveryRows,
  PG_TARGETS,
  type BenchRow as Row,
  type BenchStoreChoice,
} from "./pg-bench.report.js";

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** The committed baseline of the regression gate (`--check`, `--write-baseline`). */
const DEFAULT_BASELINE = fileURLToPath(new URL("./baseline.json", import.meta.url));
/** The scenario groups `--only` selects from. */
const SCENARIOS = ["ledger", "recovery", "recovery-100k", "repair", "history"] as const;
type ScenarioName = (typeof SCENARIOS)[number];

/** Parsed command line: the scenarios to run, whether to check against / write the baseline, its file, the tolerance (fraction). */
interface BenchOptions {
  only: ScenarioName[];
  check: boolean;
  writeBaseline: boolean;
  baseline: string;
  tolerance: number;
  groupCommitMax: number | undefined;
  /** Unknown effects of the PostgreSQL recovery rows (`--pg-effects`, default 10 000). */
  pgEffects: number;
  /** Stored effects of the history rows (`--history-effects`; undefined: the scenario's default). */
  historyEffects: number | undefined;
  /** Which stores' rows (`--store`). */
  store: BenchStoreChoice;
  /** The PostgreSQL server of the PostgreSQL rows (`--database-url`, else `MOSOO_DATABASE_URL`); undefined: a throwaway one is started. */
  databaseUrl: string | undefined;
}

/** Parses the command line (commander); a bad option prints one line and exits 2. */
function parseOptions(argv: string[]): BenchOptions {
  const program = new Command("bench")
    .description("Mosoo ledger benchmarks (README: Performance)")
    .addOption(
      new Option("--only <scenarios>", `comma-separated subset of ${SCENARIOS.join(", ")}`).argParser((v) => {
        const names = v
          .split(",")
          .map((n) => n.trim())
          .filter((n) => n !== "");
        const bad = names.filter((n) => !(SCENARIOS as readonly string[]).includes(n));
        if (names.length === 0 || bad.length > 0)
          throw new InvalidArgumentError(`unknown scenario ${bad.join(", ") || "(none)"}; one of ${SCENARIOS.join(", ")}`);
        return names as ScenarioName[];
      }),
    )
    .addOption(
      new Option("--store <store>", `which stores' rows: ${BENCH_STORES.join(", ")} (PostgreSQL: ledger, recovery, history)`)
        .default("all")
        .argParser((v) => {
          try {
            return parseStoreChoice(v);
          } catch (err) {
            throw new InvalidArgumentError((err as Error).message);
          }
        }),
    )
    .addOption(
      new Option("--pg-effects <n>", "unknown effects of the PostgreSQL recovery rows (default 10000; QUICK 2000)").argParser((v) => {
        if (!/^[1-9]\d{2,6}$/.test(v)) throw new InvalidArgumentError("must be an integer from 100 to 9999999");
        return Number(v);
      }),
    )
    .addOption(
      new Option("--history-effects <n>", "stored effects of the history rows (default 1000000; QUICK 100000)").argParser((v) => {
        if (!/^[1-9]\d{3,8}$/.test(v)) throw new InvalidArgumentError("must be an integer from 1000 to 999999999");
        return Number(v);
      }),
    )
    .option(
      "--database-url <url>",
      "PostgreSQL server of the PostgreSQL rows (a role allowed to CREATE DATABASE; default MOSOO_DATABASE_URL, else a throwaway server)",
    )
    .option("--check", "compare this run's figures with the baseline; exit 1 on a regression beyond the tolerance", false)
    .option("--write-baseline", "merge this run's figures into the baseline file", false)
    .option("--baseline <file>", "the baseline file", DEFAULT_BASELINE)
    .addOption(
      new Option(
        "--group-commit-max <n>",
        "outcomes per transaction at most in the recovery and repair scenarios (1 = each alone, as before group commit; default the API's)",
      ).argParser((v) => {
        if (!/^[1-9]\d{0,3}$/.test(v)) throw new InvalidArgumentError("must be an integer from 1 to 9999");
        return Number(v);
      }),
    )
    .addOption(
      new Option("--tolerance <fraction>", "a figure this much above its baseline is a regression")
        .default(DEFAULT_TOLERANCE)
        .argParser((v) => {
          const n = Number(v);
          if (!/^\d+(\.\d+)?$/.test(v) || !Number.isFinite(n)) throw new InvalidArgumentError("must be a fraction such as 0.2");
          return n;
        }),
    )
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s.split("\n")[0] + "\n") });
  try {
    program.parse(argv, { from: "user" });
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode ?? 2;
    process.exit(code === 0 ? 0 : 2);
  }
  const o = program.opts<{
    only?: ScenarioName[];
    check: boolean;
    writeBaseline: boolean;
    baseline: string;
    tolerance: number;
    groupCommitMax?: number;
    store: BenchStoreChoice;
    databaseUrl?: string;
    pgEffects?: number;
    historyEffects?: number;
  }>();
  const databaseUrl = o.databaseUrl ?? (process.env.MOSOO_DATABASE_URL || undefined);
  const refuse = (line: string): never => {
    process.stderr.write(`${line}\n`);
    process.exit(2);
  };
  if (o.databaseUrl !== undefined && o.store === "sqlite")
    refuse("bench: --database-url names the PostgreSQL server of the PostgreSQL rows; drop it with --store sqlite");
  const urlProblem = databaseUrl === undefined ? undefined : databaseUrlProblem(databaseUrl);
  if (urlProblem) refuse(`bench: --database-url / MOSOO_DATABASE_URL: ${urlProblem}`);
  return {
    only: o.only ?? [...SCENARIOS],
    check: o.check,
    writeBaseline: o.writeBaseline,
    baseline: o.baseline,
    tolerance: o.tolerance,
    groupCommitMax: o.groupCommitMax,
    store: o.store,
    pgEffects: o.pgEffects ?? (QUICK ? 2_000 : 10_000),
    historyEffects: o.historyEffects,
    databaseUrl,
  };
}

/** Reads the baseline file, or undefined when it does not exist; a malformed one prints one line and exits 2. */
function readBaseline(file: string): BenchBaseline | undefined {
  if (!existsSync(file)) return undefined;
  const parsed = BenchBaselineSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (!parsed.success) {
    process.stderr.write(`bench.baseline_invalid: ${file}: ${parsed.error.issues[0]?.message ?? "invalid"}\n`);
    process.exit(2);
  }
  return parsed.data;
}
/** The scenario child: compiled `dist/scenario.main.js` when the bench runs compiled (`npm run bench`), else the TypeScript file under tsx. */
const CHILD = entryFile(new URL("./scenario.main.ts", import.meta.url), "scenario.main.js");
const QUICK = process.env.MOSOO_BENCH_QUICK === "1";
const PROFILE = process.env.MOSOO_BENCH_CPU_PROF === "1";
const STAMP = new Date().toISOString().replace(/[:.]/g, "-");
const PROFILE_DIR = join(REPO_ROOT, "var", "bench", "profiles", STAMP);

/** Targets (SQLite part): ledger ≤ 1.5× its floor, recovery ≤ 1.3× its bound at 10k and 100k, 100k peak RSS < 150 MB, repair p95 ≤ bound + 150 ms. */
const TARGETS = { ledgerRatio: 1.5, recoveryRatio: 1.3, recoveryRssBytes: 150 * 1024 * 1024, repairP95OverBoundMs: 150 };

const tmp = mkdtempSync(join(tmpdir(), "mosoo-bench-results-"));
let childSeq = 0;
const profiles: Array<{ label: string; top: SelfTimeEntry[] }> = [];

/** Runs one scenario in a child process and returns its parsed result. */
async function child<T>(label: string, scenario: string, options: object): Promise<T> {
  const out = join(tmp, `${++childSeq}.json`);
  const profDir = join(PROFILE_DIR, `${childSeq}-${label.replace(/[^a-z0-9]+/gi, "-")}`);
  const args = [
    ...(PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : []),
    ...CHILD.nodeArgs,
    CHILD.path,
    scenario,
    JSON.stringify(options),
    out,
  ];
  console.error(`▶ ${label}`);
  const t0 = performance.now();
  const code = await new Promise<number | null>((resolve, reject) => {
    const p = spawn(process.execPath, args, { stdio: ["ignore", "inherit", "inherit"] });
    p.on("error", reject);
    p.on("exit", resolve);
  });
  if (code !== 0) throw new Error(`${label}: child exited with ${code}`);
  console.error(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (PROFILE) {
    // one profile per thread: keep the main thread's (under tsx, its loader thread is almost all idle)
    const tops = readdirSync(profDir)
      .filter((n) => n.endsWith(".cpuprofile"))
      .map((f) => summarizeCpuProfile(join(profDir, f), 12, REPO_ROOT));
    const main = tops.find((t) => t[0]?.functionName !== "(idle)") ?? tops[0];
    if (main) profiles.push({ label, top: main });
  }
  return JSON.parse(readFileSync(out, "utf8")) as T;
}

const fmtUs = (s: LatencyStats) => `${s.medianUs.toFixed(0)} µs (rounds ${s.roundMediansUs.join("/")})`;
const fmtMb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

async function main(opts: BenchOptions): Promise<number> {
  const started = performance.now();
  const rows: Row[] = [];
  const figures: BenchFigure[] = [];
  const sqlite = opts.store !== "postgres";
  const postgres = opts.store !== "sqlite";
  const runs = (name: ScenarioName) => sqlite && opts.only.includes(name);
  const runsPg = (name: ScenarioName) => postgres && opts.only.includes(name);
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

  // 1. Ledger cost per lifecycle against four bare transactions, at 0 / 10k / 100k existing effects.
  const ledger = runs("ledger")
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
      figures.push({
        key: `ledger.${flag}@${fmtK(p.existingEffects)}.ratio`,
        label: `ledger ${flag} @ ${fmtK(p.existingEffects)} effects, ratio to its floor`,
        value: ratio,
        unit: "x",
      });
      rows.push({
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

  // 2. Recovery throughput: 10k (repeated) and 100k unknown effects, 10 ms lookups, concurrency 64.
  const base = {
    lookupLatencyMs: 10,
    concurrency: 64,
    ...(opts.groupCommitMax === undefined ? {} : { groupCommitMax: opts.groupCommitMax }),
  };
  const small = QUICK ? 2_000 : 10_000;
  const large = QUICK ? 20_000 : 100_000;
  const reps = QUICK ? 1 : 3;
  const recoveryOn: RecoveryResult[] = [];
  let recoveryOff: RecoveryResult | undefined;
  let recoveryLargeOn: RecoveryResult | undefined;
  if (runs("recovery")) {
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
  if (runs("recovery-100k"))
    recoveryLargeOn = await child<RecoveryResult>(`recovery ${fmtK(large)} on`, "recovery", {
      ...base,
      effects: large,
      reconciliation: true,
    });
  if (recoveryOn.length > 0) {
    const walls = recoveryOn.map((r) => r.wallMs);
    const smallRatio = median(walls) / recoveryOn[0]!.boundMs;
    figures.push({
      key: `recovery.on@${fmtK(small)}.ratio`,
      label: `recovery ${fmtK(small)} on, ratio to the lookup bound`,
      value: smallRatio,
      unit: "x",
    });
    rows.push({
      scenario: `2 recovery, ${fmtK(small)} unknown, 10 ms lookups, c=64`,
      flag: "on",
      measured: `${median(walls).toFixed(0)} ms (${Math.min(...walls).toFixed(0)}–${Math.max(...walls).toFixed(0)}, n=${reps})`,
      floorOrBound: `bound ${recoveryOn[0]!.boundMs.toFixed(0)} ms`,
      ratio: `${smallRatio.toFixed(2)}×`,
      other: `API CPU ${median(recoveryOn.map((r) => r.cpuMsPerOutcome)).toFixed(3)} ms/outcome, DB ${median(recoveryOn.map((r) => r.dbUsPerOutcome)).toFixed(0)} µs/outcome (${recoveryOn[0]!.commitsPerOutcome.toFixed(2)} commits, ${recoveryOn[0]!.statementsPerOutcome.toFixed(1)} statements; bare commit ${median(recoveryOn.map((r) => r.bareCommitUs.before)).toFixed(0)} µs), peak RSS ${fmtMb(median(recoveryOn.map((r) => r.peakRssBytes)))}, sandboxed adapter processes ${recoveryOn[0]!.adapterProcesses} × ${fmtMb(median(recoveryOn.map((r) => r.adapterRssMedianBytes)))} RSS each, resolved ${recoveryOn.map((r) => r.resolved).join("/")}`,
      target: `≤ ${TARGETS.recoveryRatio}×`,
      met: smallRatio <= TARGETS.recoveryRatio && recoveryOn.every((r) => r.resolved === r.effects) ? "yes" : "no",
    });
  }
  if (recoveryLargeOn) {
    const largeRatio = recoveryLargeOn.wallMs / recoveryLargeOn.boundMs;
    figures.push({
      key: `recovery.on@${fmtK(large)}.ratio`,
      label: `recovery ${fmtK(large)} on, ratio to the lookup bound`,
      value: largeRatio,
      unit: "x",
    });
    figures.push({
      key: `recovery.on@${fmtK(large)}.peakRssMb`,
      label: `recovery ${fmtK(large)} on, peak RSS`,
      value: recoveryLargeOn.peakRssBytes / 1024 / 1024,
      unit: "MB",
    });
    rows.push({
      scenario: `2 recovery, ${fmtK(large)} unknown, 10 ms lookups, c=64`,
      flag: "on",
      measured: `${recoveryLargeOn.wallMs.toFixed(0)} ms (n=1)`,
      floorOrBound: `bound ${recoveryLargeOn.boundMs.toFixed(0)} ms`,
      ratio: `${largeRatio.toFixed(2)}×`,
      other: `peak RSS ${fmtMb(recoveryLargeOn.peakRssBytes)} (at start ${fmtMb(recoveryLargeOn.rssBeforeBytes)}), API CPU ${recoveryLargeOn.cpuMsPerOutcome.toFixed(3)} ms/outcome, DB ${recoveryLargeOn.dbUsPerOutcome.toFixed(0)} µs/outcome, resolved ${recoveryLargeOn.resolved}`,
      target: `≤ ${TARGETS.recoveryRatio}× and RSS < ${fmtMb(TARGETS.recoveryRssBytes)}`,
      met:
        largeRatio <= TARGETS.recoveryRatio &&
        recoveryLargeOn.peakRssBytes < TARGETS.recoveryRssBytes &&
        recoveryLargeOn.resolved === recoveryLargeOn.effects
          ? "yes"
          : "no",
    });
  }
  for (const r of recoveryOff ? [recoveryOff] : []) {
    rows.push({
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

  // 3. Finalization repair: 1,000 executing effects, half bound (5 ms lookups), half unbound.
  const repairOpts = {
    commands: 1_000,
    lookupLatencyMs: 5,
    concurrency: 64,
    rounds: QUICK ? 1 : 5,
    ...(opts.groupCommitMax === undefined ? {} : { groupCommitMax: opts.groupCommitMax }),
  };
  const repair: RepairResult[] = [];
  for (const flag of runs("repair") ? (["on", "off"] as const) : []) {
    const r = await child<RepairResult>(`finalization repair ${flag}`, "repair", { ...repairOpts, reconciliation: flag === "on" });
    repair.push(r);
    const over = r.p95Ms - r.boundMs;
    figures.push({ key: `repair.${flag}.p95OverBoundMs`, label: `repair ${flag}, p95 minus the lookup bound`, value: over, unit: "ms" });
    rows.push({
      scenario: `3 repair, 1k executing (500 bound, 5 ms lookups), c=64`,
      flag,
      measured: `p50 ${r.p50Ms} / p95 ${r.p95Ms} / max ${r.maxMs} ms (median of ${r.rounds} rounds)`,
      floorOrBound: `bound ${r.boundMs.toFixed(0)} ms`,
      ratio: `p95 − bound ${over.toFixed(0)} ms`,
      other: `p95 per round ${r.p95MsPerRound.join("/")} ms (all rounds pooled: ${r.pooledP95Ms}), finalize ${r.finalizeMsMedian.toFixed(0)} ms, reconciled ${r.reconciled}, events ${r.eventsOk ? "ok" : "MISSING"}`,
      target: `p95 ≤ bound + ${TARGETS.repairP95OverBoundMs} ms`,
      met: over <= TARGETS.repairP95OverBoundMs && r.eventsOk ? "yes" : "no",
    });
  }

  // 4. History: a store filled with 1M finished effects (finalized Drivers, a long-lived Driver's commands) against an empty one.
  let history: HistoryResult | undefined;
  if (runs("history")) {
    history = await child<HistoryResult>(
      "history: filled store against empty",
      "history",
      historyScenarioOptions(QUICK, opts.historyEffects),
    );
    const part = historyRows(history);
    rows.push(...part.rows);
    figures.push(...part.figures);
  }

  // 5. PostgreSQL rows: the ledger against a bare `pg` floor, and recovery with 1 and 3 API instances.
  let pgLedger: PgLedgerCostResult | undefined;
  const pgRecovery: PgRecoveryResult[] = [];
  let pgServer: { source: BenchPostgres["source"]; startMs: number | undefined } | undefined;
  let pgHistory: PgHistoryResult | undefined;
  if (runsPg("ledger") || runsPg("recovery") || runsPg("history")) {
    console.error(
      opts.databaseUrl
        ? "▶ postgres: the server at --database-url / MOSOO_DATABASE_URL"
        : "▶ postgres: starting a throwaway durable server",
    );
    const server = await openBenchPostgres(opts.databaseUrl);
    pgServer = { source: server.source, startMs: server.startMs };
    if (server.startMs !== undefined) console.error(`  started in ${(server.startMs / 1000).toFixed(1)} s`);
    try {
      if (runsPg("ledger")) {
        pgLedger = await child<PgLedgerCostResult>("postgres ledger cost per lifecycle", "pg-ledger", {
          adminUrl: server.adminUrl,
          sizes: QUICK ? [0, 10_000] : [0, 10_000, 100_000],
          timeMs: QUICK ? 300 : 700,
          rounds: 3,
        });
        const part = pgLedgerRows(pgLedger);
        rows.push(...part.rows);
        figures.push(...part.figures);
      }
      if (runsPg("recovery")) {
        const pgRounds = QUICK ? 1 : 2;
        for (let round = 1; round <= pgRounds; round++)
          for (const instances of [1, 3])
            pgRecovery.push(
              await child<PgRecoveryResult>(
                `postgres recovery ${fmtK(opts.pgEffects)}, ${instances} API instance(s) (${round}/${pgRounds})`,
                "pg-recovery",
                { ...base, adminUrl: server.adminUrl, effects: opts.pgEffects, instances },
              ),
            );
        const part = pgRecoveryRows(pgRecovery);
        rows.push(...part.rows);
        figures.push(...part.figures);
      }
      if (runsPg("history")) {
        pgHistory = await child<PgHistoryResult>("postgres history: filled database against empty", "pg-history", {
          ...historyScenarioOptions(QUICK, opts.historyEffects),
          adminUrl: server.adminUrl,
          serverCpu: server.source === "started",
        });
        const part = pgHistoryRows(pgHistory);
        rows.push(...part.rows);
        figures.push(...part.figures);
      }
    } finally {
      await server.stop();
    }
  } else if (postgres && opts.store === "postgres") {
    console.error(`bench.note: no PostgreSQL row among --only ${opts.only.join(",")} (PostgreSQL rows: ledger, recovery, history)`);
  }

  const wallSeconds = (performance.now() - started) / 1000;
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
  const table = [
    line(header, "reconciliation", "met"),
    "|---|---|---|---|---|---|---|---|",
    ...rows.map((r) => line(r, r.flag, r.met)),
  ].join("\n");
  console.log(`\n${table}\n`);
  console.log(
    `bench wall time ${wallSeconds.toFixed(0)} s on ${cpus().length} × ${cpus()[0]?.model ?? "?"}, Node ${process.version}, load average at the end ${loadAverage()?.join(" ") ?? "n/a"}${QUICK ? " (QUICK: not comparable)" : ""}`,
  );
  for (const p of profiles) {
    console.log(`\ncpu profile, ${p.label}: top self time`);
    for (const e of p.top)
      console.log(`  ${e.selfMs.toFixed(0).padStart(7)} ms ${e.percent.toFixed(1).padStart(5)}%  ${e.functionName}  ${e.location}`);
  }
  const outDir = join(REPO_ROOT, "var", "bench");
  mkdirSync(outDir, { recursive: true });
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

const options = parseOptions(process.argv.slice(2));
let exitCode = 1;
try {
  exitCode = await main(options);
} catch (err) {
  // One line, never a stack: a server the PostgreSQL rows cannot use is bad input (2), anything else a failed bench (1).
  if (err instanceof BenchPostgresUnavailableError) {
    process.stderr.write(`bench: ${err.message}\n`);
    exitCode = 2;
  } else {
    process.stderr.write(
      `bench.failed: ${redactDatabaseUrl((err instanceof Error ? err.message : String(err)).split("\n")[0]!, options.databaseUrl ?? "")}\n`,
    );
    exitCode = 1;
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exitCode = exitCode;
