/**
 * The real-process kill soak (issue 5 item 4, issue 12 item 5): the fixture provider (fences a key on a
 * lookup miss), the API with reconciliation on, and several Driver processes. The store is the
 * embedded SQLite file (WAL, synchronous=FULL; one API instance) or, with `store: "postgres"`, a
 * throwaway PostgreSQL server the soak starts itself (`@mosoo/test-postgres`, fsync ON) and stops at
 * the end, shared by `apiInstances` API processes (docs/DESIGN.md §11). Each instance keeps a fixed
 * port so Drivers (given every instance's URL, they fail over) find it again after a restart. Each
 * round enqueues a few tool calls (on a random instance), then SIGKILLs one Driver (and sometimes one
 * API instance) at a random moment, restarts it (at once: redelivery; or after the heartbeat TTL:
 * finalization repair), and goes on. At the end every process is restarted, recovery is awaited,
 * everything stops, and the ledger is compared with the provider's file ({@link countSoak}).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import getPort from "get-port";
import { startPostgres, type RunningPostgres } from "@mosoo/test-postgres";
import { ProviderControlClient, RunApiClient } from "../http-clients.js";
import { ManagedProcess } from "../managed-process.js";
import { entryPoints } from "../workspace-paths.js";
import {
  credentialsEnv,
  FIXTURE_ADAPTER_PACKAGE,
  newStackCredentials,
  READY_TIMEOUT_MS,
  startDriverProcess,
  startProviderProcess,
  storeEnv,
  writeMcpConfig,
  type DriverProcess,
  type ProviderProcess,
} from "../stack.js";
import { countSoak, type SoakCounts } from "./soak-counts.js";
import { openLedgerReader, openProviderTruth, type LedgerReader } from "./soak-ledger.js";

/** Which store the soak's API runs on: the embedded SQLite file, or a throwaway PostgreSQL server. */
export type SoakStore = "sqlite" | "postgres";

/**
 * Options of {@link runSoak}: `kills` (Driver SIGKILLs), `seed`, `drivers` (processes), `apiKillRatio`
 * (0–1: rounds that also kill one API instance), `workDir`, `store` (default `sqlite`), `apiInstances`
 * (API processes on the store, default 1; above 1 only with `postgres`, docs/DESIGN.md §11).
 */
export interface SoakOptions {
  kills: number;
  seed: number;
  drivers: number;
  apiKillRatio: number;
  workDir: string;
  store?: SoakStore;
  apiInstances?: number;
  /** Progress lines. */
  log: (line: string) => void;
}

/** What {@link runSoak} measured: the counts, the kills done, tool calls enqueued, wall time (ms). */
export interface SoakReport {
  counts: SoakCounts;
  driverKills: number;
  apiKills: number;
  finalizations: number;
  enqueued: number;
  wallMs: number;
  /** True when recovery finished (no command without a terminal receipt, no effect executing or due for a lookup). */
  recovered: boolean;
}

const HEARTBEAT_TTL_MS = 1_500;
/** Bound (ms) of the recovery wait (every command terminal, no effect executing or due for a lookup). */
const RECOVERY_TIMEOUT_MS = 180_000;

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

interface Slot {
  name: string;
  stateFile: string;
  proc: DriverProcess | null;
  instanceId: string | null;
  runId: string | null;
}

/**
 * Runs the soak; see the module comment.
 * @throws Error `soak.instances_need_postgres` when `apiInstances` > 1 on SQLite (one API process per
 *   SQLite file); the errors of a process that does not start (`e2e.timeout`, `e2e.process_exited`).
 */
export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const storeKind = opts.store ?? "sqlite";
  const instanceCount = opts.apiInstances ?? 1;
  if (instanceCount > 1 && storeKind !== "postgres")
    throw new Error("soak.instances_need_postgres: --api-instances above 1 needs --store postgres (one API process per SQLite file)");
  const started = Date.now();
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

