/**
 * Scenario 4 on PostgreSQL: the costs that follow a store's history. The SQLite history scenario's measurements
 * (store open, lifecycle on the long-lived Driver, empty delivery check, console overview, idle sweep pass) on
 * a fresh database with no history and on one filled by `fillHistoryPg`, plus the round trips of each
 * operation and its CPU time (the API process's, and the server backends' where the server runs on this machine).
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { createBenchRuntime, progress } from "./bench-store.harness.js";
import {
  fillProgress,
  HISTORY_TASKS,
  measureHistory,
  type HistoryOptions,
  type HistoryResult,
  type HistoryTask,
  type HistorySideFns,
  type PreparedHistoryStore,
} from "./history-store.measure.js";
import { NO_HISTORY, type HistoryCounts } from "./history-store.rows.js";
import { fillHistoryPg } from "./pg-history.generator.js";
import { capturePg, checkPgPlans, reportPlanCheck, type CapturedQuery, type PlanCheck } from "./history-plans.js";
import { createBenchDatabase, loadAverage, seedEffectsPg } from "./pg-bench.harness.js";
import { countRoundTrips } from "./pg-round-trips.js";

/**
 * Options of {@link runPgHistory}: the SQLite scenario's, the server's `adminUrl` (fresh databases are created
 * on it) and `serverCpu`: whether the server's backends are processes of this machine whose CPU time
 * `/proc/<pid>/stat` shows (true for the bench's throwaway server; false for an operator's, which may be elsewhere).
 */
export interface PgHistoryOptions extends HistoryOptions {
  adminUrl: string;
  serverCpu: boolean;
}

/** CPU time of one operation (µs): the API process's (`process.cpuUsage`) and the database backends' (null when not measurable). */
export interface OperationCpu {
  apiUs: number;
  serverUs: number | null;
}

/** One side's extra figures: round trips per operation (a count) and CPU per operation. */
interface PgHistorySideExtras {
  roundTrips: Record<HistoryTask, number>;
  cpu: Record<HistoryTask, OperationCpu>;
}

/**
 * Result of {@link runPgHistory}: the SQLite scenario's shape (`fileBytes` is the filled database's
 * `pg_database_size`), each side's round trips and CPU per operation, and the 1-minute load average at the end.
 */
export interface PgHistoryResult extends HistoryResult {
  extras: { empty: PgHistorySideExtras; filled: PgHistorySideExtras };
  loadAverage: number | null;
}

/** Linux's clock ticks per second of `/proc/<pid>/stat` CPU times (`CLK_TCK`, 100 on every mainstream kernel build). */
const CLOCK_TICKS_PER_S = 100;

/** CPU time (µs, user + system) of process `pid` from `/proc/<pid>/stat`, or 0 when it is gone. */
function processCpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields from the 3rd on: utime is the 14th field, stime the 15th
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS_PER_S;
  } catch {
    return 0;
  }
}

/** The summed CPU time (µs) of every backend connected to `pool`'s database, by pid. */
async function backendCpu(pool: pg.Pool): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database()");
  return new Map(rows.map((r) => [r.pid, processCpuUs(r.pid)]));
}

/** Runs `fn` for at least `minMs` and 20 calls; returns its CPU time per call (µs), the API's and (when `server`) the backends'. */
async function cpuPerCall(fn: () => Promise<unknown>, pool: pg.Pool, server: boolean, minMs = 1_000): Promise<OperationCpu> {
  const before = server ? await backendCpu(pool) : undefined;
  const api0 = process.cpuUsage();
  const t0 = performance.now();
  let calls = 0;
  while (calls < 20 || performance.now() - t0 < minMs) {
    await fn();
    calls += 1;
  }
  const api = process.cpuUsage(api0);
  let serverUs: number | null = null;
  if (before) {
    const after = await backendCpu(pool);
    serverUs = 0;
    for (const [pid, us] of after) serverUs += us - (before.get(pid) ?? 0);
    serverUs /= calls;
  }
  return { apiUs: (api.user + api.system) / calls, serverUs };
}

/** A database built for the scenario: the prepared store, how to drop it, row counts, size (bytes) and fill time (ms). */
interface BuiltDatabase {
  prepared: PreparedHistoryStore<PostgresStore>;
  drop(): Promise<void>;
  counts: HistoryCounts;
  fileBytes: number;
  fillMs: number;
}

