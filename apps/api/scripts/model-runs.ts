/**
 * `npm run verify:model -- --runs N [--seed S] [--workers W | --shard i/n] [--time-limit 2h] [--store sqlite|pglite|postgres
 * [--database-url URL]]`: the exploring ledger model property (tests/helpers/ledger-model-property.ts) run offline, outside
 * vitest: no per-test timeout, a progress line (runs done, rate, ETA) every `--progress-every`, and
 * the runs split by seed across processes (`--workers W` here, or `--shard i/n` on several machines:
 * shard i runs its share of the runs with seed S + i - 1), with one combined summary.
 *
 * `--store` (default `sqlite`: a SQLite file per world) runs the worlds on PGlite or on a real
 * PostgreSQL server: `postgres` creates a throwaway database `ledger_model_…` on
 * the server of `--database-url` (else `MOSOO_DATABASE_URL`; a role that may CREATE DATABASE; the
 * database in the URL is not touched) and drops it at the end, or, with neither, starts a throwaway
 * server itself (@mosoo/test-postgres) and stops it. With `--workers`, each worker has its own
 * database on one server.
 *
 * Exit codes (a timeout is never reported as a counterexample):
 * - 0 every run held every invariant;
 * - 1 COUNTEREXAMPLE: an invariant failed; the report and `--seed S --path P` to replay it are printed;
 * - 2 bad input (one line);
 * - 3 TIMED OUT: `--time-limit` ran out first; no counterexample in the runs made;
 * - 4 STALLED: one run made no progress for `--stall-after` (a hang or an overloaded machine);
 *   its `--seed S --path P` replays that run alone;
 * - 5 with --workers: a worker process died without a result (and no shard found a counterexample);
 * - 130 interrupted (Ctrl-C), with the runs done so far.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Command, InvalidArgumentError, Option } from "commander";
import ms from "ms";
import { startPostgres } from "@mosoo/test-postgres";
import { figuresReport, runShard, type ShardOutcome } from "./model-shard.js";
import { databaseUrlProblem, storeOpenFailureLine } from "../src/config/configured-store.js";
import { MODEL_STORE_KINDS, openModelTarget, type ModelStoreKind } from "../tests/helpers/ledger-model/model-store.js";

/** Prefix of the machine-readable lines a worker prints (`--json-lines`) for its parent. */
const LINE = "verify-model:";
const EXIT: Record<ShardOutcome["kind"], number> = { passed: 0, counterexample: 1, timed_out: 3, stalled: 4 };

function int(value: string): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError("not an integer");
  return n;
}
const atLeast =
  (min: number, max = Number.MAX_SAFE_INTEGER) =>
  (value: string) => {
    const n = int(value);
    if (n < min || n > max) throw new InvalidArgumentError(`must be from ${min} to ${max}`);
    return n;
  };
function duration(value: string): number {
  const n = /^\d+$/.test(value) ? Number(value) * 1000 : ms(value as ms.StringValue);
  if (typeof n !== "number" || !Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError("a duration such as 90s, 15m, 2h (a bare number is seconds)");
  return n;
}
function shard(value: string): { index: number; count: number } {
  const m = /^(\d+)\/(\d+)$/.exec(value);
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || count > 1024 || index < 1 || index > count)
    throw new InvalidArgumentError("i/n with 1 <= i <= n <= 1024, e.g. 2/4");
  return { index, count };
}

/** Shard `index` (1-based) of `count`: its seed (the base seed + index - 1, as a 32-bit integer) and its share of `runs`. */
export function shardPlan(runs: number, seed: number, index: number, count: number): { seed: number; runs: number } {
  const share = Math.floor(runs / count) + (index - 1 < runs % count ? 1 : 0);
  return { seed: (seed + index - 1) | 0, runs: share };
}

/** "1,234/100,000 runs, 12.3 runs/s, ETA 2h" from runs done, the target and the elapsed ms. */
function progressText(done: number, total: number, elapsedMs: number): string {
  const rate = elapsedMs > 0 ? (done * 1000) / elapsedMs : 0;
  const eta = rate > 0 && done < total ? `, ETA ${ms(Math.round(((total - done) / rate) * 1000))}` : "";
  return `${done.toLocaleString("en")}/${total.toLocaleString("en")} runs, ${rate.toFixed(1)} runs/s${eta}`;
}

