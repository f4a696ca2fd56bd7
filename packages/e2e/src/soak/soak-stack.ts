// The soak's stack and its lifecycle: start the provider, API instances and Drivers; await recovery; stop everything.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import getPort from "get-port";
import type { RunningPostgres } from "@mosoo/test-postgres";
import { ProviderControlClient, RunApiClient } from "../http-clients.js";
import { FIXTURE_ADAPTER_PACKAGE, newStackCredentials, startProviderProcess, writeMcpConfig, type ProviderProcess } from "../stack.js";
import { openLedgerReader, type LedgerReader } from "./soak-ledger.js";
import { DEFAULT_LATE_RESTART_RATIO, DEFAULT_SOAK_HEARTBEAT_TTL_MS, type SoakOptions } from "./soak-options.js";
import { createSoakApis, createSoakDrivers, type SoakApis, type SoakDrivers } from "./soak-processes.js";

/** Bound (ms) of the recovery wait (every command terminal, no effect executing or due for a lookup). */
const RECOVERY_TIMEOUT_MS = 300_000;

/** mulberry32: a small seeded PRNG in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Resolves after `ms` (ms). */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The soak's running processes, its seeded choices and its settings, shared by its steps. */
export interface SoakStack {
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
export interface SoakTally {
  enqueued: number;
  driverKills: number;
  apiKills: number;
}

/**
 * Starts the stack: the fixture provider (fences a key on a lookup miss), its bindings file, one fixed
 * port per API instance, the API instances (one set of fresh secrets) and every Driver, in that order.
 */
export async function startSoakStack(opts: SoakOptions, instanceCount: number, pgServer: RunningPostgres | null): Promise<SoakStack> {
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
 * Recovery: every Driver up, the provider answers at once, then waits (at most {@link RECOVERY_TIMEOUT_MS})
 * until the ledger is quiet, and logs whether it got there.
 * @returns the open ledger reader and whether recovery finished.
 */
export async function awaitRecovery(
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

/** Stops every Driver and API instance with SIGTERM, then the provider (each waited for, in that order). */
export async function stopSoakStack(stack: SoakStack): Promise<void> {
  for (const slot of stack.drivers.slots) await stack.drivers.stop(slot, "SIGTERM");
  for (const api of stack.apis) await api?.kill("SIGTERM");
  await stack.provider.proc.kill("SIGTERM");
}
