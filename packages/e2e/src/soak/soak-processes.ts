// The soak's API instances and Driver slots: (re)start them (tried again through database faults), stop them, and record each Driver life and kill.
import { join } from "node:path";
import { ManagedProcess } from "../managed-process.js";
import { entryPoints, type EntryMode } from "../workspace-paths.js";
import {
  credentialsEnv,
  READY_TIMEOUT_MS,
  startDriverProcess,
  storeEnv,
  type ApiStoreLocation,
  type DriverProcess,
  type StackCredentials,
} from "../stack.js";
import type { DriverKill, DriverLife } from "./soak-verdicts.js";

/** How many times a process start is tried (one second apart) before the soak gives up: a start may fall into a database fault. */
const START_TRIES = 60;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What every API instance of the soak runs with: `store`, fixed `ports` (one per instance, so Drivers
 * find an instance again after its restart), `reconciliation` with its `bindingsFile`, the heartbeat
 * TTL `ttlMs`, the soak's one set of `credentials`, and `entry` (see {@link EntryMode}).
 */
export interface SoakApiSettings {
  store: ApiStoreLocation;
  ports: readonly number[];
  reconciliation: boolean;
  bindingsFile: string;
  ttlMs: number;
  credentials: StackCredentials;
  entry: EntryMode;
}

/** The soak's API instances: `apis[i]` is instance i's running process (null before its first start). */
export interface SoakApis {
  apis: Array<ManagedProcess | null>;
  /**
   * (Re)starts instance i and waits for its `api.listening` line; a start that falls into a database
   * fault exits (config.invalid) and is tried again, up to 60 times one second apart.
   * @throws Error the last start's error (`e2e.timeout`, `e2e.process_exited`) when every try failed.
   */
  start: (i: number) => Promise<void>;
}

/** The soak's API instances, none started yet (one per port). */
export function createSoakApis(settings: SoakApiSettings): SoakApis {
  const { store, ports, reconciliation, bindingsFile, ttlMs, credentials } = settings;
  const e = entryPoints(settings.entry);
  const apis: Array<ManagedProcess | null> = ports.map(() => null);
  const start = async (i: number) => {
    for (let attempt = 1; ; attempt++) {
      const proc = new ManagedProcess({
        name: `api-${i}`,
        command: e.node,
        args: e.api.args,
        cwd: e.api.cwd,
        env: {
          ...storeEnv(store),
          MOSOO_PORT: String(ports[i]),
          MOSOO_LOG_LEVEL: "info",
          MOSOO_EFFECT_RECONCILIATION: reconciliation ? "on" : "off",
          ...(reconciliation ? { MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile } : {}),
          MOSOO_HEARTBEAT_TTL_MS: String(ttlMs),
          MOSOO_SWEEP_INTERVAL_MS: "200",
          MOSOO_LOOKUP_TIMEOUT_MS: "2000",
          MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "200",
          MOSOO_LOOKUP_BACKOFF_MAX_MS: "2000",
          MOSOO_MAX_LOOKUPS: "20",
          ...credentialsEnv(credentials),
        },
      });
      try {
        await proc.waitForLine((j) => j["msg"] === "api.listening", READY_TIMEOUT_MS, "api.listening");
      } catch (error) {
        await proc.kill("SIGKILL");
        if (attempt >= START_TRIES) throw error;
        await sleep(1_000);
        continue;
      }
      proc.lines.length = 0; // the soak keeps no API log history in memory
      apis[i] = proc;
      return;
    }
  };
  return { apis, start };
}

/** One Driver slot: its name and state file (fixed), its current process, the instance and run it holds, and its current life. */
export interface SoakDriverSlot {
  name: string;
  stateFile: string;
  proc: DriverProcess | null;
  instanceId: string | null;
  runId: string | null;
  /** The life of its current process (see {@link DriverLife}). */
  life: DriverLife | null;
}

/** What every Driver of the soak runs with: `count` slots, state files in `workDir`, every API URL, the MCP config, the enrollment token, `entry`. */
export interface SoakDriverSettings {
  count: number;
  workDir: string;
  apiUrls: readonly string[];
  mcpConfigFile: string;
  enrollmentToken: string;
  entry: EntryMode;
}

/**
 * The soak's Driver slots and what it recorded of them: every process `lives` and every SIGKILL
 * (`kills`), and in `stats` the restarts that came back as the same instance (`sameInstanceRestarts`)
 * or as a new one after a finalization (`finalizations`).
 */
export interface SoakDrivers {
  slots: SoakDriverSlot[];
  lives: DriverLife[];
  kills: DriverKill[];
  stats: { finalizations: number; sameInstanceRestarts: number };
  /**
   * (Re)starts a Driver: the same state file reconnects the same instance (counted in
   * `sameInstanceRestarts`); a finalized one exits 1 and registers anew on the next start (`finalizations`).
   * Tried up to 60 times one second apart. @throws Error the last start's error when every try failed.
   */
  start: (slot: SoakDriverSlot) => Promise<void>;
  /** Kills (or stops) a slot's process; its life ends now, and a SIGKILL is recorded against its instance. */
  stop: (slot: SoakDriverSlot, signal: NodeJS.Signals) => Promise<void>;
  /** True when the slot has a process that has not exited. */
  alive: (slot: SoakDriverSlot) => boolean;
}

/** The soak's Driver slots, none started yet. */
export function createSoakDrivers(settings: SoakDriverSettings): SoakDrivers {
  const { apiUrls, mcpConfigFile, enrollmentToken, entry } = settings;
  const slots: SoakDriverSlot[] = Array.from({ length: settings.count }, (_, i) => ({
    name: `soak-driver-${i}`,
    stateFile: join(settings.workDir, `driver-${i}.json`),
    proc: null,
    instanceId: null,
    runId: null,
    life: null,
  }));
  const stats = { finalizations: 0, sameInstanceRestarts: 0 };
  const lives: DriverLife[] = [];
  const kills: DriverKill[] = [];
  const exited = new WeakSet<ManagedProcess>();

  const start = async (slot: SoakDriverSlot) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const d = await startDriverProcess({
          apiUrl: apiUrls,
          stateFile: slot.stateFile,
          mcpConfigFile,
          name: slot.name,
          enrollmentToken,
          entry,
        });
        d.proc.lines.length = 0;
        if (slot.instanceId && slot.instanceId !== d.driverInstanceId) {
          stats.finalizations += 1;
          slot.runId = null;
        } else if (slot.instanceId) stats.sameInstanceRestarts += 1;
        slot.proc = d;
        slot.instanceId = d.driverInstanceId;
        const life: DriverLife = { instanceId: d.driverInstanceId, connectedAtMs: Date.now(), endedAtMs: null };
        lives.push(life);
        slot.life = life;
        void d.proc.exited.then(() => {
          exited.add(d.proc);
          life.endedAtMs ??= Date.now();
        });
        return;
      } catch (error) {
        if (attempt >= START_TRIES) throw error;
        await sleep(1_000);
      }
    }
  };
  const stop = async (slot: SoakDriverSlot, signal: NodeJS.Signals) => {
    if (!slot.proc) return;
    if (slot.life && slot.life.endedAtMs === null) slot.life.endedAtMs = Date.now();
    if (signal === "SIGKILL" && slot.instanceId) kills.push({ instanceId: slot.instanceId, atMs: Date.now() });
    await slot.proc.proc.kill(signal);
  };
  const alive = (slot: SoakDriverSlot) => slot.proc !== null && !exited.has(slot.proc.proc);
  return { slots, lives, kills, stats, start, stop, alive };
}
