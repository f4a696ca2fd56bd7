// The untimed warm-up of a PostgreSQL recovery instance process: a small backlog of its own, recovered before the clock starts.
import type { TestDatabase } from "@mosoo/test-postgres";
import { openPostgresStore, type PostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { createBenchDatabase } from "./pg-bench.harness.js";

/**
 * `unknown` effects each instance process recovers before it says `ready` (in a database of its own, so
 * the measured backlog and its counts are untouched): enough passes that the code the measured recovery
 * runs is compiled and the process's caches and prepared statements exist, so the CPU measured after `go`
 * is the steady state for one instance and for several alike (each process pays its warm-up once,
 * outside the window, instead of N processes paying it N times inside it).
 */
export const WARMUP_EFFECTS = 500;

/** How long (ms) a warm-up pass that looked nothing up waits before the next (the backlog's leases still held). */
const WARMUP_IDLE_MS = 20;

/** `count` fresh databases on the server at `adminUrl` (one per instance; `drop()` each afterwards); none for 0. */
export async function createWarmupDatabases(adminUrl: string, count: number): Promise<TestDatabase[]> {
  const out: TestDatabase[] = [];
  for (let i = 0; i < count; i++) out.push(await createBenchDatabase(adminUrl, "bench_recovery_warmup"));
  return out;
}

/**
 * Recovers every `unknown` effect of the database at `url` with a runtime built by `runtimeOn` (the same
 * settings as the measured one), sweep pass after pass until none is left, then closes that store.
 * @throws Error when the store cannot be opened or a pass fails (the instance process then exits non-zero).
 */
export async function warmUp(
  url: string,
  runtimeOn: (store: PostgresStore) => { sweep: { sweepOnce(): Promise<{ effectsLookedUp: number }> } },
): Promise<void> {
  const store = await openPostgresStore(url, { migrate: false, applicationName: `mosoo-bench-warmup-${process.pid}` });
  try {
    const runtime = runtimeOn(store);
    const unknownLeft = async () =>
      Number((await store.pool.query("SELECT count(*) AS n FROM external_tool_effects WHERE status = 'unknown'")).rows[0].n);
    for (;;) {
      const report = await runtime.sweep.sweepOnce();
      if (report.effectsLookedUp > 0) continue;
      if ((await unknownLeft()) === 0) return;
      await new Promise((resolve) => setTimeout(resolve, WARMUP_IDLE_MS));
    }
  } finally {
    await store.close();
  }
}
