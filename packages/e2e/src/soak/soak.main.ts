/**
 * `npm run soak -- --kills N [--seed S] [--drivers D] [--api-kill-ratio R] [--store sqlite|postgres]
 * [--api-instances N] [--db-faults N] [--heartbeat-ttl-ms MS] [--late-restart-ratio R]
 * [--reconciliation on|off] [--entry compiled|tsx] [--keep]`: the real-process kill soak (see soak-runner.ts). Prints progress
 * lines, the seed, one JSON line of counts (soak-counts.ts defines each), and a final line
 * `soak: ok: lost 0, duplicated 0, phantom 0, stuck 0, unknown-but-committed 0, healthy Drivers finalized 0 (...)`
 * (or `soak: FAILED: ...`; the last two are defined in soak-verdicts.ts). Exit code: 0 when all six are 0
 * and recovery finished; 1 otherwise; 2 on bad options (one line; `--api-instances` above 1 and
 * `--db-faults` need `--store postgres`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import type { EntryMode } from "../workspace-paths.js";
import { soakTally, soakVerdictFailed } from "./soak-verdicts.js";
import { DEFAULT_LATE_RESTART_RATIO, DEFAULT_SOAK_HEARTBEAT_TTL_MS, runSoak, type SoakStore } from "./soak-runner.js";

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
  .option(
    "--db-faults <n>",
    "database faults spread over the run (pause 5-20 s, crash and restart, terminate the API's backends); needs --store postgres",
    intIn(0, 10_000),
    0,
  )
  .option("--heartbeat-ttl-ms <ms>", "the API's heartbeat TTL", intIn(1_000, 600_000), DEFAULT_SOAK_HEARTBEAT_TTL_MS)
  .option("--late-restart-ratio <r>", "share of killed Drivers restarted only after the TTL (finalized)", ratio, DEFAULT_LATE_RESTART_RATIO)
  .addOption(
    new Option("--reconciliation <mode>", "the API's effect reconciliation (default: off with --db-faults, on without)").choices([
      "on",
      "off",
    ]),
  )
  .addOption(
    new Option(
      "--entry <mode>",
      "how the API and Driver processes run: their compiled build (scripts/build.mjs, built at the start) or their TypeScript sources through tsx",
    )
      .choices(["compiled", "tsx"])
      .default("compiled"),
  )
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
  dbFaults: number;
  heartbeatTtlMs: number;
  lateRestartRatio: number;
  reconciliation?: "on" | "off";
  entry: EntryMode;
  keep: boolean;
}>();
if (o.apiInstances > 1 && o.store !== "postgres") {
  console.error("soak: --api-instances above 1 needs --store postgres (one API process per SQLite file)");
  process.exit(2);
}
if (o.dbFaults > 0 && o.store !== "postgres") {
  console.error("soak: --db-faults needs --store postgres (the soak faults its own PostgreSQL server; SQLite has no server to fault)");
  process.exit(2);
}
// Off with database faults: a committed result must then reach the ledger through the Driver's outbox, not a lookup.
const reconciliation = (o.reconciliation ?? (o.dbFaults > 0 ? "off" : "on")) === "on";
const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
const workDir = mkdtempSync(join(tmpdir(), "mosoo-soak-"));
console.log(
  `soak: seed ${seed}, ${o.kills} kills, ${o.drivers} Drivers, store ${o.store}, ${o.apiInstances} API instance(s), API kill ratio ${o.apiKillRatio}, ${o.dbFaults} database faults, heartbeat TTL ${o.heartbeatTtlMs} ms, late restart ratio ${o.lateRestartRatio}, reconciliation ${reconciliation ? "on" : "off"}, entry ${o.entry}, work dir ${workDir}`,
);
try {
  const report = await runSoak({
    kills: o.kills,
    seed,
    drivers: o.drivers,
    apiKillRatio: o.apiKillRatio,
    store: o.store,
    apiInstances: o.apiInstances,
    dbFaults: o.dbFaults,
    heartbeatTtlMs: o.heartbeatTtlMs,
    lateRestartRatio: o.lateRestartRatio,
    reconciliation,
    entry: o.entry,
    workDir,
    log: (l) => console.log(l),
  });
  console.log(JSON.stringify({ seed, ...report.counts }));
  if (report.unknownCommitted.length) console.log(`soak: unknown but committed: ${report.unknownCommitted.join(" ")}`);
  if (report.healthyFinalized.length) console.log(`soak: healthy Drivers finalized: ${report.healthyFinalized.join(" ")}`);
  const failed = soakVerdictFailed(report) || !report.recovered;
  const f = report.faults;
  console.log(
    `soak: ${failed ? "FAILED" : "ok"}: ${soakTally(report)}${report.recovered ? "" : ", recovery unfinished"}` +
      ` (${report.counts.effects} effects, ${report.counts.unknown} unknown, ${report.counts.reconciled} reconciled; store ${o.store}, ${o.apiInstances} API instance(s), reconciliation ${reconciliation ? "on" : "off"};` +
      ` ${report.driverKills} Driver kills, ${report.apiKills} API kills; database faults ${f.pause + f.crash + f.terminate}: pause ${f.pause}, crash ${f.crash}, terminate ${f.terminate};` +
      ` Driver restarts: ${report.sameInstanceRestarts} same instance, ${report.finalizations} finalized and replaced; ${report.enqueued} tool calls, wall ${(report.wallMs / 1000).toFixed(1)} s)` +
      (failed
        ? ` (replay: --seed ${seed} --kills ${o.kills} --drivers ${o.drivers} --store ${o.store} --api-instances ${o.apiInstances} --db-faults ${o.dbFaults} --heartbeat-ttl-ms ${o.heartbeatTtlMs} --late-restart-ratio ${o.lateRestartRatio} --reconciliation ${reconciliation ? "on" : "off"} --entry ${o.entry})`
        : ""),
  );
  process.exitCode = failed ? 1 : 0;
} finally {
  if (!o.keep) rmSync(workDir, { recursive: true, force: true });
}
