// Steps the real-process scenarios share: starting the provider and API into the scenario's folder, the Driver's files, waits and checks.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KeyPlacement } from "@mosoo/contracts";
import { pollUntil, type RunApiClient, type RunViewBody } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import { startApiProcess, startProviderProcess, writeMcpConfig, type ApiProcess, type ProviderProcess } from "../stack.js";
import { expectInvariant } from "./scenario.types.js";

/**
 * Starts the fixture provider with its SQLite file `provider.db` in `workDir` and CLI `flags`; its
 * process is pushed onto `procs` (stopped by {@link stopScenarioProcesses}).
 * @throws Error as {@link startProviderProcess}.
 */
export async function startScenarioProvider(workDir: string, flags: string[], procs: ManagedProcess[]): Promise<ProviderProcess> {
  const provider = await startProviderProcess(join(workDir, "provider.db"), flags);
  procs.push(provider.proc);
  return provider;
}

/**
 * Writes the API's reconciliation bindings file (`{"bindings": {...}}`, e.g. `{tracker: {package, options}}`)
 * as `bindings.json` in `workDir` and returns its path.
 */
export function writeBindingsFile(workDir: string, bindings: Record<string, unknown>): string {
  const file = join(workDir, "bindings.json");
  writeFileSync(file, JSON.stringify({ bindings }, null, 2));
  return file;
}

/**
 * The API variables of a scenario with reconciliation on and `bindingsFile` bound: a 250 ms sweep and a
 * heartbeat TTL (ms) far above any Driver restart time (so a restart path is certain and no finalization
 * overtakes it); `extra` adds or overrides variables.
 */
export function reconcilingApiEnv(bindingsFile: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    MOSOO_EFFECT_RECONCILIATION: "on",
    MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
    MOSOO_HEARTBEAT_TTL_MS: "300000",
    MOSOO_SWEEP_INTERVAL_MS: "250",
    ...extra,
  };
}

/**
 * Starts the API with its SQLite file `api.db` in `workDir` and `env` (see {@link startApiProcess});
 * its process is pushed onto `procs`.
 * @throws Error as {@link startApiProcess}.
 */
export async function startScenarioApi(workDir: string, env: Record<string, string>, procs: ManagedProcess[]): Promise<ApiProcess> {
  const api = await startApiProcess(join(workDir, "api.db"), env);
  procs.push(api.proc);
  return api;
}

/** The files every Driver of a scenario shares: its state file and its MCP config. */
export interface ScenarioDriverFiles {
  stateFile: string;
  mcpConfigFile: string;
}

/**
 * Writes the Driver's MCP config (server `tracker` at `providerUrl`, with `keyPlacement` when the
 * provider wants the key elsewhere) into `workDir` and names its state file `driver-state.json` there.
 */
export function trackerDriverFiles(
  workDir: string,
  providerUrl: string,
  keyPlacement: Record<string, KeyPlacement> = {},
): ScenarioDriverFiles {
  return {
    mcpConfigFile: writeMcpConfig(workDir, { tracker: providerUrl }, keyPlacement),
    stateFile: join(workDir, "driver-state.json"),
  };
}

/**
 * Polls the run until its first command has a terminal receipt.
 * @returns the run's view at that moment.
 * @throws Error `e2e.timeout` after `timeoutMs` (ms).
 */
export function waitForCommandEnd(runs: RunApiClient, runId: string, timeoutMs: number): Promise<RunViewBody> {
  return pollUntil(
    async () => {
      const v = await runs.getRun(runId);
      return v.commands[0]?.terminalAtMs ? v : undefined;
    },
    timeoutMs,
    "the command ends",
  );
}

/** Adds one failure to `failures` for every key of `want` whose value in `line` differs (compared as JSON). */
export function expectLineMatches(failures: string[], line: Record<string, unknown>, want: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(want)) {
    const got = line[key];
    expectInvariant(
      failures,
      JSON.stringify(got) === JSON.stringify(value),
      `${key} must be ${JSON.stringify(value)}, was ${JSON.stringify(got)}`,
    );
  }
}

/** Sends SIGTERM to every process of a scenario and waits for all of them to exit. */
export async function stopScenarioProcesses(procs: ManagedProcess[]): Promise<void> {
  await Promise.all(procs.map((p) => p.kill("SIGTERM")));
}