/** Builds one database (filled or not) with its long-lived Driver registered through the API, vacuumed, analyzed and checkpointed. */
async function buildDatabase(opts: PgHistoryOptions, filled: boolean): Promise<BuiltDatabase> {
  const db = await createBenchDatabase(opts.adminUrl, filled ? "bench_history_filled" : "bench_history_empty");
  try {
    // store open as the API starts: connect, migration check under the advisory lock, the pool's first connection
    const open = () => openPostgresStore(db.url, { applicationName: "mosoo-bench-history" });
    const store = await open();
    let driverToken: string;
    let counts: HistoryCounts = { ...NO_HISTORY };
    let fillMs = 0;
    try {
      ({ driverToken } = await createBenchRuntime(store, { reconciliation: true, lookupLatencyMs: 10, concurrency: 64 }).drivers.register(
        { name: "long-lived" },
        { kind: "enrollment" },
      ));
      const longLivedId = (await store.pool.query<{ id: string }>("SELECT id FROM driver_instances WHERE name = 'long-lived'")).rows[0]!.id;
      const t0 = performance.now();
      if (filled)
        counts = await fillHistoryPg(
          store.pool,
          {
            effects: opts.effects,
            finalizedDrivers: opts.finalizedDrivers,
            longLived: { driverInstanceId: longLivedId, commands: opts.longLivedCommands },
          },
          fillProgress(opts.effects, t0),
        );
      fillMs = performance.now() - t0;
    } finally {
      await store.close();
    }
    // on a connection of its own, without the store's statement timeout:
    // what autovacuum does to a store that has stood a while (statistics, the visibility map), then a clean checkpoint
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    const v0 = performance.now();
    await admin.query("VACUUM ANALYZE");
    await admin.query("CHECKPOINT").catch(() => undefined);
    if (filled) progress(`history: VACUUM ANALYZE and CHECKPOINT in ${((performance.now() - v0) / 1000).toFixed(1)} s`);
    const fileBytes = Number((await admin.query<{ n: string }>("SELECT pg_database_size(current_database())::text AS n")).rows[0]!.n);
    await admin.end();
    if (filled)
      progress(`history: filled ${JSON.stringify(counts)} in ${(fillMs / 1000).toFixed(1)} s, database ${(fileBytes / 1e6).toFixed(0)} MB`);
    return {
      prepared: {
        open,
        close: (s) => s.close(),
        driverToken,
        seedUnknown: async (s, n) => {
          // no ANALYZE after each seeding: a database-wide one at 1M effects outlasts the store's statement timeout
          await seedEffectsPg(s.pool, { count: n, status: "unknown", runs: Math.max(1, Math.ceil(n / 10)), analyze: false });
        },
      },
      drop: () => db.drop(),
      counts,
      fileBytes,
      fillMs,
    };
  } catch (err) {
    await db.drop().catch(() => undefined);
    throw err;
  }
}

/**
 * Round trips and CPU per operation of both sides, before the rounds: each task warmed on both sides first
 * (JIT, prepared statements, pooled connections), then counted, then its CPU measured twice per side in
 * the order empty, filled, empty, filled (the two calls' CPU summed), so neither side pays the warm-up.
 */
async function sidesExtras(
  sides: Record<"empty" | "filled", HistorySideFns & { store: PostgresStore; recover(n: number): Promise<number> }>,
  serverCpu: boolean,
): Promise<PgHistoryResult["extras"] & { planCheck: PlanCheck }> {
  const names = ["empty", "filled"] as const;
  const captured = new Map<string, CapturedQuery>();
  for (const task of HISTORY_TASKS) await capturePg(captured, task, sides.filled.fns[task]);
  await capturePg(captured, "recovery", () => sides.filled.recover(20));
  const planCheck = await checkPgPlans(sides.filled.store.pool, captured);
  reportPlanCheck(planCheck);
  const out = {
    empty: { roundTrips: {}, cpu: {} } as PgHistorySideExtras,
    filled: { roundTrips: {}, cpu: {} } as PgHistorySideExtras,
  };
  for (const task of HISTORY_TASKS) {
    for (const name of names) await sides[name].heartbeat();
    for (const name of names) for (let i = 0; i < 5; i++) await sides[name].fns[task]();
    for (const name of names) out[name].roundTrips[task] = await countRoundTrips(sides[name].fns[task]);
    const parts: Record<"empty" | "filled", OperationCpu[]> = { empty: [], filled: [] };
    for (let i = 0; i < 2; i++)
      for (const name of names) parts[name].push(await cpuPerCall(sides[name].fns[task], sides[name].store.pool, serverCpu, 500));
    for (const name of names) {
      const [a, b] = parts[name] as [OperationCpu, OperationCpu];
      out[name].cpu[task] = {
        apiUs: (a.apiUs + b.apiUs) / 2,
        serverUs: a.serverUs === null || b.serverUs === null ? null : (a.serverUs + b.serverUs) / 2,
      };
    }
  }
  return { ...out, planCheck };
}

/** Runs the scenario on PostgreSQL: builds the filled database and the empty one, measures them side by side, drops both. */
export async function runPgHistory(opts: PgHistoryOptions): Promise<PgHistoryResult> {
  progress(`history (PostgreSQL): filling ${opts.effects} effects`);
  const filled = await buildDatabase(opts, true);
  try {
    const empty = await buildDatabase(opts, false);
    try {
      progress("history (PostgreSQL): measuring the empty and the filled database side by side");
      let extras: (PgHistoryResult["extras"] & { planCheck: PlanCheck }) | undefined;
      const sides = await measureHistory(empty.prepared, filled.prepared, opts, {
        beforeRounds: async (both) => {
          extras = await sidesExtras(both, opts.serverCpu);
        },
      });
      return {
        longLivedCommands: opts.longLivedCommands,
        recoveryEffects: opts.recoveryEffects,
        ...sides,
        counts: filled.counts,
        fileBytes: filled.fileBytes,
        fillMs: filled.fillMs,
        extras: { empty: extras!.empty, filled: extras!.filled },
        planCheck: extras!.planCheck,
        loadAverage: loadAverage()?.[0] ?? null,
      };
    } finally {
      await empty.drop();
    }
  } finally {
    await filled.drop();
  }
}