/** One line per outcome, for people; the replay command where there is one. */
function describe(o: ShardOutcome, label: string): string {
  const head = `${label}seed ${o.seed}, ${o.runs.toLocaleString("en")} runs in ${ms(o.elapsedMs)}`;
  switch (o.kind) {
    case "passed":
      return `${head}: passed`;
    case "counterexample":
      return `${head}: COUNTEREXAMPLE (an invariant failed); replay with: npm run verify:model -- --seed ${o.seed} --path "${o.path}"${o.replayPath ? ` --replay-path "${o.replayPath}"` : ""}`;
    case "timed_out":
      return `${head}: TIMED OUT (--time-limit reached; no counterexample in the runs made; not an invariant failure)`;
    case "stalled":
      return `${head}: STALLED (run ${o.path} made no progress for --stall-after; a hang or an overloaded machine, not an invariant failure); replay it alone with: npm run verify:model -- --seed ${o.seed} --path "${o.path}"`;
  }
}

interface Options {
  runs: number;
  seed?: number;
  path?: string;
  replayPath?: string;
  workers: number;
  shard?: { index: number; count: number };
  timeLimit?: number;
  stallAfter: number;
  progressEvery: number;
  jsonLines: boolean;
  store: ModelStoreKind;
  databaseUrl?: string;
}

const program = new Command("verify:model")
  .description(
    "Run the ledger model property offline (fc.commands under fc.scheduler), with progress, a printed seed, and shards across processes",
  )
  .option("--runs <n>", "number of runs in all (at least 1)", atLeast(1), 1000)
  .option("--seed <seed>", "fast-check seed (default: random, printed); shard i uses seed + i - 1", int)
  .option("--path <path>", "replay a counterexample (or a stalled run) printed with its --seed")
  .option("--replay-path <replayPath>", "with --path: the fc.commands replay path a counterexample printed (replays its exact commands)")
  .option("--workers <n>", "split the runs by seed across n processes on this machine (1-64)", atLeast(1, 64), 1)
  .option("--shard <i/n>", "run only shard i of n (e.g. on another machine; combine the summaries by hand)", shard)
  .option(
    "--time-limit <duration>",
    "stop starting runs after this long (90s, 15m, 2h): exit 3, never reported as a counterexample",
    duration,
  )
  .option("--stall-after <duration>", "declare a run stalled when it does not finish within this long", duration, 300_000)
  .option("--progress-every <duration>", "period of the progress line", duration, 10_000)
  .addOption(
    new Option(
      "--store <kind>",
      "where the worlds live: sqlite (a file per world), pglite (in-process PostgreSQL), postgres (a real server: a throwaway one " +
        "started and stopped here, unless --database-url / MOSOO_DATABASE_URL names one)",
    )
      .choices(MODEL_STORE_KINDS)
      .default("sqlite"),
  )
  .option(
    "--database-url <url>",
    "with --store postgres: a server URL (role allowed to CREATE DATABASE; default MOSOO_DATABASE_URL) on which a throwaway " +
      "database ledger_model_… is created and dropped; with neither, a throwaway server is started and stopped",
  )
  .addOption(new Option("--json-lines", "machine-readable progress and result lines (used by --workers)").hideHelp())
  // Bad input is exit 2 (exit 1 is reserved for a counterexample); --help and --version stay 0.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
  .parse();
const opts = program.opts<Options>();
if (opts.path !== undefined && opts.seed === undefined)
  program.error("verify:model: --path replays a failure only together with its --seed", { exitCode: 2 });
if (opts.replayPath !== undefined && opts.path === undefined)
  program.error("verify:model: --replay-path goes with --path and --seed", { exitCode: 2 });
if (opts.path !== undefined && (opts.workers > 1 || opts.shard))
  program.error("verify:model: --path replays in one process: drop --workers and --shard", { exitCode: 2 });
