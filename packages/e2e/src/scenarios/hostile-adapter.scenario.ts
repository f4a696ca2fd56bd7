// A real-process scenario where a misbehaving adapter looks up a crashed write in the sandbox while the API stays healthy.
import { SYSTEM_API } from "@mosoo/contracts";
import { join } from "node:path";
import { pollUntil, RunApiClient, type RunViewBody, enqueueCreateIssue, waitForProviderCount } from "../http-clients.js";
import { startApiProcess, startScenarioDriver, type ApiProcess, type ProviderProcess } from "../stack.js";
import type { ManagedProcess } from "../managed-process.js";
import { workspaceRoot } from "../workspace-paths.js";
import {
  reconcilingApiEnv,
  startScenarioProvider,
  stopScenarioProcesses,
  trackerDriverFiles,
  writeBindingsFile,
  type ScenarioDriverFiles,
} from "./scenario-steps.js";
import { expectInvariant, type ScenarioOptions, type ScenarioResult } from "./scenario.types.js";

/** Time (ms) a step waits for a write to land, a Driver to be finalized or a lookup to be recorded. */
const STEP_TIMEOUT_MS = 45_000;
/** How often (ms) the scenario asks the API's `GET /health` while the hostile adapter runs. */
const HEALTH_PERIOD_MS = 100;

/**
 * The hostile adapter modules of the API's tests (`apps/api/tests/fixtures/adapters/misbehaving.adapter.ts`),
 * bound by a bindings file's `package: {module, export}` as any installable adapter would be.
 */
function misbehavingAdapterModule(): string {
  return join(workspaceRoot(), "apps", "api", "tests", "fixtures", "adapters", "misbehaving.adapter.ts");
}

/**
 * A real-process scenario (see `createIsolatedAdapterHost` in adapter-sandbox.host.ts): the fixture
 * provider commits a `createIssue` write and holds its response, the Driver is SIGKILLed, and (see
 * {@link HostileAdapterSpec.recovery}) either no Driver comes back and the API's finalization repair, or a
 * restarted Driver's redelivered claim, looks the effect up through the hostile adapter
 * `exportName` (a factory of the misbehaving fixture module), run in the API's sandboxed adapter processes.
 * With `restartApi` the API is then stopped and started again on the same store, and the sweep's
 * next lookups run through the same adapter. Throughout, `GET /health` is asked every
 * {@link HEALTH_PERIOD_MS} ms; every answer must be 200 and no API process may exit on its own.
 */
export interface HostileAdapterSpec {
  exportName: string;
  /** The runtime reason code the first lookup must record (`in_flight_window`, `adapter_crashed`, …). */
  reasonCode: string;
  restartApi: boolean;
  /**
   * How the effect reaches the adapter after the Driver's SIGKILL: `finalization` (default; no
   * Driver comes back, the sweep's finalization repair looks it up) or `driver_restart` (a new
   * Driver process on the same state file reconnects; the redelivered claim fences the effect and
   * looks it up inline; the API's heartbeat TTL is far above any restart time, so no finalization races it).
   */
  recovery?: "finalization" | "driver_restart";
}

/**
 * Asks `/health` of the current API every {@link HEALTH_PERIOD_MS} ms until stopped; counts answers.
 * `pause()` waits for the request in flight, so stopping an API on purpose never counts as a failure.
 */
class HealthProbe {
  ok = 0;
  failed: string[] = [];
  private stopped = false;
  private paused = false;
  private loop: Promise<void> | undefined;
  private inFlight: Promise<void> = Promise.resolve();
  constructor(private api: () => ApiProcess | undefined) {}
  async pause(): Promise<void> {
    this.paused = true;
    await this.inFlight;
  }
  resume(): void {
    this.paused = false;
  }
  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const api = this.paused ? undefined : this.api();
        if (api) this.inFlight = this.ask(api);
        await this.inFlight;
        await new Promise((resolve) => setTimeout(resolve, HEALTH_PERIOD_MS));
      }
    })();
  }
  private async ask(api: ApiProcess): Promise<void> {
    try {
      const res = await fetch(api.url + SYSTEM_API.health.path, { signal: AbortSignal.timeout(5_000) });
      if (res.status === 200) this.ok += 1;
      else this.failed.push(`HTTP ${res.status}`);
    } catch (error) {
      this.failed.push(error instanceof Error ? error.message : String(error));
    }
  }
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

/** True when `proc` has exited on its own, judged within 50 ms (a process still running answers false). */
async function exitedOnItsOwn(proc: ManagedProcess): Promise<boolean> {
  return Promise.race([proc.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 50))]);
}

