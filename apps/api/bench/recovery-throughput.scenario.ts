// Bench scenario 2 on SQLite: how fast the maintenance sweep reconciles a backlog of seeded unknown effects.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../src/platform/db/sqlite/sqlite-store.js";
import { entryFile } from "../src/platform/compiled-entry.js";
import { DEFAULT_GROUP_COMMIT } from "../src/modules/reconciliation/application/outcome-group-commit.service.js";
import {
  bindSandboxedBenchAdapter,
  createBenchRuntime,
  installDbTimeMeter,
  measureBareCommitUs,
  childRssBytes,
  peakRssBytes,
  progress,
} from "./bench-store.harness.js";

/** Options: `effects` unknown effects to recover, the bound adapter's `lookupLatencyMs` (ms), `concurrency`, and the flag. */
export interface RecoveryOptions {
  effects: number;
  lookupLatencyMs: number;
  concurrency: number;
  reconciliation: boolean;
  /** Outcomes per transaction at most (default: the API's default); 1 = each outcome alone (before group commit). */
  groupCommitMax?: number;
}

/**
 * Result of one recovery run (one process):
 * - `wallMs`: from the first sweep pass until a pass finds nothing due (ms);
 * - `boundMs`: N × lookup latency / concurrency (ms; 0 with the flag off);
 * - `passes`: maintenance sweep passes it took;
 * - `resolved`: effects that left `unknown` (all of them, with the flag on; none with it off);
 * - `dbMsTotal` / `dbUsPerOutcome`: time inside SQLite (ms in all; µs per resolved effect);
 * - `peakRssBytes`: the measuring process's peak RSS (bytes; seeding ran in another process);
 * - `rssBeforeBytes`: its RSS just before the first pass (bytes).
 */
export interface RecoveryResult {
  effects: number;
  reconciliation: boolean;
  wallMs: number;
  boundMs: number;
  passes: number;
  resolved: number;
  dbMsTotal: number;
  dbUsPerOutcome: number;
  peakRssBytes: number;
  rssBeforeBytes: number;
  /** Committed write transactions per resolved effect (deterministic: the fsyncs per outcome). */
  commitsPerOutcome: number;
  /** SQL statement calls per resolved effect (BEGIN and COMMIT included). */
  statementsPerOutcome: number;
  /** Median bare single-row commit (µs) in the same file, measured before and after the recovery. */
  bareCommitUs: { before: number; after: number };
  /** The costliest SQL statements of the run (ms in all, calls), see `DbTimeMeter.topStatements`. */
  topStatements: Array<{ sql: string; ms: number; calls: number }>;
  /** CPU time of this process (the API: user + system, `process.cpuUsage`) per resolved effect over the recovery (ms; its adapter processes not included). */
  cpuMsPerOutcome: number;
  /** CPU time (user + system) of the sandboxed adapter processes over the recovery, per resolved effect (ms; `/proc`, 10 ms ticks). */
  adapterCpuMsPerOutcome: number;
  /** Sandboxed adapter processes alive at the end of the run, and their median resident memory (bytes). */
  adapterProcesses: number;
  adapterRssMedianBytes: number;
}

const SEED_SCRIPT = entryFile(new URL("./seed-unknown.main.ts", import.meta.url), "seed-unknown.main.js");

/**
 * Scenario 2: `effects` `unknown` effects (never looked up, bound to the fixed-latency adapter)
 * are seeded by a separate process, then this process recovers them through the real maintenance
 * sweep (`runtime.sweep.sweepOnce()`, the reconciliation sweep, the reconciler, one outcome
 * transaction per effect) until a pass finds nothing due.
 */
