// Bench scenario 2 on PostgreSQL: several API instance processes share the recovery of a backlog of unknown effects.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { entryFile } from "../src/platform/compiled-entry.js";
import { openPostgresStore, type PostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { DEFAULT_GROUP_COMMIT } from "../src/modules/reconciliation/application/outcome-group-commit.service.js";
import { createBenchRuntime, peakRssBytes, progress } from "./bench-store.harness.js";
import { createBenchDatabase, loadAverage, seedEffectsPg } from "./pg-bench.harness.js";
import { createFixedLatencyAdapter } from "./fixed-latency.adapter.js";
import { countStatements, type StatementCounts } from "./pg-recovery.counters.js";
import { createWarmupDatabases, warmUp, WARMUP_EFFECTS } from "./pg-recovery.warmup.js";

/**
 * Options of {@link runPgRecovery}: the server's `adminUrl` (a fresh database is created on it),
 * `effects` unknown effects to recover, the bound adapter's `lookupLatencyMs` (ms), `concurrency`
 * (lookups at once PER instance), `instances` (API processes on the one database), `groupCommitMax`
 * (outcomes per transaction at most; default the API's), `effectsPerRun` (the backlog is spread over
 * effects / effectsPerRun runs; default 10; see `seedEffectsPg` for why one run would serialise it).
 */
export interface PgRecoveryOptions {
  adminUrl: string;
  effects: number;
  lookupLatencyMs: number;
  concurrency: number;
  instances: number;
  groupCommitMax?: number;
  effectsPerRun?: number;
  /** Effects each instance recovers first, untimed, in a database of its own (default {@link WARMUP_EFFECTS}; 0: none). */
  warmupEffects?: number;
}

/**
 * What one API instance process reports ({@link runPgRecoveryInstance}): lookups its passes committed, passes,
 * its own wall time (ms), peak RSS (bytes) and `cpuUs`: its CPU time over the recovery (`process.cpuUsage`, user +
 * system, µs; the API process only, not its sandboxed adapter processes). The breakdown of that CPU:
 * - `idlePasses` / `idlePassCpuUs`: passes that looked nothing up (what was due was leased elsewhere) and the CPU
 *   they took with the bench's check of what is left (µs); the pause between them is not CPU;
 * - `idleCpuUsPerS`: the CPU an instance burns per second of wall time when nothing is due, measured after the
 *   recovery for {@link IDLE_MEASURE_MS} running the same idle passes (µs per s): its fixed overhead;
 * - `quietCpuUsPerS`: the CPU it burns per second with no pass running at all (runtime, pool, timers; µs per s);
 * - `warmCpuUs` / `warmLookups`: the CPU (µs) and adapter calls of the second half of its wall time, when the code is
 *   compiled and the work is steady (the first half carries the process's one-time warm-up: JIT, caches, prepared statements);
 * - `adapterLookups`: calls of the bound adapter (every lookup made, whether its outcome committed or not);
 * - `systemCpuUs`: the kernel part of `cpuUs` (µs); `contextSwitches`: the process's context switches over the recovery;
 * - `timeline`: every {@link TIMELINE_MS}, the wall time (ms), CPU so far (µs) and adapter calls so far;
 * - `statements`: what it sent to the server ({@link StatementCounts}: round trips by kind, rows, failures).
 */
export interface PgRecoveryInstanceResult {
  lookedUp: number;
  passes: number;
  wallMs: number;
  peakRssBytes: number;
  cpuUs: number;
  idlePasses: number;
  idlePassCpuUs: number;
  idleCpuUsPerS: number;
  quietCpuUsPerS: number;
  warmCpuUs: number;
  warmLookups: number;
  adapterLookups: number;
  statements: StatementCounts;
  systemCpuUs: number;
  contextSwitches: { voluntary: number; involuntary: number };
  timeline: Array<{ ms: number; cpuUs: number; lookups: number }>;
}

/**
 * Result of one PostgreSQL recovery run:
 * - `wallMs`: from the moment every instance was told to start until the last one found nothing due (ms);
 * - `boundMs`: N × lookup latency / (concurrency × instances) (ms): all instances' lookup slots busy;
 * - `resolved`: effects no longer `unknown` afterwards (must be all);
 * - `lookupsRecorded`: reconciliation records that are not `superseded` (must equal `effects`: no effect looked up twice);
 * - `superseded`: `superseded` records (reconcilers that lost a race; 0 when the instances claimed disjoint work),
 *   and `supersededReasons` (count by reason code, e.g. a lease that expired under load and was taken over);
 * - `perInstance`: each instance's report; `loadAverage`: the 1-minute load average before and after (null where unknown).
 */
export interface PgRecoveryResult {
  effects: number;
  instances: number;
  concurrency: number;
  lookupLatencyMs: number;
  wallMs: number;
  boundMs: number;
  resolved: number;
  lookupsRecorded: number;
  superseded: number;
  supersededReasons: Record<string, number>;
  perInstance: PgRecoveryInstanceResult[];
  loadAverage: { before: number | null; after: number | null };
}

/** Options of one instance process: the scenario's database `url`, and the runtime's settings (see {@link PgRecoveryOptions}). */
export interface PgRecoveryInstanceOptions {
  url: string;
  /** A database of this instance's own with `unknown` effects it recovers before it says `ready` (untimed; see {@link warmUp}). */
  warmupUrl?: string;
  lookupLatencyMs: number;
  concurrency: number;
  groupCommitMax?: number;
}

/** The messages between the scenario and its instance processes (over the child's IPC channel). */
type InstanceMessage = { type: "ready" } | { type: "go" } | { type: "done"; lookedUp: number };

/** How long (ms) an instance whose pass looked nothing up waits before its next pass while effects are still `unknown`. */
const IDLE_PASS_DELAY_MS = 20;
/** How long (ms) an instance measures its idle CPU after the recovery (passes with nothing due, as while it waited). */
const IDLE_MEASURE_MS = 1_000;
/** How often (ms) an instance samples its CPU and lookups during the recovery (to split off its warm-up). */
const TIMELINE_MS = 250;

const CHILD = entryFile(new URL("./scenario.main.ts", import.meta.url), "scenario.main.js");
/** `MOSOO_BENCH_INSTANCE_PROF_DIR=<folder>`: each instance process runs under `node --cpu-prof`, its profile written there. */
const INSTANCE_PROF_DIR = process.env.MOSOO_BENCH_INSTANCE_PROF_DIR;

/**
 * One API instance (run in its own process by `scenario.main.ts pg-recovery-instance`): opens the
 * PostgreSQL store (no migration: the scenario migrated), builds the real runtime with the
 * fixed-latency adapter bound and reconciliation on, says `ready`, waits for `go`, then runs the
 * real maintenance sweep (`runtime.sweep.sweepOnce()`) pass after pass, as the API's sweep timer would
 * with a short interval: a pass that looked nothing up (what was due is leased by other instances) is
 * followed, {@link IDLE_PASS_DELAY_MS} later, by another, until no effect is `unknown` any more
 * (leases of a dead instance would expire and become due again). Then it says `done` and closes the store.
 */
export async function runPgRecoveryInstance(opts: PgRecoveryInstanceOptions): Promise<PgRecoveryInstanceResult> {
  const send = (m: InstanceMessage) => process.send?.(m);
  // the bench's fixed-latency adapter, counting its calls (a lookup made twice would show here)
  const inner = createFixedLatencyAdapter(opts.lookupLatencyMs);
  let adapterLookups = 0;
  const runtimeOn = (store: PostgresStore) =>
    createBenchRuntime(store, {
      reconciliation: true,
      lookupLatencyMs: opts.lookupLatencyMs,
      concurrency: opts.concurrency,
      adapter: {
        declaration: inner.declaration,
        lookup: (request, context) => {
          adapterLookups += 1;
          return inner.lookup(request, context);
        },
      },
      ...(opts.groupCommitMax === undefined ? {} : { groupCommit: { ...DEFAULT_GROUP_COMMIT, maxBatch: opts.groupCommitMax } }),
    });
  if (opts.warmupUrl !== undefined) {
    await warmUp(opts.warmupUrl, runtimeOn);
    adapterLookups = 0;
  }
  const store = await openPostgresStore(opts.url, { migrate: false, applicationName: `mosoo-bench-api-${process.pid}` });
  try {
    const runtime = runtimeOn(store);
    const go = new Promise<void>((resolve) => process.once("message", () => resolve()));
    send({ type: "ready" });
    await go;
    const counter = countStatements();
    const ru0 = process.resourceUsage();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    let passes = 0;
    let lookedUp = 0;
    let idlePasses = 0;
    let idlePassCpuUs = 0;
    const cpuSince = (c: NodeJS.CpuUsage) => {
      const d = process.cpuUsage(c);
      return d.user + d.system;
    };
    const unknownLeft = async () =>
      Number((await store.pool.query("SELECT count(*) AS n FROM external_tool_effects WHERE status = 'unknown'")).rows[0].n);
    // CPU and adapter calls every TIMELINE_MS: the second half of the wall time is the warm part
    const timeline: Array<{ ms: number; cpuUs: number; lookups: number }> = [];
    const sample = () => timeline.push({ ms: performance.now() - t0, cpuUs: cpuSince(cpu0), lookups: adapterLookups });
    const sampler = setInterval(sample, TIMELINE_MS);
    for (;;) {
      passes += 1;
      const passCpu = process.cpuUsage();
      const report = await runtime.sweep.sweepOnce();
      lookedUp += report.effectsLookedUp;
      if (report.effectsLookedUp > 0) continue;
      const left = await unknownLeft();
      idlePasses += 1;
      idlePassCpuUs += cpuSince(passCpu);
      if (left === 0) break;
      await new Promise((resolve) => setTimeout(resolve, IDLE_PASS_DELAY_MS));
    }
    clearInterval(sampler);
    const wallMs = performance.now() - t0;
    const cpuUs = cpuSince(cpu0);
    const systemCpuUs = process.cpuUsage(cpu0).system;
    const ru = process.resourceUsage();
    const contextSwitches = {
      voluntary: ru.voluntaryContextSwitches - ru0.voluntaryContextSwitches,
      involuntary: ru.involuntaryContextSwitches - ru0.involuntaryContextSwitches,
    };
    const statements = counter.stop();
    const mid = timeline.find((p) => p.ms >= wallMs / 2) ?? { ms: wallMs, cpuUs, lookups: adapterLookups };
    send({ type: "done", lookedUp });
    // the fixed overhead: the same idle passes, nothing due, for IDLE_MEASURE_MS
    const idle0 = process.cpuUsage();
    const idleT0 = performance.now();
    while (performance.now() - idleT0 < IDLE_MEASURE_MS) {
      await runtime.sweep.sweepOnce();
      await unknownLeft();
      await new Promise((resolve) => setTimeout(resolve, IDLE_PASS_DELAY_MS));
    }
    const idleCpuUsPerS = (cpuSince(idle0) * 1000) / (performance.now() - idleT0);
    const quiet0 = process.cpuUsage();
    const quietT0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, IDLE_MEASURE_MS / 2));
    const quietCpuUsPerS = (cpuSince(quiet0) * 1000) / (performance.now() - quietT0);
    return {
      lookedUp,
      passes,
      wallMs,
      peakRssBytes: peakRssBytes(),
      cpuUs,
      idlePasses,
      idlePassCpuUs,
      idleCpuUsPerS,
      quietCpuUsPerS,
      warmCpuUs: cpuUs - mid.cpuUs,
      warmLookups: adapterLookups - mid.lookups,
      adapterLookups,
      statements,
      systemCpuUs,
      contextSwitches,
      timeline,
    };
  } finally {
    await store.close();
  }
}

