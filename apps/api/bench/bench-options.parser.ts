// The bench's command line (`npm run bench -- …`): the scenario names, the parsed options and their parser (commander).
import { fileURLToPath } from "node:url";
import { Command, InvalidArgumentError, Option } from "commander";
import { databaseUrlProblem } from "../src/config/configured-store.js";
import { DEFAULT_TOLERANCE } from "./baseline-check.js";
import { BENCH_STORES, parseStoreChoice, type BenchStoreChoice } from "./pg-bench.report.js";

/** `MOSOO_BENCH_QUICK=1`: the smaller set (a smoke test of the harness; figures not comparable). */
export const QUICK = process.env.MOSOO_BENCH_QUICK === "1";
/** The committed baseline of the regression gate (`--check`, `--write-baseline`). */
const DEFAULT_BASELINE = fileURLToPath(new URL("./baseline.json", import.meta.url));
/** The scenario groups `--only` selects from. */
const SCENARIOS = ["ledger", "recovery", "recovery-100k", "repair", "history"] as const;
/** One of {@link SCENARIOS}. */
export type ScenarioName = (typeof SCENARIOS)[number];

/** Parsed command line: the scenarios to run, whether to check against / write the baseline, its file, the tolerance (fraction). */
export interface BenchOptions {
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

/** commander's raw view of the options (before defaults that depend on QUICK and the environment). */
interface RawOptions {
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
}

/** An argument parser accepting an integer matching `pattern` (its range told by `range` in the error line). */
const integerIn =
  (pattern: RegExp, range: string) =>
  (v: string): number => {
    if (!pattern.test(v)) throw new InvalidArgumentError(`must be an integer from ${range}`);
    return Number(v);
  };

/** Parses `--only a,b`: every name one of {@link SCENARIOS}, at least one. */
function parseOnly(v: string): ScenarioName[] {
  const names = v
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
  const bad = names.filter((n) => !(SCENARIOS as readonly string[]).includes(n));
  if (names.length === 0 || bad.length > 0)
    throw new InvalidArgumentError(`unknown scenario ${bad.join(", ") || "(none)"}; one of ${SCENARIOS.join(", ")}`);
  return names as ScenarioName[];
}

/** The commander program of `npm run bench` (every option, its help line and its argument parser). */
function benchProgram(): Command {
  return new Command("bench")
    .description("Mosoo ledger benchmarks (docs/performance.md)")
    .addOption(new Option("--only <scenarios>", `comma-separated subset of ${SCENARIOS.join(", ")}`).argParser(parseOnly))
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
      new Option("--pg-effects <n>", "unknown effects of the PostgreSQL recovery rows (default 10000; QUICK 2000)").argParser(
        integerIn(/^[1-9]\d{2,6}$/, "100 to 9999999"),
      ),
    )
    .addOption(
      new Option("--history-effects <n>", "stored effects of the history rows (default 1000000; QUICK 100000)").argParser(
        integerIn(/^[1-9]\d{3,8}$/, "1000 to 999999999"),
      ),
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
      ).argParser(integerIn(/^[1-9]\d{0,3}$/, "1 to 9999")),
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
}

/** Parses the command line (commander); a bad option prints one line and exits 2 (`--help` exits 0). */
export function parseOptions(argv: string[]): BenchOptions {
  const program = benchProgram();
  try {
    program.parse(argv, { from: "user" });
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode ?? 2;
    process.exit(code === 0 ? 0 : 2);
  }
  const o = program.opts<RawOptions>();
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