export async function runRecovery(opts: RecoveryOptions): Promise<RecoveryResult> {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-bench-recovery-"));
  const file = join(dir, "bench.db");
  try {
    progress(`recovery: seeding ${opts.effects} unknown effects (separate process)`);
    const seeded = spawnSync(process.execPath, [...SEED_SCRIPT.nodeArgs, SEED_SCRIPT.path, file, String(opts.effects)], {
      stdio: ["ignore", "inherit", "inherit"],
    });
    if (seeded.status !== 0) throw new Error(`seeding failed with status ${seeded.status}`);
    const store = openSqliteStore(file);
    const bareBefore = measureBareCommitUs(store.sqlite);
    const meter = installDbTimeMeter(store.sqlite);
    // lookups through the API's sandbox (child processes), warmed by the bind itself
    const sandbox = opts.reconciliation ? await bindSandboxedBenchAdapter(opts.lookupLatencyMs, opts.concurrency) : undefined;
    const runtime = createBenchRuntime(store, {
      ...(sandbox ? { adapter: sandbox.adapter } : {}),
      reconciliation: opts.reconciliation,
      lookupLatencyMs: opts.lookupLatencyMs,
      concurrency: opts.concurrency,
      ...(opts.groupCommitMax === undefined ? {} : { groupCommit: { ...DEFAULT_GROUP_COMMIT, maxBatch: opts.groupCommitMax } }),
    });
    const countUnknown = store.sqlite.prepare("SELECT count(*) AS n FROM external_tool_effects WHERE status = 'unknown'").pluck();
    global.gc?.();
    const rssBeforeBytes = process.memoryUsage().rss;
    progress(
      `recovery: recovering ${opts.effects} effects, flag ${opts.reconciliation ? "on" : "off"}, concurrency ${opts.concurrency}, lookup ${opts.lookupLatencyMs} ms`,
    );
    meter.reset();
    const adapterCpu0 = adapterCpuMs();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const ticker = setInterval(
      () =>
        progress(
          `recovery: ${opts.effects - (countUnknown.get() as number)} resolved after ${Math.round(performance.now() - t0)} ms, rss ${Math.round(process.memoryUsage().rss / 1048576)} MB, heap ${Math.round(process.memoryUsage().heapUsed / 1048576)} MB, WAL ${Math.round((statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0) / 1048576)} MB`,
        ),
      3_000,
    );
    let passes = 0;
    try {
      for (;;) {
        passes += 1;
        const report = await runtime.sweep.sweepOnce();
        if (report.effectsLookedUp === 0) break;
      }
    } finally {
      clearInterval(ticker);
    }
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const adapterCpu = adapterCpuMs() - adapterCpu0;
    const dbMsTotal = meter.totalMs();
    const topStatements = meter.topStatements(8);
    const counts = meter.counts();
    const resolved = opts.effects - (countUnknown.get() as number);
    const bareAfter = measureBareCommitUs(store.sqlite);
    const adapterRss = childRssBytes();
    await sandbox?.host.close();
    store.closeNow();
    return {
      effects: opts.effects,
      reconciliation: opts.reconciliation,
      wallMs,
      boundMs: opts.reconciliation ? (opts.effects * opts.lookupLatencyMs) / opts.concurrency : 0,
      passes,
      resolved,
      dbMsTotal,
      dbUsPerOutcome: resolved > 0 ? (dbMsTotal * 1000) / resolved : 0,
      peakRssBytes: peakRssBytes(),
      rssBeforeBytes,
      commitsPerOutcome: resolved > 0 ? counts.commits / resolved : 0,
      statementsPerOutcome: resolved > 0 ? counts.statements / resolved : 0,
      bareCommitUs: { before: bareBefore, after: bareAfter },
      topStatements,
      cpuMsPerOutcome: resolved > 0 ? (cpu.user + cpu.system) / 1000 / resolved : 0,
      adapterCpuMsPerOutcome: resolved > 0 ? adapterCpu / resolved : 0,
      adapterProcesses: adapterRss.length,
      adapterRssMedianBytes: adapterRss.length > 0 ? adapterRss.sort((a, b) => a - b)[Math.floor(adapterRss.length / 2)]! : 0,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU time (user + system, ms) of this process's node children (the sandboxed adapter processes) from `/proc`; 0 where there is none. */
function adapterCpuMs(): number {
  let total = 0;
  let pids: string[] = [];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) !== process.pid || !stat.includes("(node)")) continue;
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}
