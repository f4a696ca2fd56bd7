// The bench's SQLite test bed: a fresh file-backed store, the real runtime with a fixed-latency adapter, raw seeding and timing meters.
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import { NOOP_LOGGER, type AdapterHost } from "@mosoo/effect-reconciliation/host";
import type Database from "better-sqlite3";
import pino from "pino";
import { newUlid } from "@mosoo/contracts";
import { openSqliteStore, type SqliteStore as Store } from "../src/platform/db/sqlite/sqlite-store.js";
import { createRuntime, type Runtime } from "../src/composition-root.js";
import type { Store as AnyStore } from "../src/platform/db/store.port.js";
import { RECONCILIATION_OFF } from "../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { BENCH_BOUND_SERVER, BENCH_TOOL, createFixedLatencyAdapter } from "./fixed-latency.adapter.js";
import { adapterProcessBudget, createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";
import type { GroupCommitSettings } from "../src/modules/reconciliation/application/outcome-group-commit.service.js";

/** A file-backed store in a fresh temp folder (WAL, synchronous=FULL, as in production) and how to drop it. */
export type BenchStore = Store & {
  /** The SQLite file's path. */
  file: string;
  /** Closes the store and deletes its folder. */
  dispose(): void;
};

/** Opens and migrates a fresh file-backed store under the OS temp folder, through the real {@link openSqliteStore}. */
export function openBenchStore(): BenchStore {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-bench-"));
  const file = join(dir, "bench.db");
  const store = openSqliteStore(file);
  return Object.assign(store, {
    file,
    dispose: () => {
      store.closeNow();
      rmSync(dir, { recursive: true, force: true });
    },
  });
}

/**
 * Options of {@link createBenchRuntime}: `reconciliation` on or off (the feature flag),
 * `lookupLatencyMs` (ms, the bound adapter's fixed lookup time) and `concurrency` (lookups at once).
 */
export interface BenchRuntimeOptions {
  reconciliation: boolean;
  lookupLatencyMs: number;
  concurrency: number;
  /** Group commit of outcomes (default: the API's, `DEFAULT_GROUP_COMMIT`); `maxBatch: 1` commits each alone, as before group commit. */
  groupCommit?: GroupCommitSettings;
  /** The bound adapter (default: the fixed-latency adapter in this process); the recovery rows pass one bound through the sandboxing host. */
  adapter?: ReconciliationAdapter;
}

/**
 * The fixed-latency adapter bound through the API's sandboxing adapter host (`createIsolatedAdapterHost`,
 * as `startApi` does): its lookups run in sandboxed child processes, spread as the API spreads them (`adapterProcessBudget`).
 * Returns the bound adapter and the host (close it when done).
 */
export async function bindSandboxedBenchAdapter(
  lookupLatencyMs: number,
  concurrency: number,
): Promise<{ adapter: ReconciliationAdapter; host: AdapterHost }> {
  const host = createIsolatedAdapterHost({
    heapMb: 64,
    cpuLimitMs: 2_000,
    ...adapterProcessBudget(concurrency),
    bindTimeoutMs: 60_000,
    logger: NOOP_LOGGER,
  });
  const source = { module: fileURLToPath(new URL("./fixed-latency.adapter.ts", import.meta.url)), export: "fixedLatencyAdapterFactory" };
  const { adapter } = await host.bind(source, { latencyMs: lookupLatencyMs });
  return { adapter, host };
}

/**
 * The real runtime (`createRuntime`) on `store` (SQLite or PostgreSQL), silent logger, with server {@link BENCH_BOUND_SERVER}
 * bound to a fixed-latency adapter when reconciliation is on (the binding exists either way; the
 * flag alone decides). Lookup timeout 5000 ms, lease 15000 ms, as the API's defaults.
 */
export function createBenchRuntime(store: AnyStore, opts: BenchRuntimeOptions): Runtime {
  return createRuntime({
    store,
    logger: pino({ level: "silent" }),
    heartbeatTtlMs: 60_000,
    reconciliation: {
      ...RECONCILIATION_OFF,
      enabled: opts.reconciliation,
      concurrency: opts.concurrency,
      bindings: new Map([[BENCH_BOUND_SERVER, opts.adapter ?? createFixedLatencyAdapter(opts.lookupLatencyMs)]]),
      ...(opts.groupCommit ? { groupCommit: opts.groupCommit } : {}),
    },
  });
}

/**
 * What {@link seedEffects} writes: `count` effects of one new Driver instance (with its session,
 * one run and one command per effect), all in `status`; `unknown` ones look like the output of a
 * finalization with the flag off (command failed, attempt 1 unknown, never looked up);
 * `succeeded` ones like a normal completed call. `serverId` defaults to the bound server.
 */
export interface SeedEffectsOptions {
  count: number;
  status: "unknown" | "succeeded";
  serverId?: string;
  /** Rows per seeding transaction (default 20 000). */
  batch?: number;
}

/**
 * Inserts rows directly with raw prepared SQL in big transactions (seeding is not measured).
 * Returns the Driver instance id and run id it created. Times are `Date.now()` minus one minute.
 */
export function seedEffects(sqlite: Database.Database, opts: SeedEffectsOptions): { driverInstanceId: string; runId: string } {
  const now = Date.now() - 60_000;
  const driverInstanceId = newUlid(now);
  const sessionId = newUlid(now);
  const runId = newUlid(now);
  const serverId = opts.serverId ?? BENCH_BOUND_SERVER;
  const fingerprint = createHash("sha256").update("{}").digest("hex");
  sqlite
    .prepare(
      "INSERT INTO driver_instances (id, name, status, token_hash, registered_at_ms, finalized_at_ms) VALUES (?, 'seed', 'finalized', ?, ?, ?)",
    )
    .run(driverInstanceId, fingerprint, now, now);
  sqlite.prepare("INSERT INTO sessions (id, created_at_ms) VALUES (?, ?)").run(sessionId, now);
  sqlite
    .prepare(
      "INSERT INTO session_runs (id, session_id, driver_instance_id, status, error_json, created_at_ms, updated_at_ms) VALUES (?, ?, ?, 'failed', '{}', ?, ?)",
    )
    .run(runId, sessionId, driverInstanceId, now, now);
  const insCommand = sqlite.prepare(
    `INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, result_json, error_json, created_at_ms, updated_at_ms, terminal_at_ms)
     VALUES (?, ?, ?, ?, 'mcp.execute', ?, '{}', ?, ?, ?, ?, ?)`,
  );
  const insEffect = sqlite.prepare(
    `INSERT INTO external_tool_effects (id, command_id, run_id, driver_instance_id, server_id, tool_name, tool_call_id, request_id, arguments_json,
       idempotency_key, request_fingerprint, status, resolution, version, attempt_count, result_json, first_dispatched_at_ms, last_dispatched_at_ms, created_at_ms, updated_at_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{}', ?, ?, ?, ?, 2, 1, ?, ?, ?, ?, ?)`,
  );
  const insAttempt = sqlite.prepare(
    "INSERT INTO external_tool_effect_attempts (effect_id, attempt, status, connection_id, started_at_ms, finished_at_ms) VALUES (?, 1, ?, 'seed-connection', ?, ?)",
  );
  const succeeded = opts.status === "succeeded";
  const result = JSON.stringify({ outputText: "ok", requestId: "seed", serverId, toolName: BENCH_TOOL });
  const batch = opts.batch ?? 20_000;
  let seq = 0;
  const insertBatch = sqlite.transaction((n: number) => {
    for (let i = 0; i < n; i++) {
      seq += 1;
      const commandId = newUlid(now);
      const effectId = newUlid(now);
      insCommand.run(
        commandId,
        driverInstanceId,
        runId,
        seq,
        succeeded ? "completed" : "failed",
        succeeded ? result : null,
        succeeded ? null : '{"code":"driver.command_driver_terminal"}',
        now,
        now,
        now,
      );
      insEffect.run(
        effectId,
        commandId,
        runId,
        driverInstanceId,
        serverId,
        BENCH_TOOL,
        newUlid(now),
        "seed",
        newUlid(now),
        fingerprint,
        opts.status,
        succeeded ? "provider_result" : null,
        succeeded ? result : null,
        now,
        now,
        now,
        now,
      );
      insAttempt.run(effectId, opts.status, now, now);
    }
  });
  for (let done = 0; done < opts.count; done += batch) insertBatch(Math.min(batch, opts.count - done));
  return { driverInstanceId, runId };
}

/** Accumulated time (ms) the process spent inside SQLite calls (statements and transaction wrappers, outermost only). */
export interface DbTimeMeter {
  /** ms spent in SQLite since {@link installDbTimeMeter} (or the last reset). */
  totalMs(): number;
  /** Statement calls (every `run/get/all`, BEGIN and COMMIT included) and committed transactions (the store's COMMIT statements, or `sqlite.transaction` calls) since then. */
  counts(): { statements: number; commits: number };
  /**
   * The `n` costliest statements by SQL text: `ms` in all and `calls`; the bucket
   * `(inside transactions: JS work, BEGIN)` is the transactions' time not spent in a statement (COMMIT, with its fsync, is its own statement).
   */
  topStatements(n: number): Array<{ sql: string; ms: number; calls: number }>;
  /** Sets every total back to 0. */
  reset(): void;
}

/**
 * Wraps better-sqlite3's `Statement.prototype` `run/get/all` and `sqlite.transaction` (the functions it
 * returns and their `deferred/immediate/exclusive` variants) with a timer. The total counts only
 * the outermost call (a statement inside a transaction is not counted twice); the per-statement
 * breakdown counts every statement call. Includes the commit's fsync.
 * Install once per process, before the measured work; the overhead is two `performance.now()` per call.
 */
export function installDbTimeMeter(sqlite: Database.Database): DbTimeMeter {
  let total = 0;
  let depth = 0;
  let nestedInTx = 0;
  let statements = 0;
  let commits = 0;
  const perSql = new Map<string, { ms: number; calls: number }>();
  const add = (sql: string, ms: number): void => {
    const e = perSql.get(sql) ?? { ms: 0, calls: 0 };
    e.ms += ms;
    e.calls += 1;
    perSql.set(sql, e);
  };
  const TX = "(inside transactions: JS work, BEGIN)";
  // Named so that a CPU profile shows SQLite's own (native) time as `sqliteCallTimed` self time.
  const timed = <A extends unknown[], R>(fn: (...args: A) => R, isTx: boolean) =>
    function sqliteCallTimed(this: { source?: string }, ...args: A): R {
      const outer = depth === 0;
      const nestedBefore = nestedInTx;
      depth += 1;
      const t0 = performance.now();
      try {
        return fn.apply(this, args);
      } finally {
        const ms = performance.now() - t0;
        depth -= 1;
        if (outer) total += ms;
        if (!isTx) statements += 1;
        // A commit: an outermost better-sqlite3 transaction, or the store's own COMMIT statement (the
        // async store runs BEGIN IMMEDIATE … COMMIT as statements, so BEGIN and writes inside are not commits).
        if (outer && (isTx || /^\s*COMMIT\b/i.test(this.source ?? ""))) commits += 1;
        if (isTx) {
          add(TX, ms - (nestedInTx - nestedBefore));
          nestedInTx = nestedBefore;
        } else {
          add(this.source ?? "?", ms);
          if (depth > 0) nestedInTx += ms;
        }
      }
    };
  const probe = sqlite.prepare("SELECT 1");
  const proto = Object.getPrototypeOf(probe) as Record<"run" | "get" | "all", (...args: unknown[]) => unknown>;
  for (const m of ["run", "get", "all"] as const) proto[m] = timed(proto[m], false);
  const originalTransaction = sqlite.transaction.bind(sqlite);
  (sqlite as { transaction: unknown }).transaction = (fn: (...args: unknown[]) => unknown) => {
    const tx = originalTransaction(fn) as unknown as Record<string, (...args: unknown[]) => unknown> & ((...args: unknown[]) => unknown);
    const wrapped = timed(tx, true) as typeof tx;
    for (const v of ["deferred", "immediate", "exclusive"]) wrapped[v] = timed(tx[v]!, true);
    return wrapped;
  };
  return {
    totalMs: () => total,
    counts: () => ({ statements, commits }),
    topStatements: (n) =>
      [...perSql.entries()]
        .map(([sql, e]) => ({ sql, ...e }))
        .sort((a, b) => b.ms - a.ms)
        .slice(0, n),
    reset: () => {
      total = 0;
      statements = 0;
      commits = 0;
      perSql.clear();
    },
  };
}

/**
 * Median time (µs) of `n` bare single-row write transactions (`BEGIN IMMEDIATE`, one prepared
 * INSERT into a scratch table in the same file, COMMIT with its fsync): the cost of one durable
 * commit on this disk right now, measured in the same run as the figure it explains.
 */
export function measureBareCommitUs(sqlite: Database.Database, n = 200): number {
  sqlite.exec("CREATE TABLE IF NOT EXISTS bench_bare_commits (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  const ins = sqlite.prepare("INSERT INTO bench_bare_commits (v) VALUES (?)");
  const tx = sqlite.transaction(() => ins.run("x"));
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    tx.immediate();
    samples.push((performance.now() - t0) * 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

/** Peak resident set size of this process so far, in bytes (`process.resourceUsage().maxRSS` is in KiB). */
export function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024;
}

/** Writes one progress line to stderr (the parent shows it as is). */
export function progress(message: string): void {
  process.stderr.write(`  [${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Resident memory (bytes) of each live `node` child process of this process (Linux `/proc`; empty elsewhere): the sandboxed adapter processes. */
export function childRssBytes(): number[] {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      // node children only (esbuild's service process, which bundled the adapter, is another)
      if (ppid !== process.pid || !stat.includes("(node)")) continue;
      out.push(Number(readFileSync(`/proc/${pid}/statm`, "utf8").split(" ")[1]) * 4096);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
