/**
 * `npm run soak -- --kills N [--seed S] [--drivers D] [--api-kill-ratio R] [--store sqlite|postgres]
 * [--api-instances N] [--keep]`: the real-process kill soak (see soak-runner.ts). Prints progress lines,
 * the seed, one JSON line of counts (soak-counts.ts defines each), and a final line
 * `soak: ok: lost 0, duplicated 0, phantom 0, stuck 0 (...)` (or `soak: FAILED: ...`). Exit code: 0 when
 * no effect is lost, duplicated, phantom or stuck and recovery finished; 1 otherwise; 2 on bad options
 * (one line; `--api-instances` above 1 needs `--store postgres`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { soakFailed } from "./soak-counts.js";
import { runSoak, type SoakStore } from "./soak-runner.js";

function intIn(min: number, max: number) {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`an integer ${min}-${max}`);
    return n;
  };
}
function ratio(value: string) {
  const n = Number(value);
  if (!(n >= 0 && n <= 1)) throw new InvalidArgumentError("a number 0-1");
  return n;
}

const program = new Command("soak")
  .description(
    "SIGKILL Drivers (and sometimes the API) at random moments, restart them, let recovery finish, compare the ledger with the provider",
  )
  .option("--kills <n>", "Driver SIGKILLs", intIn(1, 100_000), 20)
  .option("--seed <n>", "seed of the random schedule (default: random, printed)", intIn(0, 2 ** 31 - 1))
  .option("--drivers <n>", "Driver processes", intIn(1, 8), 2)
  .option("--api-kill-ratio <r>", "share of rounds that also SIGKILL the API", ratio, 0.2)
  .addOption(
    new Option(
      "--store <store>",
      "the API's store: the embedded SQLite file, or a throwaway PostgreSQL server (fsync on) the soak starts and stops",
    )
      .choices(["sqlite", "postgres"])
      .default("sqlite"),
  )
  .option("--api-instances <n>", "API processes on the store (above 1 needs --store postgres)", intIn(1, 8), 1)
  .option("--keep", "keep the work folder (SQLite files) for inspection", false)
  .exitOverride();
try {
  program.parse();
} catch (error) {
  process.exit((error as { exitCode?: number }).exitCode === 0 ? 0 : 2);
}
const o = program.opts<{
  kills: number;
  seed?: number;
  drivers: number;
  apiKillRatio: number;
  store: SoakStore;
  apiInstances: number;
  keep: boolean;
}>();
if (o.apiInstances > 1 && o.store !== "postgres") {
  console.error("soak: --api-instances above 1 needs --store postgres (one API process per SQLite file)");
  process.exit(2);
}
const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
const workDir = mkdtempSync(join(tmpdir(), "mosoo-soak-"));
console.log(
  `soak: seed ${seed}, ${o.kills} kills, ${o.drivers} Drivers, store ${o.store}, ${o.apiInstances} API instance(s), API kill ratio ${o.apiKillRatio}, work dir ${workDir}`,
);
try {
  const report = await runSoak({
    kills: o.kills,
    seed,
    drivers: o.drivers,
    apiKillRatio: o.apiKillRatio,
    store: o.store,
    apiInstances: o.apiInstances,
    workDir,
    log: (l) => console.log(l),
  });
  console.log(JSON.stringify({ seed, ...report.counts }));
  console.log(
    `soak: ${report.driverKills} Driver kills, ${report.apiKills} API kills, ${report.finalizations} Driver instances replaced after finalization, ${report.enqueued} tool calls, wall ${(report.wallMs / 1000).toFixed(1)} s`,
  );
  const failed = soakFailed(report.counts) || !report.recovered;
  const c = report.counts;
  const tally = `lost ${c.lost}, duplicated ${c.duplicated}, phantom ${c.phantom}, stuck ${c.stuck}`;
  console.log(
    failed
      ? `soak: FAILED: ${tally}${report.recovered ? "" : ", recovery unfinished"} (replay: --seed ${seed} --kills ${o.kills} --store ${o.store} --api-instances ${o.apiInstances})`
      : `soak: ok: ${tally} (${c.effects} effects, store ${o.store}, ${o.apiInstances} API instance(s))`,
  );
  process.exitCode = failed ? 1 : 0;
} finally {
  if (!o.keep) rmSync(workDir, { recursive: true, force: true });
}
