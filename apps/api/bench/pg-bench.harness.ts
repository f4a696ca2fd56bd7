// The bench's PostgreSQL test bed: the server (the operator's or a throwaway one), a fresh database per scenario, and bulk seeding.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type pg from "pg";
import { newUlid } from "@mosoo/contracts";
import type { TestDatabase } from "@mosoo/test-postgres";
import { createTestDatabase } from "@mosoo/test-postgres/database";
import { signalExitCode, STOP_SIGNALS } from "./bench-signals.js";
import { BENCH_BOUND_SERVER, BENCH_TOOL } from "./fixed-latency.adapter.js";
import type { SeedEffectsOptions } from "./bench-store.harness.js";
import { storeOpenFailureLine } from "../src/config/configured-store.js";

/**
 * The PostgreSQL server the bench's PostgreSQL rows run on (docs/performance.md): `adminUrl` (a role
 * allowed to `CREATE DATABASE`: every scenario works in a fresh database of its own, dropped after),
 * where it came from (`started`: a throwaway server of `@mosoo/test-postgres`; `operator`:
 * `--database-url` / `MOSOO_DATABASE_URL`), the start time (ms, started only) and `stop()` (stops and
 * removes a started server; does nothing to an operator's).
 */
export interface BenchPostgres {
  adminUrl: string;
  source: "started" | "operator";
  startMs: number | undefined;
  stop(): Promise<void>;
}

/**
 * Settings of the throwaway bench server: PostgreSQL's durable defaults (`fsync`, `synchronous_commit`,
 * `full_page_writes` on: `startPostgres({ fsync: true })`, as in production) and PostgreSQL's default
 * `shared_buffers` (128 MB; the test servers use 32 MB).
 */
const BENCH_SERVER_SETTINGS = { shared_buffers: "128MB", max_connections: 100 } as const;

/**
 * The operator's PostgreSQL server (`--database-url` / `MOSOO_DATABASE_URL`) cannot be used for the
 * PostgreSQL rows: unreachable, credentials refused, no right to CREATE DATABASE, or a connect timeout.
 * The message is one line with the URL and password redacted; the bench exits 2.
 */
export class BenchPostgresUnavailableError extends Error {
  override readonly name = "BenchPostgresUnavailableError";
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`cannot use the PostgreSQL server of --database-url / MOSOO_DATABASE_URL: ${reason}`, options);
  }
}

/**
 * The server of {@link BenchPostgres}: the operator's `databaseUrl` when given, else a throwaway
 * durable server started here (initdb in a temp folder, a free port on 127.0.0.1; stopped by `stop()`,
 * or by the watchdog of `@mosoo/test-postgres` when this process dies).
 * @throws Error when the throwaway server does not start (`test-postgres: the server did not start: …`).
 */
export async function openBenchPostgres(databaseUrl: string | undefined): Promise<BenchPostgres> {
  if (databaseUrl !== undefined) {
    // Checked here, before any scenario child starts: a server that refuses the connection, the
    // credentials or CREATE DATABASE is one line from the parent, not a child's stack.
    try {
      await (await createBenchDatabase(databaseUrl, "bench_probe")).drop();
    } catch (err) {
      throw new BenchPostgresUnavailableError(storeOpenFailureLine(err, databaseUrl), { cause: err });
    }
    return { adminUrl: databaseUrl, source: "operator", startMs: undefined, stop: async () => undefined };
  }
  const { startPostgres } = await loadTestPostgres();
  const server = await startPostgres({ fsync: true, settings: BENCH_SERVER_SETTINGS });
  return { adminUrl: server.url, source: "started", startMs: server.startMs, stop: () => server.stop() };
}

/** The databases this process created and has not dropped yet ({@link dropDatabasesOnSignal} drops them). */
const openDatabases = new Set<TestDatabase>();
/** Creations under way: a signal can come after `CREATE DATABASE` committed and before its promise settled. */
const creating = new Set<Promise<TestDatabase>>();

/**
 * A fresh database for one scenario on the server at `adminUrl` (see `createTestDatabase`); `drop()` it afterwards.
 * Until it is dropped, a signal handled by {@link dropDatabasesOnSignal} drops it too, also one still being created.
 */
