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
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import getPort from "get-port";
import { startPostgres, type RunningPostgres } from "@mosoo/test-postgres";
import { ProviderControlClient, RunApiClient } from "../http-clients.js";
import { buildCompiledApps, type EntryMode } from "../workspace-paths.js";
import { FIXTURE_ADAPTER_PACKAGE, newStackCredentials, startProviderProcess, writeMcpConfig, type ProviderProcess } from "../stack.js";
import { countSoak, type SoakCounts } from "./soak-counts.js";
import { applyDbFault, DB_FAULT_KINDS, planDbFaults, type AppliedDbFault, type DbFaultKind } from "./soak-faults.js";
import { openLedgerReader, openProviderTruth, type LedgerReader } from "./soak-ledger.js";
import { createSoakApis, createSoakDrivers, type SoakApis, type SoakDriverSlot, type SoakDrivers } from "./soak-processes.js";
import { healthyFinalized, unknownCommitted } from "./soak-verdicts.js";

/** Which store the soak's API runs on: the embedded SQLite file, or a throwaway PostgreSQL server. */
export type SoakStore = "sqlite" | "postgres";

/**
 * Options of {@link runSoak}: `kills` (Driver SIGKILLs), `seed`, `drivers` (processes), `apiKillRatio`
 * (0–1: rounds that also kill one API instance), `workDir`, `store` (default `sqlite`), `apiInstances`
 * (API processes on the store, default 1; above 1 only with `postgres`, docs/DESIGN.md §11),
 * `heartbeatTtlMs` (the API's `MOSOO_HEARTBEAT_TTL_MS`, default {@link DEFAULT_SOAK_HEARTBEAT_TTL_MS}),
 * `lateRestartRatio` (0–1: killed Drivers restarted only after the TTL, so they are finalized; default
 * {@link DEFAULT_LATE_RESTART_RATIO}), `dbFaults` (database faults, default 0; above 0 only with
 * `postgres`), `reconciliation` (the API's `MOSOO_EFFECT_RECONCILIATION`, default true), `entry` (how the
 * API and Driver processes run, default `compiled`: built once at the start, see {@link EntryMode}; the
 * same processes, signals and schedule either way, a compiled start only costs less CPU).
 */