/** The scenario's running state: the provider, the current API (replaced on a restart) and how to start another. */
interface HostileStack {
  provider: ProviderProcess;
  /** The API `/health` is asked of (replaced when the scenario restarts the API). */
  current: ApiProcess;
  apiDb: string;
  apiEnv: Record<string, string>;
  files: ScenarioDriverFiles;
}

/**
 * Starts the provider (fences on a lookup miss, holds each response after its commit) and the API with
 * `tracker` bound to the hostile adapter `spec.exportName` (sandboxed, 32 MB heap; short heartbeat TTL
 * unless the recovery is a Driver restart); each process is pushed onto `procs`.
 */
async function startHostileStack(
  spec: HostileAdapterSpec,
  { workDir, timeline }: ScenarioOptions,
  procs: ManagedProcess[],
): Promise<HostileStack> {
  const provider = await startScenarioProvider(workDir, ["--fence-on-lookup-miss", "--hold-response-after-commit"], procs);
  const bindingsFile = writeBindingsFile(workDir, {
    tracker: { package: { module: misbehavingAdapterModule(), export: spec.exportName } },
  });
  const apiEnv = reconcilingApiEnv(bindingsFile, {
    MOSOO_HEARTBEAT_TTL_MS: spec.recovery === "driver_restart" ? "300000" : "1500",
    MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "500",
    MOSOO_LOOKUP_BACKOFF_MAX_MS: "1000",
    MOSOO_ADAPTER_HEAP_MB: "32",
  });
  const apiDb = join(workDir, "api.db");
  const current = await startApiProcess(apiDb, apiEnv);
  procs.push(current.proc);
  timeline(`API up at ${current.url}; tracker bound to ${spec.exportName} (a hostile adapter module, run in sandboxed processes)`);
  return { provider, current, apiDb, apiEnv, files: trackerDriverFiles(workDir, provider.url) };
}

/**
 * Starts Driver A, queues `createIssue`, waits for the provider's commit and SIGKILLs Driver A; with
 * the `driver_restart` recovery Driver B then reconnects as the same instance.
 * @returns the queued call's clients and ids.
 */
async function crashDriver(
  spec: HostileAdapterSpec,
  stack: HostileStack,
  api: ApiProcess,
  procs: ManagedProcess[],
  timeline: ScenarioOptions["timeline"],
) {
  const driver = await startScenarioDriver(api, stack.files, "driver-a", procs);
  const queued = await enqueueCreateIssue(api, stack.provider, driver.driverInstanceId);
  await waitForProviderCount(queued.control, "writes", queued.call.idempotencyKey, STEP_TIMEOUT_MS, "the provider commits");
  timeline("provider committed the write; its response is held (lost)");
  await driver.proc.kill("SIGKILL");
  if (spec.recovery === "driver_restart") {
    await startScenarioDriver(api, stack.files, "driver-b", procs);
    timeline(
      "Driver killed with SIGKILL; a new Driver reconnected as the same instance: the redelivered claim looks the effect up inline through the hostile adapter",
    );
  } else {
    timeline("Driver killed with SIGKILL; waiting for finalization repair to look the effect up through the hostile adapter");
  }
  return queued;
}

/** Polls the run on `api` until its command ended and its effect has `n` lookups recorded. */
function waitForLookups(api: ApiProcess, runId: string, n: number): Promise<RunViewBody> {
  return pollUntil(
    async () => {
      const v = await new RunApiClient(api.url, api.credentials.apiKey).getRun(runId);
      return v.commands[0]?.terminalAtMs && (v.effects[0]?.reconciliations.length ?? 0) >= n ? v : undefined;
    },
    STEP_TIMEOUT_MS,
    `${n} lookup(s) recorded`,
  );
}

/**
 * Stops the API on purpose (the health probe paused meanwhile), starts it again on the same store with
 * the same credentials, and waits for the sweep's second lookup, which must give the same reason code.
 * @returns the run's view with two lookups.
 */
async function restartApiAndLookAgain(
  spec: HostileAdapterSpec,
  stack: HostileStack,
  probe: HealthProbe,
  runId: string,
  procs: ManagedProcess[],
  failures: string[],
  timeline: ScenarioOptions["timeline"],
): Promise<RunViewBody> {
  const first = stack.current;
  expectInvariant(failures, !(await exitedOnItsOwn(first.proc)), "the first API must still be running before it is stopped");
  await probe.pause();
  await first.proc.kill("SIGTERM");
  const api = await startApiProcess(stack.apiDb, stack.apiEnv, first.credentials);
  stack.current = api;
  procs.push(api.proc);
  probe.resume();
  timeline(`API restarted on the same store at ${api.url}; the sweep looks the effect up again`);
  const view = await waitForLookups(api, runId, 2);
  const second = view.effects[0]!.reconciliations[1]!;
  timeline(`lookup (${second.trigger}): ${second.outcome} ${second.reasonCode ?? ""}`);
  expectInvariant(
    failures,
    second.outcome === "still_unknown" && second.reasonCode === spec.reasonCode,
    `the lookup after the restart must be still_unknown/${spec.reasonCode}, was ${second.outcome}/${second.reasonCode}`,
  );
  return view;
}