/** Waits for `message` of type `type` from `child`; rejects when the child exits first. */
function nextMessage(child: ChildProcess, type: InstanceMessage["type"]): Promise<InstanceMessage> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: InstanceMessage) => {
      if (m.type !== type) return;
      child.off("message", onMessage);
      child.off("exit", onExit);
      resolve(m);
    };
    const onExit = (code: number | null) => reject(new Error(`instance process exited with ${code} before "${type}"`));
    child.on("message", onMessage);
    child.once("exit", onExit);
  });
}

/** Seeds `opts.effects` `unknown` effects (`effectsPerRun` per run, default 10) into the fresh database through the store's own pool. */
async function seedUnknownPg(url: string, opts: PgRecoveryOptions): Promise<void> {
  const store = await openPostgresStore(url, { applicationName: "mosoo-bench-seed" });
  try {
    progress(`pg recovery: seeding ${opts.effects} unknown effects`);
    await seedEffectsPg(store.pool, {
      count: opts.effects,
      status: "unknown",
      runs: Math.ceil(opts.effects / (opts.effectsPerRun ?? 10)),
    });
  } finally {
    await store.close();
  }
}

/** Spawns `opts.instances` instance processes (`scenario.main.ts pg-recovery-instance`, with IPC) into `children`; returns their result files under `dir`. */
function spawnInstances(
  url: string,
  warmupUrls: readonly string[],
  opts: PgRecoveryOptions,
  dir: string,
  children: ChildProcess[],
): string[] {
  const outFiles: string[] = [];
  const profileArgs = INSTANCE_PROF_DIR === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${INSTANCE_PROF_DIR}`];
  for (let i = 0; i < opts.instances; i++) {
    const out = join(dir, `instance-${i}.json`);
    outFiles.push(out);
    const instanceOpts: PgRecoveryInstanceOptions = {
      url,
      ...(warmupUrls[i] === undefined ? {} : { warmupUrl: warmupUrls[i] }),
      lookupLatencyMs: opts.lookupLatencyMs,
      concurrency: opts.concurrency,
      ...(opts.groupCommitMax === undefined ? {} : { groupCommitMax: opts.groupCommitMax }),
    };
    children.push(
      spawn(process.execPath, [...profileArgs, ...CHILD.nodeArgs, CHILD.path, "pg-recovery-instance", JSON.stringify(instanceOpts), out], {
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      }),
    );
  }
  return outFiles;
}

/** Counts the recorded reconciliations: lookups (every record but `superseded`), and `superseded` ones in total and by reason code (`none` when null). */
async function countReconciliations(
  admin: pg.Pool,
): Promise<{ lookupsRecorded: number; superseded: number; supersededReasons: Record<string, number> }> {
  const records = await admin.query<{ outcome: string; reason: string | null; n: string }>(
    "SELECT outcome, reason_code AS reason, count(*) AS n FROM effect_reconciliations GROUP BY outcome, reason_code",
  );
  const supersededRows = records.rows.filter((r) => r.outcome === "superseded");
  const superseded = supersededRows.reduce((s, r) => s + Number(r.n), 0);
  const supersededReasons = Object.fromEntries(supersededRows.map((r) => [r.reason ?? "none", Number(r.n)]));
  const lookupsRecorded = records.rows.reduce((s, r) => s + Number(r.n), 0) - superseded;
  return { lookupsRecorded, superseded, supersededReasons };
}

/**
 * Scenario 2 on PostgreSQL: `effects` `unknown` effects seeded into a fresh database, recovered by
 * `instances` API processes at once (each {@link runPgRecoveryInstance}, its own pool, reconciler
 * and concurrency), which share the backlog through the per-effect reconciliation leases. Process
 * start-up and the store's opening are outside the timed window (every instance says `ready` first).
 */
export async function runPgRecovery(opts: PgRecoveryOptions): Promise<PgRecoveryResult> {
  const db = await createBenchDatabase(opts.adminUrl, "bench_recovery");
  const dir = mkdtempSync(join(tmpdir(), "mosoo-bench-pg-recovery-"));
  const children: ChildProcess[] = [];
  const admin = new pg.Pool({ connectionString: db.url, max: 1, application_name: "mosoo-bench-check" });
  const warmupEffects = opts.warmupEffects ?? WARMUP_EFFECTS;
  const warmups = await createWarmupDatabases(opts.adminUrl, warmupEffects > 0 ? opts.instances : 0);
  try {
    await seedUnknownPg(db.url, opts);
    for (const w of warmups) await seedUnknownPg(w.url, { ...opts, effects: warmupEffects });
    progress(`pg recovery: starting ${opts.instances} API instance process(es), each warming up on ${warmupEffects} effects of its own`);
    const outFiles = spawnInstances(
      db.url,
      warmups.map((w) => w.url),
      opts,
      dir,
      children,
    );
    await Promise.all(children.map((c) => nextMessage(c, "ready")));
    const exited = children.map(
      (c) => new Promise<number | null>((resolve) => (c.exitCode !== null ? resolve(c.exitCode) : c.once("exit", (code) => resolve(code)))),
    );
    const countUnknown = async () =>
      Number((await admin.query("SELECT count(*) AS n FROM external_tool_effects WHERE status = 'unknown'")).rows[0].n);
    progress(
      `pg recovery: recovering ${opts.effects} effects with ${opts.instances} instance(s) × concurrency ${opts.concurrency}, lookup ${opts.lookupLatencyMs} ms`,
    );
    const before = loadAverage()?.[0] ?? null;
    const t0 = performance.now();
    const done = children.map((c) => nextMessage(c, "done").then(() => performance.now()));
    for (const c of children) c.send({ type: "go" } satisfies InstanceMessage);
    const ticker = setInterval(() => {
      void countUnknown().then(
        (n) => progress(`pg recovery: ${opts.effects - n} resolved after ${Math.round(performance.now() - t0)} ms`),
        () => undefined,
      );
    }, 3_000);
    let doneAt: number[];
    try {
      doneAt = await Promise.all(done);
    } finally {
      clearInterval(ticker);
    }
    const wallMs = Math.max(...doneAt) - t0;
    const after = loadAverage()?.[0] ?? null;
    const codes = await Promise.all(exited);
    if (codes.some((c) => c !== 0)) throw new Error(`an instance process exited with ${codes.join("/")}`);
    const perInstance = outFiles.map((f) => JSON.parse(readFileSync(f, "utf8")) as PgRecoveryInstanceResult);
    const { lookupsRecorded, superseded, supersededReasons } = await countReconciliations(admin);
    return {
      effects: opts.effects,
      instances: opts.instances,
      concurrency: opts.concurrency,
      lookupLatencyMs: opts.lookupLatencyMs,
      wallMs,
      boundMs: (opts.effects * opts.lookupLatencyMs) / (opts.concurrency * opts.instances),
      resolved: opts.effects - (await countUnknown()),
      lookupsRecorded,
      superseded,
      supersededReasons,
      perInstance,
      loadAverage: { before, after },
    };
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    await admin.end().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    for (const w of warmups) await w.drop();
    await db.drop();
  }
}