if (opts.workers > 1 && opts.shard) program.error("verify:model: use either --workers or --shard", { exitCode: 2 });
if (opts.databaseUrl !== undefined && opts.store !== "postgres")
  program.error("verify:model: --database-url goes with --store postgres", { exitCode: 2 });
if (opts.store === "postgres") opts.databaseUrl ??= process.env.MOSOO_DATABASE_URL || undefined;
const urlProblem = opts.databaseUrl === undefined ? undefined : databaseUrlProblem(opts.databaseUrl);
if (urlProblem) program.error(`verify:model: --database-url: ${urlProblem}`, { exitCode: 2 });
const seed = opts.seed ?? (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) | 0;

if (opts.workers > 1) {
  process.exit(await runWorkers(opts, seed));
} else {
  process.exit(await runOne(opts, seed));
}

/**
 * Runs `open` (opening the store of the worlds, or starting the throwaway server); when it fails (a
 * server that refuses the connection, the credentials or CREATE DATABASE, a timeout), prints one line
 * `verify:model: cannot open the PostgreSQL store: <reason>` (the URL and password redacted) and exits
 * 2: bad input, not a counterexample.
 */
async function openOrExit<T>(open: () => Promise<T>, url: string | undefined): Promise<T> {
  try {
    return await open();
  } catch (err) {
    console.error(`verify:model: cannot open the PostgreSQL store: ${storeOpenFailureLine(err, url ?? "")}`);
    process.exit(2);
  }
}

/** This process runs one shard (all the runs, or `--shard i/n`'s share), printing progress and one summary. */
async function runOne(o: Options, baseSeed: number): Promise<number> {
  const plan = o.shard ? shardPlan(o.runs, baseSeed, o.shard.index, o.shard.count) : { seed: baseSeed, runs: o.runs };
  const label = o.shard ? `shard ${o.shard.index}/${o.shard.count}: ` : "";
  const startedAt = Date.now();
  const say = (text: string) => (o.jsonLines ? undefined : console.log(`verify:model: ${label}${text}`));
  const opened = await openOrExit(() => openModelTarget(o.store, { serverUrl: o.databaseUrl }), o.databaseUrl);
  say(
    `${plan.runs} runs, store ${opened.label}, seed ${plan.seed}${o.shard ? ` (base seed ${baseSeed})` : ""}${o.path ? `, path ${o.path}` : ""}${o.timeLimit ? `, time limit ${ms(o.timeLimit)}` : ""}`,
  );
  let latest = 0;
  process.once("SIGINT", () => {
    say(`INTERRUPTED after ${progressText(latest, plan.runs, Date.now() - startedAt)} (no counterexample in the runs finished so far)`);
    void opened.close().finally(() => process.exit(130));
  });
  const outcome = await runShard({
    store: opened.target,
    runs: plan.runs,
    seed: plan.seed,
    path: o.path,
    replayPath: o.replayPath,
    timeLimitMs: o.timeLimit,
    stallMs: o.stallAfter,
    progressEveryMs: o.progressEvery,
    onProgress: (n) => {
      latest = n;
      if (o.jsonLines) console.log(`${LINE}${JSON.stringify({ type: "progress", runs: n })}`);
      else say(progressText(n, plan.runs, Date.now() - startedAt));
    },
  });
  await opened.close();
  if (outcome.kind === "counterexample") console.log(outcome.report);
  console.log(figuresReport());
  if (o.jsonLines) console.log(`${LINE}${JSON.stringify({ type: "result", outcome })}`);
  else say(describe(outcome, `store ${o.store}, `));
  return EXIT[outcome.kind];
}

/**
 * `--workers W`: W child processes (this script with `--shard i/W --json-lines`), a combined
 * progress line, and one summary. A counterexample in one shard stops the others (SIGTERM to the
 * children this process started). Exit code: 1 if any shard found a counterexample, else 4 if one
 * stalled, else 5 if a worker died without a result, else 3 if one timed out, else 0.
 */
