// Bench scenario 1 on PostgreSQL: the ledger's lifecycle through the real runtime against a bare `pg` transaction floor.
import type pg from "pg";
import { newUlid } from "@mosoo/contracts";
import { openPostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { createBenchRuntime } from "./bench-store.harness.js";
import { ledgerLifecycle, measureLedgerPoints, type LedgerCostOptions, type LedgerCostResult } from "./ledger-cost.scenario.js";
import { createBenchDatabase, loadAverage, seedEffectsPg } from "./pg-bench.harness.js";
import { countPgRoundTrips, type PgRoundTrips } from "./pg-round-trips.js";

/** Options of {@link runPgLedgerCost}: those of the SQLite scenario plus the server's `adminUrl` (a fresh database is created on it). */
export interface PgLedgerCostOptions extends LedgerCostOptions {
  adminUrl: string;
}

/**
 * Result of {@link runPgLedgerCost}: the points, the 1-minute load average (`/proc/loadavg`) before and after
 * the measurement (null where unknown), and the round trips of one lifecycle (flag on) per step against the floor's 12.
 */
export interface PgLedgerCostResult extends LedgerCostResult {
  loadAverage: { before: number | null; after: number | null };
  roundTrips: PgRoundTrips;
}

/** The floor's table on PostgreSQL: the SQLite floor's columns (`bigint` ms times). */
const FLOOR_DDL = `CREATE TABLE IF NOT EXISTS bench_floor_effects (
  id text PRIMARY KEY, command_id text NOT NULL UNIQUE, status text NOT NULL, version integer NOT NULL DEFAULT 0,
  attempt_count integer NOT NULL DEFAULT 0, arguments_json text NOT NULL, result_json text, command_status text NOT NULL,
  created_at_ms bigint NOT NULL, updated_at_ms bigint NOT NULL)`;

/** `BEGIN` as the store's units of work send it (`pg-unit-of-work.ts`), so both sides pay the same round trips. */
const BEGIN_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE";

/**
 * The PostgreSQL floor: the same four state changes a lifecycle makes (insert intent+command, claim,
 * complete, terminal update), each ONE bare single-row `pg` transaction (`BEGIN`, one named prepared
 * statement, `COMMIT`, durable: the server runs with `synchronous_commit` on) on an equivalent table in
 * the same database, on one connection held for the whole measurement (the SQLite floor's shape).
 */
async function pgFloorLifecycle(pool: pg.Pool) {
  const client = await pool.connect();
  await client.query(FLOOR_DDL);
  const tx = async (name: string, text: string, values: unknown[]): Promise<void> => {
    await client.query(BEGIN_WRITE);
    await client.query({ name, text, values });
    await client.query("COMMIT");
  };
  const INSERT =
    "INSERT INTO bench_floor_effects (id, command_id, status, arguments_json, command_status, created_at_ms, updated_at_ms) VALUES ($1, $2, 'intent', $3, 'queued', $4, $4)";
  return {
    async run(): Promise<void> {
      const now = Date.now();
      const id = newUlid(now);
      await tx("floor-insert", INSERT, [id, newUlid(now), '{"n":1}', now]);
      await tx(
        "floor-claim",
        "UPDATE bench_floor_effects SET status = 'executing', attempt_count = attempt_count + 1, version = version + 1, updated_at_ms = $1 WHERE id = $2 AND status = 'intent'",
        [now, id],
      );
      await tx(
        "floor-complete",
        "UPDATE bench_floor_effects SET status = 'succeeded', result_json = $1, version = version + 1, updated_at_ms = $2 WHERE id = $3 AND status = 'executing'",
        ['{"outputText":"ok"}', now, id],
      );
      await tx(
        "floor-terminal",
        "UPDATE bench_floor_effects SET command_status = 'completed', updated_at_ms = $1 WHERE id = $2 AND command_status = 'queued'",
        [now, id],
      );
    },
    async seed(n: number): Promise<void> {
      const now = Date.now();
      const ids = Array.from({ length: n }, () => newUlid(now));
      const commandIds = Array.from({ length: n }, () => newUlid(now));
      await client.query(
        `INSERT INTO bench_floor_effects (id, command_id, status, arguments_json, command_status, created_at_ms, updated_at_ms)
         SELECT f.id, f.command_id, 'intent', '{"n":1}', 'queued', $3, $3 FROM unnest($1::text[], $2::text[]) AS f(id, command_id)`,
        [ids, commandIds, now],
      );
      await client.query("ANALYZE bench_floor_effects");
    },
    release: () => client.release(),
  };
}

/**
 * Scenario 1 on PostgreSQL: the ledger's lifecycle through the real runtime on the PostgreSQL store
 * (`openPostgresStore`, its default pool) against {@link pgFloorLifecycle}, side by side in the same
 * tinybench rounds, at each of `opts.sizes` existing effects, in a fresh database dropped afterwards.
 */
export async function runPgLedgerCost(opts: PgLedgerCostOptions): Promise<PgLedgerCostResult> {
  const db = await createBenchDatabase(opts.adminUrl, "bench_ledger");
  try {
    const store = await openPostgresStore(db.url, { applicationName: "mosoo-bench-ledger" });
    try {
      const floor = await pgFloorLifecycle(store.pool);
      try {
        const off = await ledgerLifecycle(createBenchRuntime(store, { reconciliation: false, lookupLatencyMs: 10, concurrency: 64 }));
        const onRuntime = createBenchRuntime(store, { reconciliation: true, lookupLatencyMs: 10, concurrency: 64 });
        const roundTrips = await countPgRoundTrips(onRuntime);
        const on = await ledgerLifecycle(onRuntime);
        const before = loadAverage()?.[0] ?? null;
        const points = await measureLedgerPoints("pg ledger", opts, { floor: () => floor.run(), off, on }, async (from, to) => {
          await seedEffectsPg(store.pool, { count: to - from, status: "succeeded", serverId: "seeded" });
          await floor.seed(to - from);
        });
        return { points, loadAverage: { before, after: loadAverage()?.[0] ?? null }, roundTrips };
      } finally {
        floor.release();
      }
    } finally {
      await store.close();
    }
  } finally {
    await db.drop();
  }
}