export async function createBenchDatabase(adminUrl: string, prefix: string): Promise<TestDatabase> {
  const made = createTestDatabase(adminUrl, prefix);
  creating.add(made);
  let db: TestDatabase;
  try {
    db = await made;
  } finally {
    creating.delete(made);
  }
  openDatabases.add(db);
  return {
    ...db,
    drop: async () => {
      await db.drop();
      openDatabases.delete(db);
    },
  };
}

/**
 * For a PostgreSQL scenario process: on SIGINT, SIGTERM or SIGHUP (the bench passes its stop on to its children,
 * `bench-child.runner.ts`), waits for the creations under way, drops every database this process created and has
 * not dropped, then exits with 128 + the signal's number. On an operator's server (`--database-url`) nothing the
 * bench made is left behind. Not for a SQLite scenario: a handler keeps a process that runs a synchronous fill
 * from ending on the signal.
 */
export function dropDatabasesOnSignal(): void {
  const stop = async (signal: NodeJS.Signals) => {
    // `DROP DATABASE … WITH (FORCE)` ends the scenario's own connections; a client of it without an error
    // listener would otherwise end this process before the drop completes
    process.on("uncaughtException", () => undefined);
    const made = await Promise.allSettled([...creating]);
    const all = new Set(openDatabases);
    for (const m of made) if (m.status === "fulfilled") all.add(m.value);
    await Promise.allSettled([...all].map((db) => db.drop()));
    process.exit(signalExitCode(signal));
  };
  for (const signal of STOP_SIGNALS) process.once(signal, (s) => void stop(s));
}

/**
 * `@mosoo/test-postgres`, loaded only when the bench starts its throwaway server: its server library installs
 * SIGINT/SIGTERM handlers that end the process when it loads, before any `finally` can run.
 */
function loadTestPostgres(): Promise<typeof import("@mosoo/test-postgres")> {
  return import("@mosoo/test-postgres");
}

/** The load averages (1, 5 and 15 minutes) from `/proc/loadavg`, or undefined where there is no such file. */
export function loadAverage(): [number, number, number] | undefined {
  try {
    const [one, five, fifteen] = readFileSync("/proc/loadavg", "utf8").split(" ").map(Number);
    return one === undefined || five === undefined || fifteen === undefined ? undefined : [one, five, fifteen];
  } catch {
    return undefined;
  }
}

/** Rows per seeding statement: 11 array parameters per effect row, whatever the batch. */
const SEED_BATCH = 5_000;

/** What every seeding batch of one {@link seedEffectsPg} call shares: the Driver instance, its runs, the server, fingerprint, status, result (JSON) and time (ms). */
interface SeedBatchContext {
  driverInstanceId: string;
  runIds: string[];
  serverId: string;
  fingerprint: string;
  status: SeedEffectsOptions["status"];
  result: string;
  now: number;
}

/** Inserts effects `done + 1 … done + n` (commands, effects, attempts; run round robin by position) in one transaction on `client`. */
async function insertSeedBatch(client: pg.PoolClient, seed: SeedBatchContext, done: number, n: number): Promise<void> {
  const succeeded = seed.status === "succeeded";
  const commandIds: string[] = [];
  const effectIds: string[] = [];
  const toolCallIds: string[] = [];
  const keys: string[] = [];
  const seqs: number[] = [];
  const effectRuns: string[] = [];
  for (let i = 0; i < n; i++) {
    effectRuns.push(seed.runIds[(done + i) % seed.runIds.length]!);
    commandIds.push(newUlid(seed.now));
    effectIds.push(newUlid(seed.now));
    toolCallIds.push(newUlid(seed.now));
    keys.push(newUlid(seed.now));
    seqs.push(done + i + 1);
  }
  await client.query("BEGIN");
  await client.query(
    `INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, result_json, error_json, created_at_ms, updated_at_ms, terminal_at_ms)
     SELECT c.id, $2, c.run_id, c.seq, 'mcp.execute', $4, '{}', $5, $6, $7, $7, $7 FROM unnest($1::text[], $8::int[], $3::text[]) AS c(id, seq, run_id)`,
    [
      commandIds,
      seed.driverInstanceId,
      effectRuns,
      succeeded ? "completed" : "failed",
      succeeded ? seed.result : null,
      succeeded ? null : '{"code":"driver.command_driver_terminal"}',
      seed.now,
      seqs,
    ],
  );
  await client.query(
    `INSERT INTO external_tool_effects (id, command_id, run_id, driver_instance_id, server_id, tool_name, tool_call_id, request_id, arguments_json,
       idempotency_key, request_fingerprint, status, resolution, version, attempt_count, result_json, first_dispatched_at_ms, last_dispatched_at_ms, created_at_ms, updated_at_ms)
     SELECT e.id, e.command_id, e.run_id, $4, $5, $6, e.tool_call_id, 'seed', '{}', e.key, $7, $8, $9, 2, 1, $10, $11, $11, $11, $11
     FROM unnest($1::text[], $2::text[], $12::text[], $13::text[], $3::text[]) AS e(id, command_id, tool_call_id, key, run_id)`,
    [
      effectIds,
      commandIds,
      effectRuns,
      seed.driverInstanceId,
      seed.serverId,
      BENCH_TOOL,
      seed.fingerprint,
      seed.status,
      succeeded ? "provider_result" : null,
      succeeded ? seed.result : null,
      seed.now,
      toolCallIds,
      keys,
    ],
  );
  await client.query(
    `INSERT INTO external_tool_effect_attempts (effect_id, attempt, status, connection_id, started_at_ms, finished_at_ms)
     SELECT e.id, 1, $2, 'seed-connection', $3, $3 FROM unnest($1::text[]) AS e(id)`,
    [effectIds, seed.status, seed.now],
  );
  await client.query("COMMIT");
}