async function soak(opts: SoakOptions, instanceCount: number, pgServer: RunningPostgres | null, started: number): Promise<SoakReport> {
  const random = rng(opts.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const e = entryPoints();
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
  const apis: Array<ManagedProcess | null> = apiUrls.map(() => null);
  const startApi = async (i: number) => {
    const proc = new ManagedProcess({
      name: `api-${i}`,
      command: e.node,
      args: [...e.nodeArgs, e.api.main],
      cwd: e.api.cwd,
      env: {
        ...storeEnv(store),
        MOSOO_PORT: String(ports[i]),
        MOSOO_LOG_LEVEL: "info",
        MOSOO_EFFECT_RECONCILIATION: "on",
        MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
        MOSOO_HEARTBEAT_TTL_MS: String(HEARTBEAT_TTL_MS),
        MOSOO_SWEEP_INTERVAL_MS: "200",
        MOSOO_LOOKUP_TIMEOUT_MS: "2000",
        MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "200",
        MOSOO_LOOKUP_BACKOFF_MAX_MS: "2000",
        MOSOO_MAX_LOOKUPS: "20",
        ...credentialsEnv(credentials),
      },
    });
    await proc.waitForLine((j) => j["msg"] === "api.listening", READY_TIMEOUT_MS, "api.listening");
    proc.lines.length = 0; // the soak keeps no API log history in memory
    apis[i] = proc;
  };
  for (let i = 0; i < instanceCount; i++) await startApi(i);
  const mcpConfigFile = writeMcpConfig(opts.workDir, { tracker: provider.url });
  const slots: Slot[] = Array.from({ length: opts.drivers }, (_, i) => ({
    name: `soak-driver-${i}`,
    stateFile: join(opts.workDir, `driver-${i}.json`),
    proc: null,
    instanceId: null,
    runId: null,
  }));
  let finalizations = 0;

  /** (Re)starts a Driver: the same state file reconnects the same instance; a finalized one exits 1 and registers anew on the next start. */
  const startDriver = async (slot: Slot) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const d = await startDriverProcess({
          apiUrl: apiUrls,
          stateFile: slot.stateFile,
          mcpConfigFile,
          name: slot.name,
          enrollmentToken: credentials.enrollmentToken,
        });
        d.proc.lines.length = 0;
        if (slot.instanceId && slot.instanceId !== d.driverInstanceId) {
          finalizations += 1;
          slot.runId = null;
        }
        slot.proc = d;
        slot.instanceId = d.driverInstanceId;
        return;
      } catch (error) {
        if (attempt >= 4) throw error;
        await sleep(200);
      }
    }
  };
  const alive = (slot: Slot) => slot.proc !== null && slot.proc.proc.lines !== undefined && !exited.has(slot.proc.proc);
  const exited = new WeakSet<ManagedProcess>();
  const watch = (slot: Slot) => {
    const p = slot.proc?.proc;
    if (p) void p.exited.then(() => exited.add(p));
  };
  for (const slot of slots) {
    await startDriver(slot);
    watch(slot);
  }

  let enqueued = 0;
  let driverKills = 0;
  let apiKills = 0;
  const enqueue = async (slot: Slot, n: number) => {
    for (let j = 0; j < n; j++) {
      const runs = pick(runClients); // any instance: one store, one ledger
      try {
        if (!slot.runId) slot.runId = (await runs.createRun(slot.instanceId!)).runId;
        await runs.enqueueToolCall(slot.runId, {
          serverId: "tracker",
          toolName: "createIssue",
          arguments: { title: `soak ${enqueued}`, body: `seed ${opts.seed}` },
        });
        enqueued += 1;
      } catch {
        slot.runId = null; // the run ended (its Driver was finalized) or the API is restarting
      }
    }
  };

  for (let round = 1; driverKills < opts.kills; round++) {
    for (const slot of slots) {
      if (!alive(slot)) {
        await startDriver(slot);
        watch(slot);
      }
    }
    await control.setFaults({ delayBeforeCommitMs: pick([0, 0, 0, 20, 80, 250]) }).catch(() => undefined);
    for (const slot of slots) await enqueue(slot, 1 + Math.floor(random() * 3));
    await sleep(Math.floor(random() * 300));
    const victim = pick(slots);
    const killApi = random() < opts.apiKillRatio;
    await victim.proc?.proc.kill("SIGKILL");
    driverKills += 1;
    const apiVictim = Math.floor(random() * instanceCount);
    if (killApi && apis[apiVictim]) {
      await apis[apiVictim].kill("SIGKILL");
      apiKills += 1;
    }
    const late = random() < 0.3;
    if (killApi) await startApi(apiVictim);
    if (late) await sleep(HEARTBEAT_TTL_MS + 700); // the sweep finalizes the dead Driver before it comes back
    await startDriver(victim);
    watch(victim);
    if (driverKills % 10 === 0 || driverKills === opts.kills) {
      opts.log(
        `soak: ${driverKills}/${opts.kills} Driver kills, ${apiKills} API kills, ${enqueued} tool calls, ${finalizations} Driver instances replaced, ${Math.round((Date.now() - started) / 1000)} s`,
      );
    }
  }

  // Recovery: every Driver up, the provider answers at once, wait until the ledger is quiet.
  await control.setFaults({ delayBeforeCommitMs: 0 }).catch(() => undefined);
  for (const slot of slots) {
    if (!alive(slot)) {
      await startDriver(slot);
      watch(slot);
    }
  }
  const ledger: LedgerReader = await openLedgerReader(pgServer ? { databaseUrl: pgServer.url } : apiDb);
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
  for (const slot of slots) await slot.proc?.proc.kill("SIGTERM");
  for (const api of apis) await api?.kill("SIGTERM");
  await provider.proc.kill("SIGTERM");

  const effects = await ledger.effects();
  await ledger.close();
  const truth = openProviderTruth(providerDb);
  const counts = countSoak(effects, truth.of);
  truth.close();
  return { counts, driverKills, apiKills, finalizations, enqueued, wallMs: Date.now() - started, recovered };
}
