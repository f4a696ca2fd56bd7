/**
 * The real-process kill soak (issue 5 item 4): the fixture provider (fences a key on a lookup
 * miss), the API with reconciliation on (file-backed SQLite: WAL, synchronous=FULL, a fixed port so
 * Drivers find it again after a restart) and several Driver processes. Each round enqueues a few
 * tool calls, then SIGKILLs one Driver (and sometimes the API) at a random moment, restarts it
 * (at once: redelivery; or after the heartbeat TTL: finalization repair), and goes on. At the end
 * every process is restarted, recovery is awaited, everything stops, and the ledger file is
 * compared with the provider's file ({@link countSoak}).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import getPort from "get-port";
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
  writeMcpConfig,
  type DriverProcess,
  type ProviderProcess,
} from "../stack.js";
import { countSoak, type LedgerEffect, type ProviderTruth, type SoakCounts } from "./soak-counts.js";

/** Options of {@link runSoak}: `kills` (Driver SIGKILLs), `seed`, `drivers` (processes), `apiKillRatio` (0–1: rounds that also kill the API), `workDir`. */
export interface SoakOptions {
  kills: number;
  seed: number;
  drivers: number;
  apiKillRatio: number;
  workDir: string;
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

/** Runs the soak; see the module comment. */
export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const started = Date.now();
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
  const port = await getPort({ host: "127.0.0.1" });
  const apiUrl = `http://127.0.0.1:${port}`;
  // one set of fresh secrets for the whole soak: the API restarts with the same ones
  const credentials = newStackCredentials();
  const runs = new RunApiClient(apiUrl, credentials.apiKey);
  let api: ManagedProcess | null = null;
  const startApi = async () => {
    const proc = new ManagedProcess({
      name: "api",
      command: e.node,
      args: [...e.nodeArgs, e.api.main],
      cwd: e.api.cwd,
      env: {
        MOSOO_DB_FILE: apiDb,
        MOSOO_PORT: String(port),
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
    api = proc;
  };
  await startApi();
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
          apiUrl,
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
    if (killApi && api) {
      await (api as ManagedProcess).kill("SIGKILL");
      apiKills += 1;
    }
    const late = random() < 0.3;
    if (killApi) await startApi();
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
  const ledger = new Database(apiDb, { readonly: true });
  const pending = () =>
    (
      ledger
        .prepare(
          `SELECT (SELECT count(*) FROM driver_commands WHERE status IN ('queued','delivered','accepted'))
                + (SELECT count(*) FROM external_tool_effects WHERE status = 'executing')
                + (SELECT count(*) FROM external_tool_effects WHERE status = 'unknown' AND next_lookup_at_ms IS NOT NULL AND operator_attention IS NULL) AS n`,
        )
        .get() as { n: number }
    ).n;
  let recovered = false;
  // A bound for a hang, not a timing assertion: recovery takes seconds on a quiet machine, far more at a load average of 15–20.
  const deadline = Date.now() + RECOVERY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (pending() === 0) {
      recovered = true;
      break;
    }
    await sleep(250);
  }
  opts.log(`soak: recovery ${recovered ? "finished" : `did NOT finish within ${RECOVERY_TIMEOUT_MS / 1000} s`} (${pending()} pending)`);
  for (const slot of slots) await slot.proc?.proc.kill("SIGTERM");
  if (api) await (api as ManagedProcess).kill("SIGTERM");
  await provider.proc.kill("SIGTERM");

  const effects = (
    ledger.prepare("SELECT id, idempotency_key, status, resolution, result_json FROM external_tool_effects").all() as Array<
      Record<string, string | null>
    >
  ).map((r): LedgerEffect => ({
    id: String(r.id),
    idempotencyKey: String(r.idempotency_key),
    status: String(r.status),
    resolution: r.resolution ?? null,
    resultJson: r.result_json ?? null,
  }));
  ledger.close();
  const truthDb = new Database(providerDb, { readonly: true });
  const commitsOf = truthDb.prepare("SELECT count(*) AS n FROM issues WHERE idempotency_key = ?");
  const callsOf = truthDb.prepare("SELECT count FROM call_counts WHERE idempotency_key = ? AND kind = 'create'");
  const resultOf = truthDb.prepare("SELECT result_json FROM operations WHERE idempotency_key = ?");
  const truth = (key: string): ProviderTruth => {
    const result = resultOf.get(key) as { result_json: string } | undefined;
    const content = result ? ((JSON.parse(result.result_json) as { content?: Array<{ type: string; text?: string }> }).content ?? []) : [];
    return {
      commits: (commitsOf.get(key) as { n: number }).n,
      createCalls: (callsOf.get(key) as { count: number } | undefined)?.count ?? 0,
      outputText: result
        ? content
            .filter((c) => c.type === "text" && typeof c.text === "string")
            .map((c) => c.text)
            .join("\n")
        : null,
    };
  };
  const counts = countSoak(effects, truth);
  truthDb.close();
  return { counts, driverKills, apiKills, finalizations, enqueued, wallMs: Date.now() - started, recovered };
}