/**
 * The end-of-scenario invariants: the API still running, every `/health` answer 200 (and some asked),
 * the effect still `unknown`, the command not claiming `not_executed`, and for `adapter_crashed` the
 * crashed adapter process counted in `GET /metrics`.
 */
function checkHostileInvariants(
  spec: HostileAdapterSpec,
  view: RunViewBody,
  probe: HealthProbe,
  apiExitedOnItsOwn: boolean,
  terminations: string[],
  failures: string[],
): void {
  const effect = view.effects[0]!;
  const command = view.commands[0]!;
  expectInvariant(failures, !apiExitedOnItsOwn, "the API process must still be running");
  expectInvariant(
    failures,
    probe.failed.length === 0,
    `every /health request must answer 200; failures: ${probe.failed.slice(0, 3).join("; ")}`,
  );
  expectInvariant(failures, probe.ok > 0, "/health must have been asked");
  expectInvariant(
    failures,
    effect.status === "unknown" && effect.resolution === null,
    `the effect must stay unknown, was ${effect.status}/${effect.resolution}`,
  );
  expectInvariant(failures, command.error?.code !== "external_effect.not_executed", "the command must not say the write was not executed");
  if (spec.reasonCode === "adapter_crashed")
    expectInvariant(
      failures,
      terminations.some((l) => /reason="(crashed|exited|out_of_memory|cpu_limit)"/.test(l)),
      "GET /metrics must count the crashed adapter process",
    );
}

/** Runs one {@link HostileAdapterSpec}; every process is stopped at the end. */
export async function runHostileAdapterScenario(spec: HostileAdapterSpec, opts: ScenarioOptions): Promise<ScenarioResult> {
  const { timeline } = opts;
  const procs: ManagedProcess[] = [];
  let stack: HostileStack | undefined;
  const probe = new HealthProbe(() => stack?.current);
  const failures: string[] = [];
  try {
    stack = await startHostileStack(spec, opts, procs);
    probe.start();
    const { control, runId, call } = await crashDriver(spec, stack, stack.current, procs, timeline);
    let view = await waitForLookups(stack.current, runId, 1);
    const first = view.effects[0]!.reconciliations[0]!;
    timeline(
      `lookup (${first.trigger}): ${first.outcome} ${first.reasonCode ?? ""}; effect ${view.effects[0]!.status}; command ${view.commands[0]!.status} ${view.commands[0]!.error?.code ?? ""}`,
    );
    expectInvariant(
      failures,
      first.outcome === "still_unknown" && first.reasonCode === spec.reasonCode,
      `the first lookup must be still_unknown/${spec.reasonCode}, was ${first.outcome}/${first.reasonCode}`,
    );
    if (spec.restartApi) view = await restartApiAndLookAgain(spec, stack, probe, runId, procs, failures, timeline);
    await probe.stop();
    const current = stack.current;
    const apiExitedOnItsOwn = await exitedOnItsOwn(current.proc);
    const effect = view.effects[0]!;
    const stats = await control.stats();
    const metrics = await new RunApiClient(current.url, current.credentials.apiKey).metrics();
    const terminations = metrics.split("\n").filter((l) => l.startsWith("mosoo_adapter_worker_terminations_total{"));
    const line = {
      scenario: `hostile-adapter/${spec.exportName}${spec.recovery === "driver_restart" ? "/driver-restart" : ""}${spec.restartApi ? "/restart" : ""}`,
      firstLookupTrigger: first.trigger,
      providerWrites: stats.writes[call.idempotencyKey] ?? 0,
      effectStatus: effect.status,
      resolution: effect.resolution,
      commandError: view.commands[0]!.error?.code ?? null,
      lookups: effect.reconciliations.map((r) => `${r.outcome}/${r.reasonCode ?? ""}`),
      healthOk: probe.ok,
      healthFailed: probe.failed.length,
      workerTerminations: terminations,
    };
    timeline(`/health answered 200 ${probe.ok} times, failed ${probe.failed.length} times, while the adapter misbehaved`);
    checkHostileInvariants(spec, view, probe, apiExitedOnItsOwn, terminations, failures);
    return { failures, line };
  } finally {
    await probe.stop();
    await stopScenarioProcesses(procs);
  }
}