export interface SoakOptions {
  kills: number;
  seed: number;
  drivers: number;
  apiKillRatio: number;
  workDir: string;
  store?: SoakStore;
  apiInstances?: number;
  heartbeatTtlMs?: number;
  lateRestartRatio?: number;
  dbFaults?: number;
  reconciliation?: boolean;
  entry?: EntryMode;
  /** Progress lines. */
  log: (line: string) => void;
}

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
 * The soak's default heartbeat TTL (ms): long enough that a Driver restarted at once (a few seconds on a
 * loaded machine) comes back as the same instance, as in production (the API's default is 15 000).
 */
export const DEFAULT_SOAK_HEARTBEAT_TTL_MS = 10_000;
/** The default share of kills whose Driver is restarted only after the TTL (finalization repair). */
export const DEFAULT_LATE_RESTART_RATIO = 0.1;
/** Bound (ms) of the recovery wait (every command terminal, no effect executing or due for a lookup). */
const RECOVERY_TIMEOUT_MS = 300_000;

/** mulberry32: a small seeded PRNG in [0, 1). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
  for (const slot of stack.drivers.slots) await stack.drivers.stop(slot, "SIGTERM");
  for (const api of stack.apis) await api?.kill("SIGTERM");
  await stack.provider.proc.kill("SIGTERM");
  return judgeSoak(stack, ledger, faults.applied, tally, started, recovered);
}

/** The soak's running processes, its seeded choices and its settings, shared by its steps. */
interface SoakStack {
  random: () => number;
  pick: <T>(xs: readonly T[]) => T;
  ttlMs: number;
  lateRatio: number;
  apiDb: string;
  providerDb: string;
  provider: ProviderProcess;
  control: ProviderControlClient;
  runClients: RunApiClient[];
  apis: SoakApis["apis"];
  startApi: SoakApis["start"];
  drivers: SoakDrivers;
}

/** What the soak did so far: tool calls enqueued, Driver and API instances killed. */
interface SoakTally {
  enqueued: number;
  driverKills: number;
  apiKills: number;
}

/**
 * Starts the stack: the fixture provider (fences a key on a lookup miss), its bindings file, one fixed
 * port per API instance, the API instances (one set of fresh secrets) and every Driver, in that order.
 */
async function startSoakStack(opts: SoakOptions, instanceCount: number, pgServer: RunningPostgres | null): Promise<SoakStack> {
  const random = rng(opts.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const ttlMs = opts.heartbeatTtlMs ?? DEFAULT_SOAK_HEARTBEAT_TTL_MS;
  const lateRatio = opts.lateRestartRatio ?? DEFAULT_LATE_RESTART_RATIO;
  const reconciliation = opts.reconciliation ?? true;
  const entry = opts.entry ?? "compiled";
  const apiDb = join(opts.workDir, "api.db");
  const providerDb = join(opts.workDir, "provider.db");
  const provider: ProviderProcess = await startProviderProcess(providerDb, ["--fence-on-lookup-miss", "--log-level", "warn"]);
  const control = new ProviderControlClient(provider.controlUrl);
  const bindingsFile = join(opts.workDir, "bindings.json");
  writeFileSync(
    bindingsFile,
    JSON.stringify({ bindings: { tracker: { package: FIXTURE_ADAPTER_PACKAGE, options: { url: provider.url } } } }),
  );
  const ports: number[] = [];
  for (let i = 0; i < instanceCount; i++) ports.push(await getPort({ host: "127.0.0.1", exclude: ports }));
  const apiUrls = ports.map((port) => `http://127.0.0.1:${port}`);
  const store = pgServer ? { databaseUrl: pgServer.url, poolSize: 5 } : apiDb;
  // one set of fresh secrets for the whole soak: every instance, and every restart, accepts the same ones
  const credentials = newStackCredentials();
  const runClients = apiUrls.map((url) => new RunApiClient(url, credentials.apiKey));
  const { apis, start: startApi } = createSoakApis({
    store,
    ports,
    reconciliation,
    bindingsFile,
    ttlMs,
    credentials,
    entry,
  });
  for (let i = 0; i < instanceCount; i++) await startApi(i);
  const mcpConfigFile = writeMcpConfig(opts.workDir, { tracker: provider.url });
  const drivers = createSoakDrivers({
    count: opts.drivers,
    workDir: opts.workDir,
    apiUrls,
    mcpConfigFile,
    enrollmentToken: credentials.enrollmentToken,
    entry,
  });
  for (const slot of drivers.slots) await drivers.start(slot);
  return { random, pick, ttlMs, lateRatio, apiDb, providerDb, provider, control, runClients, apis, startApi, drivers };
}

/**
 * Enqueues `n` tool calls on `slot`'s run (created first when it has none), each on a random API
 * instance. A run that ended (`run.not_active`: its Driver was finalized) is dropped so the next call
 * makes a new one; any other failure leaves the run as it is. Counts what was enqueued in `tally`.
 */
async function enqueueToolCalls(opts: SoakOptions, stack: SoakStack, tally: SoakTally, slot: SoakDriverSlot, n: number): Promise<void> {
  for (let j = 0; j < n; j++) {
    const runs = stack.pick(stack.runClients); // any instance: one store, one ledger
    try {
      if (!slot.runId) slot.runId = (await runs.createRun(slot.instanceId!)).runId;
      await runs.enqueueToolCall(slot.runId, {
        serverId: "tracker",
        toolName: "createIssue",
        arguments: { title: `soak ${tally.enqueued}`, body: `seed ${opts.seed}` },
      });
      tally.enqueued += 1;
    } catch (error) {
      // the run ended (its Driver was finalized): a new one next time; any other failure (an API
      // restarting, a database fault) leaves the run as it is
      if (String(error).includes("run.not_active")) slot.runId = null;
    }
  }
}

/**
 * Database faults: planned from the seed, started when their kill count (`tally.driverKills`) is
 * reached, one at a time, while the rounds go on. `startDue(true)` starts the next one regardless;
 * `finish` starts every one left and waits for the last. None without a PostgreSQL server.
 */
function scheduleDbFaults(opts: SoakOptions, pgServer: RunningPostgres | null, tally: SoakTally) {
  const plan = pgServer && opts.dbFaults ? planDbFaults(opts.dbFaults, opts.kills, rng(opts.seed ^ 0x5eed)) : [];
  const applied: AppliedDbFault[] = [];
  let nextFault = 0;
  let faultRunning: Promise<void> = Promise.resolve();
  const startDue = async (force: boolean) => {
    const fault = plan[nextFault];
    if (!pgServer || !fault || (!force && fault.atKill > tally.driverKills)) return;
    await faultRunning;
    nextFault += 1;
    faultRunning = applyDbFault(pgServer, fault).then(
      (a) => {
        applied.push(a);
        opts.log(`soak: database fault ${applied.length}/${plan.length}: ${a.kind}, ${a.detail}`);
      },
      (error: unknown) => opts.log(`soak: database fault ${fault.kind} failed: ${String(error)}`),
    );
  };
  const finish = async () => {
    while (nextFault < plan.length) await startDue(true);
    await faultRunning;
  };
  return { plan, applied, startDue, finish };
}

/**
 * One round: every dead Driver restarted, a random provider commit delay, 1–3 tool calls per Driver,
 * a random pause, then SIGKILL of a random Driver (and, at `apiKillRatio`, of a random API instance);
 * both come back side by side, the Driver at once or (at `lateRestartRatio`) only after the TTL.
 */
async function runKillRound(opts: SoakOptions, stack: SoakStack, tally: SoakTally, instanceCount: number): Promise<void> {
  const { random, pick, drivers, apis } = stack;
  for (const slot of drivers.slots) if (!drivers.alive(slot)) await drivers.start(slot);
  await stack.control.setFaults({ delayBeforeCommitMs: pick([0, 0, 0, 20, 80, 250]) }).catch(() => undefined);
  for (const slot of drivers.slots) await enqueueToolCalls(opts, stack, tally, slot, 1 + Math.floor(random() * 3));
  await sleep(Math.floor(random() * 300));
  const victim = pick(drivers.slots);
  const killApi = random() < opts.apiKillRatio;
  await drivers.stop(victim, "SIGKILL");
  tally.driverKills += 1;
  const apiVictim = Math.floor(random() * instanceCount);
  if (killApi && apis[apiVictim]) {
    await apis[apiVictim].kill("SIGKILL");
    tally.apiKills += 1;
  }
  const late = random() < stack.lateRatio;
  // the API instance and the Driver come back side by side (the Driver fails over to another instance
  // meanwhile): a Driver waiting for an API restart first would overrun the TTL on a loaded machine
  await Promise.all([
    killApi ? stack.startApi(apiVictim) : undefined,
    (async () => {
      if (late) await sleep(stack.ttlMs + 700); // the sweep finalizes the dead Driver before it comes back
      await drivers.start(victim);
    })(),
  ]);
}

/**
 * Recovery: every Driver up, the provider answers at once, then waits (at most {@link RECOVERY_TIMEOUT_MS})
 * until the ledger is quiet, and logs whether it got there.
 * @returns the open ledger reader and whether recovery finished.
 */
async function awaitRecovery(
  opts: SoakOptions,
  stack: SoakStack,
  pgServer: RunningPostgres | null,
): Promise<{ ledger: LedgerReader; recovered: boolean }> {
  await stack.control.setFaults({ delayBeforeCommitMs: 0 }).catch(() => undefined);
  for (const slot of stack.drivers.slots) if (!stack.drivers.alive(slot)) await stack.drivers.start(slot);
  const ledger: LedgerReader = await openLedgerReader(pgServer ? { databaseUrl: pgServer.url } : stack.apiDb);
  const pending = () => ledger.pending();
  let recovered = false;
  // A bound for a hang, not a timing assertion: recovery takes seconds on a quiet machine, far more at a load average of 15–20.
  const deadline = Date.now() + RECOVERY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if ((await pending()) === 0) {
      recovered = true;
      break;
    }
    await sleep(250);
  }
  opts.log(
    `soak: recovery ${recovered ? "finished" : `did NOT finish within ${RECOVERY_TIMEOUT_MS / 1000} s`} (${await pending()} pending)`,
  );
  return { ledger, recovered };
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
