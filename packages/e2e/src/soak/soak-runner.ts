/**
 * The real-process kill soak: the fixture provider (fences a key on a
 * lookup miss), the API with reconciliation on, and several Driver processes. The store is the
 * embedded SQLite file (WAL, synchronous=FULL; one API instance) or, with `store: "postgres"`, a
 * throwaway PostgreSQL server the soak starts itself (`@mosoo/test-postgres`, fsync ON) and stops at
 * the end, shared by `apiInstances` API processes (docs/DESIGN.md §11). Each instance keeps a fixed
 * port so Drivers (given every instance's URL, they fail over) find it again after a restart (soak-processes.ts). Each
 * round enqueues a few tool calls (on a random instance), then SIGKILLs one Driver (and sometimes one
 * API instance) at a random moment, restarts it (at once: redelivery of the same Driver instance; or,
 * in a share of rounds, after the heartbeat TTL: finalization repair), and goes on. On PostgreSQL the
 * soak can also fault the database itself (`dbFaults`, soak-faults.ts) while the rounds go on. At the
 * end every process is restarted, recovery is awaited, everything stops, and the ledger is compared
 * with the provider's file ({@link countSoak}) and with what the soak did (soak-verdicts.ts).
 */
import { startPostgres, type RunningPostgres } from "@mosoo/test-postgres";
import { buildCompiledApps } from "../workspace-paths.js";
import { countSoak, type SoakCounts } from "./soak-counts.js";
import { DB_FAULT_KINDS, type AppliedDbFault, type DbFaultKind } from "./soak-faults.js";
import { openProviderTruth, type LedgerReader } from "./soak-ledger.js";
import type { SoakOptions } from "./soak-options.js";
import { runKillRound, scheduleDbFaults } from "./soak-rounds.js";
import { awaitRecovery, startSoakStack, stopSoakStack, type SoakStack, type SoakTally } from "./soak-stack.js";
import { healthyFinalized, unknownCommitted } from "./soak-verdicts.js";

export { DEFAULT_LATE_RESTART_RATIO, DEFAULT_SOAK_HEARTBEAT_TTL_MS, type SoakOptions, type SoakStore } from "./soak-options.js";

/**
 * What {@link runSoak} measured: the counts, the kills done, Driver restarts that came back as the same
 * instance (`sameInstanceRestarts`) or were finalized and replaced by a new one (`finalizations`), the
 * database faults applied by kind, the effects `unknown` whose provider committed with no kill to
 * explain it and the healthy Drivers finalized (ids; both defined in soak-verdicts.ts, both must be
 * empty), tool calls enqueued, wall time (ms).
 */
export interface SoakReport {
  counts: SoakCounts;
  driverKills: number;
  apiKills: number;
  sameInstanceRestarts: number;
  finalizations: number;
  faults: Record<DbFaultKind, number>;
  unknownCommitted: string[];
  healthyFinalized: string[];
  enqueued: number;
  wallMs: number;
  /** True when recovery finished (no command without a terminal receipt, no effect executing or due for a lookup). */
  recovered: boolean;
}

/**
 * Runs the soak; see the module comment.
 * @throws Error `soak.instances_need_postgres` when `apiInstances` > 1 on SQLite (one API process per
 *   SQLite file), `soak.db_faults_need_postgres` when `dbFaults` > 0 on SQLite; the errors of a process that does not start (`e2e.timeout`, `e2e.process_exited`);
 *   the build's error (`build.failed`) in `compiled` mode.
 */
export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const storeKind = opts.store ?? "sqlite";
  const instanceCount = opts.apiInstances ?? 1;
  if (instanceCount > 1 && storeKind !== "postgres")
    throw new Error("soak.instances_need_postgres: --api-instances above 1 needs --store postgres (one API process per SQLite file)");
  if ((opts.dbFaults ?? 0) > 0 && storeKind !== "postgres")
    throw new Error("soak.db_faults_need_postgres: --db-faults needs --store postgres (the soak faults its own PostgreSQL server)");
  const started = Date.now();
  if ((opts.entry ?? "compiled") === "compiled") {
    buildCompiledApps();
    opts.log(`soak: API and Driver built (compiled entries) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  let pgServer: RunningPostgres | null = null;
  try {
    if (storeKind === "postgres") {
      pgServer = await startPostgres({ fsync: true, settings: { max_connections: 200 } });
      opts.log(`soak: PostgreSQL started (fsync on) in ${(pgServer.startMs / 1000).toFixed(1)} s`);
    }
    return await soak(opts, instanceCount, pgServer, started);
  } finally {
    await pgServer?.stop();
  }
}

/**
 * The soak proper, read as its steps: start the stack, run kill rounds (with the database faults due)
 * until `opts.kills` Driver kills, await recovery, stop everything, judge the ledger.
 */
async function soak(opts: SoakOptions, instanceCount: number, pgServer: RunningPostgres | null, started: number): Promise<SoakReport> {
  const stack = await startSoakStack(opts, instanceCount, pgServer);
  const tally: SoakTally = { enqueued: 0, driverKills: 0, apiKills: 0 };
  const faults = scheduleDbFaults(opts, pgServer, tally);
  for (let round = 1; tally.driverKills < opts.kills; round++) {
    await faults.startDue(false);
    await runKillRound(opts, stack, tally, instanceCount);
    if (tally.driverKills % 10 === 0 || tally.driverKills === opts.kills) {
      opts.log(
        `soak: ${tally.driverKills}/${opts.kills} Driver kills, ${tally.apiKills} API kills, ${faults.applied.length}/${faults.plan.length} database faults, ${tally.enqueued} tool calls, ${stack.drivers.stats.sameInstanceRestarts} same-instance restarts, ${stack.drivers.stats.finalizations} Driver instances replaced, ${Math.round((Date.now() - started) / 1000)} s`,
      );
    }
  }
  await faults.finish();

  const { ledger, recovered } = await awaitRecovery(opts, stack, pgServer);
  await stopSoakStack(stack);
  return judgeSoak(stack, ledger, faults.applied, tally, started, recovered);
}

/**
 * With everything stopped, compares the ledger (closed here) with the provider's file ({@link countSoak})
 * and with what the soak did (soak-verdicts.ts), and counts the database faults applied by kind.
 * @returns the soak's report; `wallMs` since `started` (epoch ms).
 */
async function judgeSoak(
  stack: SoakStack,
  ledger: LedgerReader,
  applied: readonly AppliedDbFault[],
  tally: SoakTally,
  started: number,
  recovered: boolean,
): Promise<SoakReport> {
  const { stats, lives, kills } = stack.drivers;
  const effects = await ledger.effects();
  const attempts = await ledger.attempts();
  const finalized = await ledger.finalizedDrivers();
  await ledger.close();
  const truth = openProviderTruth(stack.providerDb);
  const counts = countSoak(effects, truth.of);
  const unknownCommittedIds = unknownCommitted(attempts, truth.of, kills);
  truth.close();
  const faults = Object.fromEntries(DB_FAULT_KINDS.map((k) => [k, applied.filter((a) => a.kind === k).length])) as Record<
    DbFaultKind,
    number
  >;
  return {
    counts,
    driverKills: tally.driverKills,
    apiKills: tally.apiKills,
    sameInstanceRestarts: stats.sameInstanceRestarts,
    finalizations: stats.finalizations,
    faults,
    unknownCommitted: unknownCommittedIds,
    healthyFinalized: healthyFinalized(finalized, lives, stack.ttlMs),
    enqueued: tally.enqueued,
    wallMs: Date.now() - started,
    recovered,
  };
}