async function runWorkers(o: Options, baseSeed: number): Promise<number> {
  // --store postgres without a server: ONE throwaway server for all workers (each creates its own database on it)
  const server = o.store === "postgres" && !o.databaseUrl ? await openOrExit(() => startPostgres({ fsync: false }), undefined) : null;
  try {
    return await runWorkerProcesses(server ? { ...o, databaseUrl: server.url } : o, baseSeed);
  } finally {
    await server?.stop();
  }
}

/** {@link runWorkers} once the store's server (if any) is known. */
async function runWorkerProcesses(o: Options, baseSeed: number): Promise<number> {
  const startedAt = Date.now();
  console.log(
    `verify:model: ${o.runs} runs over ${o.workers} worker processes, store ${o.store}, base seed ${baseSeed} (shard i uses seed ${baseSeed} + i - 1)${o.timeLimit ? `, time limit ${ms(o.timeLimit)}` : ""}`,
  );
  const done = new Array<number>(o.workers).fill(0);
  const outcomes = new Array<ShardOutcome | undefined>(o.workers);
  const children: ChildProcess[] = [];
  const script = fileURLToPath(import.meta.url);
  const passOn = [
    ...[
      "--runs",
      String(o.runs),
      "--seed",
      String(baseSeed),
      "--stall-after",
      `${o.stallAfter}ms`,
      "--progress-every",
      `${o.progressEvery}ms`,
    ],
    ...(o.timeLimit ? ["--time-limit", `${o.timeLimit}ms`] : []),
    ...["--store", o.store],
    ...(o.databaseUrl ? ["--database-url", o.databaseUrl] : []),
  ];
  const progress = setInterval(() => {
    const total = done.reduce((a, b) => a + b, 0);
    console.log(
      `verify:model: ${progressText(total, o.runs, Date.now() - startedAt)} (${outcomes.filter(Boolean).length}/${o.workers} shards finished)`,
    );
  }, o.progressEvery);
  process.once("SIGINT", () => {
    for (const c of children) c.kill("SIGTERM");
    console.log(
      `verify:model: INTERRUPTED after ${progressText(
        done.reduce((a, b) => a + b, 0),
        o.runs,
        Date.now() - startedAt,
      )}`,
    );
    process.exit(130);
  });
  await Promise.all(
    Array.from({ length: o.workers }, (_, i) => {
      const child = spawn(process.execPath, ["--import", "tsx", script, ...passOn, "--shard", `${i + 1}/${o.workers}`, "--json-lines"], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.push(child);
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (!line.startsWith(LINE)) return console.log(`[shard ${i + 1}] ${line}`);
        const msg = JSON.parse(line.slice(LINE.length)) as { type: "progress"; runs: number } | { type: "result"; outcome: ShardOutcome };
        if (msg.type === "progress") done[i] = msg.runs;
        else {
          outcomes[i] = msg.outcome;
          done[i] = msg.outcome.runs;
          if (msg.outcome.kind === "counterexample") for (const c of children) if (c !== child) c.kill("SIGTERM");
        }
      });
      return new Promise<void>((resolve) => child.on("close", () => resolve()));
    }),
  );
  clearInterval(progress);
  const total = outcomes.reduce((a, x) => a + (x?.runs ?? 0), 0);
  console.log(`verify:model: summary: ${progressText(total, o.runs, Date.now() - startedAt)} over ${o.workers} workers`);
  outcomes.forEach((x, i) =>
    console.log(
      `verify:model:   shard ${i + 1}/${o.workers}: ${x ? describe(x, "") : "stopped (another shard found a counterexample, or the process died)"}`,
    ),
  );
  const kinds = new Set(outcomes.map((x) => x?.kind ?? "stopped"));
  const code = kinds.has("counterexample") ? 1 : kinds.has("stalled") ? 4 : kinds.has("stopped") ? 5 : kinds.has("timed_out") ? 3 : 0;
  const verdict = {
    0: "passed",
    1: "FAILED: COUNTEREXAMPLE (see the shard above)",
    3: "TIMED OUT (no counterexample)",
    4: "STALLED (no counterexample)",
    5: "FAILED: a worker died without a result (no counterexample reported)",
  }[code as 0 | 1 | 3 | 4 | 5];
  console.log(`verify:model: ${verdict}`);
  return code;
}
