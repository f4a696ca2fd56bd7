// A real-process scenario where a misbehaving adapter looks up a crashed write in the sandbox while the API stays healthy.
import { SYSTEM_API } from "@mosoo/contracts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pollUntil, RunApiClient, type RunViewBody, enqueueCreateIssue, waitForProviderCount } from "../http-clients.js";
import { startApiProcess, startDriverProcess, startProviderProcess, writeMcpConfig, type ApiProcess } from "../stack.js";
import type { ManagedProcess } from "../managed-process.js";
import { workspaceRoot } from "../workspace-paths.js";
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

/** Runs one {@link HostileAdapterSpec}; every process is stopped at the end. */
export async function runHostileAdapterScenario(spec: HostileAdapterSpec, opts: ScenarioOptions): Promise<ScenarioResult> {
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  let current: ApiProcess | undefined;
  const probe = new HealthProbe(() => current);
  const failures: string[] = [];
  try {
    const provider = await startProviderProcess(join(workDir, "provider.db"), ["--fence-on-lookup-miss", "--hold-response-after-commit"]);
    procs.push(provider.proc);
    const bindingsFile = join(workDir, "bindings.json");
    writeFileSync(
      bindingsFile,
      JSON.stringify({ bindings: { tracker: { package: { module: misbehavingAdapterModule(), export: spec.exportName } } } }, null, 2),
    );
    const apiEnv = {
      MOSOO_EFFECT_RECONCILIATION: "on",
      MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
      MOSOO_HEARTBEAT_TTL_MS: spec.recovery === "driver_restart" ? "300000" : "1500",
      MOSOO_SWEEP_INTERVAL_MS: "250",
      MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "500",
      MOSOO_LOOKUP_BACKOFF_MAX_MS: "1000",
      MOSOO_ADAPTER_HEAP_MB: "32",
    };
    const apiDb = join(workDir, "api.db");
    current = await startApiProcess(apiDb, apiEnv);
    procs.push(current.proc);
    timeline(`API up at ${current.url}; tracker bound to ${spec.exportName} (a hostile adapter module, run in sandboxed processes)`);
    probe.start();

    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url });
    const stateFile = join(workDir, "driver-state.json");
    const driver = await startDriverProcess({
      apiUrl: current.url,
      stateFile,
      mcpConfigFile,
      name: "driver-a",
      enrollmentToken: current.credentials.enrollmentToken,
    });
    procs.push(driver.proc);
    const { control, runId, call } = await enqueueCreateIssue(current, provider, driver.driverInstanceId);
    await waitForProviderCount(control, "writes", call.idempotencyKey, STEP_TIMEOUT_MS, "the provider commits");
    timeline("provider committed the write; its response is held (lost)");
    await driver.proc.kill("SIGKILL");
    if (spec.recovery === "driver_restart") {
      const driverB = await startDriverProcess({
        apiUrl: current.url,
        stateFile,
        mcpConfigFile,
        name: "driver-b",
        enrollmentToken: current.credentials.enrollmentToken,
      });
      procs.push(driverB.proc);
      timeline(
        "Driver killed with SIGKILL; a new Driver reconnected as the same instance: the redelivered claim looks the effect up inline through the hostile adapter",
      );
    } else {
      timeline("Driver killed with SIGKILL; waiting for finalization repair to look the effect up through the hostile adapter");
    }

    const lookedUp = async (api: ApiProcess, n: number): Promise<RunViewBody> =>
      pollUntil(
        async () => {
          const v = await new RunApiClient(api.url, api.credentials.apiKey).getRun(runId);
          return v.commands[0]?.terminalAtMs && (v.effects[0]?.reconciliations.length ?? 0) >= n ? v : undefined;
        },
        STEP_TIMEOUT_MS,
        `${n} lookup(s) recorded`,
      );
    let view = await lookedUp(current, 1);
    const first = view.effects[0]!.reconciliations[0]!;
    timeline(
      `lookup (${first.trigger}): ${first.outcome} ${first.reasonCode ?? ""}; effect ${view.effects[0]!.status}; command ${view.commands[0]!.status} ${view.commands[0]!.error?.code ?? ""}`,
    );
    expectInvariant(
      failures,
      first.outcome === "still_unknown" && first.reasonCode === spec.reasonCode,
      `the first lookup must be still_unknown/${spec.reasonCode}, was ${first.outcome}/${first.reasonCode}`,
    );

    if (spec.restartApi) {
      const exitedOnItsOwn = await Promise.race([
        current.proc.exited.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 50)),
      ]);
      expectInvariant(failures, !exitedOnItsOwn, "the first API must still be running before it is stopped");
      await probe.pause();
      await current.proc.kill("SIGTERM");
      current = await startApiProcess(apiDb, apiEnv, current.credentials);
      procs.push(current.proc);
      probe.resume();
      timeline(`API restarted on the same store at ${current.url}; the sweep looks the effect up again`);
      view = await lookedUp(current, 2);
      const second = view.effects[0]!.reconciliations[1]!;
      timeline(`lookup (${second.trigger}): ${second.outcome} ${second.reasonCode ?? ""}`);
      expectInvariant(
        failures,
        second.outcome === "still_unknown" && second.reasonCode === spec.reasonCode,
        `the lookup after the restart must be still_unknown/${spec.reasonCode}, was ${second.outcome}/${second.reasonCode}`,
      );
    }
    await probe.stop();
    const apiExitedOnItsOwn = await Promise.race([
      current!.proc.exited.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 50)),
    ]);
    const effect = view.effects[0]!;
    const command = view.commands[0]!;
    const stats = await control.stats();
    const metrics = await new RunApiClient(current!.url, current!.credentials.apiKey).metrics();
    const terminations = metrics.split("\n").filter((l) => l.startsWith("mosoo_adapter_worker_terminations_total{"));
    const line = {
      scenario: `hostile-adapter/${spec.exportName}${spec.recovery === "driver_restart" ? "/driver-restart" : ""}${spec.restartApi ? "/restart" : ""}`,
      firstLookupTrigger: first.trigger,
      providerWrites: stats.writes[call.idempotencyKey] ?? 0,
      effectStatus: effect.status,
      resolution: effect.resolution,
      commandError: command.error?.code ?? null,
      lookups: effect.reconciliations.map((r) => `${r.outcome}/${r.reasonCode ?? ""}`),
      healthOk: probe.ok,
      healthFailed: probe.failed.length,
      workerTerminations: terminations,
    };
    timeline(`/health answered 200 ${probe.ok} times, failed ${probe.failed.length} times, while the adapter misbehaved`);
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
    expectInvariant(
      failures,
      command.error?.code !== "external_effect.not_executed",
      "the command must not say the write was not executed",
    );
    if (spec.reasonCode === "adapter_crashed")
      expectInvariant(
        failures,
        terminations.some((l) => /reason="(crashed|exited|out_of_memory|cpu_limit)"/.test(l)),
        "GET /metrics must count the crashed adapter process",
      );
    return { failures, line };
  } finally {
    await probe.stop();
    await Promise.all(procs.map((p) => p.kill("SIGTERM")));
  }
}