/**
 * The PostgreSQL twin of `seedEffects` (same rows, same meaning): `count` effects of one new Driver
 * instance (with its session, its runs and one command per effect), all in `status`, inserted with
 * `INSERT … SELECT FROM unnest(…)` in batches of {@link SEED_BATCH} on one connection of `pool`
 * (seeding is not measured), then `ANALYZE` and `CHECKPOINT` (`analyze: false` skips both). `runs` (default 1, as `seedEffects`) spreads the effects over that many
 * runs, round robin by effect id: every outcome appends an event to its run's stream, whose next
 * `seq` is computed in the INSERT, so on PostgreSQL two transactions appending to ONE run at once
 * collide on `(run_id, seq)` and one is retried whole; a backlog of one run serialises its outcomes.
 * Returns the Driver instance id and the first run's id.
 */
export async function seedEffectsPg(
  pool: pg.Pool,
  opts: SeedEffectsOptions & { runs?: number; analyze?: boolean },
): Promise<{ driverInstanceId: string; runId: string }> {
  const now = Date.now() - 60_000;
  const driverInstanceId = newUlid(now);
  const sessionId = newUlid(now);
  const runIds = Array.from({ length: Math.max(1, opts.runs ?? 1) }, () => newUlid(now));
  const runId = runIds[0]!;
  const serverId = opts.serverId ?? BENCH_BOUND_SERVER;
  const fingerprint = createHash("sha256").update("{}").digest("hex");
  const result = JSON.stringify({ outputText: "ok", requestId: "seed", serverId, toolName: BENCH_TOOL });
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(
      "INSERT INTO driver_instances (id, name, status, token_hash, registered_at_ms, finalized_at_ms) VALUES ($1, 'seed', 'finalized', $2, $3, $3)",
      [driverInstanceId, fingerprint, now],
    );
    await client.query("INSERT INTO sessions (id, created_at_ms) VALUES ($1, $2)", [sessionId, now]);
    await client.query(
      `INSERT INTO session_runs (id, session_id, driver_instance_id, status, error_json, created_at_ms, updated_at_ms)
       SELECT r.id, $2, $3, 'failed', '{}', $4, $4 FROM unnest($1::text[]) AS r(id)`,
      [runIds, sessionId, driverInstanceId, now],
    );
    await client.query("COMMIT");
    const seed: SeedBatchContext = { driverInstanceId, runIds, serverId, fingerprint, status: opts.status, result, now };
    for (let done = 0; done < opts.count; done += SEED_BATCH)
      await insertSeedBatch(client, seed, done, Math.min(SEED_BATCH, opts.count - done));
    if (opts.analyze ?? true) {
      // fresh planner statistics and a clean checkpoint, as the SQLite side's wal_checkpoint(TRUNCATE)
      await client.query("ANALYZE");
      // CHECKPOINT needs a superuser or pg_checkpoint: an operator's role may lack it (then skipped)
      await client.query("CHECKPOINT").catch(() => undefined);
    }
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
  return { driverInstanceId, runId };
}
