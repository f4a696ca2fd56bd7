/**
 * `npm run soak -- --kills N [--seed S] [--drivers D] [--api-kill-ratio R] [--keep]`: the real-process
 * kill soak (see soak-runner.ts). Prints progress lines, the seed, then one JSON line of counts
 * (soak-counts.ts defines each). Exit code: 0 when no effect is lost, duplicated, phantom or stuck
 * and recovery finished; 1 otherwise; 2 on bad options.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { soakFailed } from "./soak-counts.js";
import { runSoak } from "./soak-runner.js";

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
  .option("--keep", "keep the work folder (SQLite files) for inspection", false)
  .exitOverride();
try {
  program.parse();
} catch (error) {
  process.exit((error as { exitCode?: number }).exitCode === 0 ? 0 : 2);
}
const o = program.opts<{ kills: number; seed?: number; drivers: number; apiKillRatio: number; keep: boolean }>();
const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
const workDir = mkdtempSync(join(tmpdir(), "mosoo-soak-"));
console.log(`soak: seed ${seed}, ${o.kills} kills, ${o.drivers} Drivers, API kill ratio ${o.apiKillRatio}, work dir ${workDir}`);
try {
  const report = await runSoak({
    kills: o.kills,
    seed,
    drivers: o.drivers,
    apiKillRatio: o.apiKillRatio,
    workDir,
    log: (l) => console.log(l),
  });
  console.log(JSON.stringify({ seed, ...report.counts }));
  console.log(
    `soak: ${report.driverKills} Driver kills, ${report.apiKills} API kills, ${report.finalizations} Driver instances replaced after finalization, ${report.enqueued} tool calls, wall ${(report.wallMs / 1000).toFixed(1)} s`,
  );
  const failed = soakFailed(report.counts) || !report.recovered;
  console.log(failed ? `soak: FAILED (replay: --seed ${seed} --kills ${o.kills})` : "soak: ok (no lost, duplicated or phantom effect)");
  process.exitCode = failed ? 1 : 0;
} finally {
  if (!o.keep) rmSync(workDir, { recursive: true, force: true });
}
