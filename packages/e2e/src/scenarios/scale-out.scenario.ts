// The demo scenario with two API instances on one PostgreSQL database: the one the Driver uses is killed mid-call, and the Driver fails over.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startPostgres, type RunningPostgres } from "@mosoo/test-postgres";
import { pollUntil, enqueueCreateIssue, waitForProviderCount } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import {
  FIXTURE_ADAPTER_PACKAGE,
  startApiInstances,
  startDriverProcess,
  startProviderProcess,
  writeMcpConfig,
  type ApiProcess,
} from "../stack.js";
import { expectInvariant, type ScenarioOptions, type ScenarioResult } from "./scenario.types.js";

/** The demo name of {@link runScaleOutScenario}. */
export const SCALE_OUT_SCENARIO = "scale-out-api-instance-killed";

/** Bound (ms) of each wait: a bound for a hang, not a timing assertion (the shared machine is slow). */
const STEP_TIMEOUT_MS = 120_000;

/**
 * Two API instances on one PostgreSQL database, the Driver given both URLs. The
 * provider commits the write and HOLDS its response (`--hold-response-after-commit`), so the call is
 * in flight; then the instance the Driver talks to (the first URL) is SIGKILLed. Only after the kill
 * is the response released: the Driver fails over to the other instance and reports the result there
 * (settled), or the effect was fenced meanwhile and a lookup by key settles it (reconciled). Either
 * way: exactly one provider write, the effect succeeded, one terminal event of the tool call. Each
 * step waits for an observable event (provider counters, a process exit, the run view); no timer
 * decides the order. The scenario starts its own throwaway PostgreSQL server and stops it.
 */
export async function runScaleOutScenario(opts: ScenarioOptions): Promise<ScenarioResult> {
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  let server: RunningPostgres | null = null;
  try {
    server = await startPostgres({ fsync: false });
    timeline(`throwaway PostgreSQL up on port ${server.port} (started in ${server.startMs} ms)`);
    const provider = await startProviderProcess(join(workDir, "provider.db"), ["--fence-on-lookup-miss", "--hold-response-after-commit"]);
    procs.push(provider.proc);
    const bindingsFile = join(workDir, "bindings.json");
    writeFileSync(
      bindingsFile,
      JSON.stringify({ bindings: { tracker: { package: FIXTURE_ADAPTER_PACKAGE, options: { url: provider.url } } } }),
    );
    const apis: ApiProcess[] = [];
    try {
      timeline("starting API instance A, which migrates the empty database, then B, which finds it current");
      await startApiInstances({ databaseUrl: server.url, poolSize: 4 }, 2, {
        env: {
          MOSOO_EFFECT_RECONCILIATION: "on",
          MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
          MOSOO_SWEEP_INTERVAL_MS: "250",
          MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "200",
          // far above the scenario: no finalization intervenes
          MOSOO_HEARTBEAT_TTL_MS: "300000",
        },
        started: apis,
        onStarted: (api, index, startMs) =>
          timeline(`API instance ${index === 0 ? "A" : "B"} listening at ${api.url} (started in ${startMs} ms)`),
      });
    } finally {
      procs.push(...apis.map((a) => a.proc));
    }
    const [apiA, apiB] = apis as [ApiProcess, ApiProcess];
    timeline(`API instances up on one PostgreSQL database: A ${apiA.url}, B ${apiB.url}`);
    const driver = await startDriverProcess({
      apiUrl: [apiA.url, apiB.url],
      stateFile: join(workDir, "driver-state.json"),
      mcpConfigFile: writeMcpConfig(workDir, { tracker: provider.url }),
      name: "driver",
      enrollmentToken: apiA.credentials.enrollmentToken,
    });
    procs.push(driver.proc);
    timeline(`Driver ${driver.driverInstanceId} connected, given both URLs (A first)`);
    const { runs, control, runId, call } = await enqueueCreateIssue(apiB, provider, driver.driverInstanceId);
    timeline(`queued createIssue on B (effect ${call.effectId}); the Driver polls A`);
    await waitForProviderCount(control, "writes", call.idempotencyKey, STEP_TIMEOUT_MS, "the provider commits");
    await apiA.proc.kill("SIGKILL");
    timeline("the provider committed and holds its response; API instance A was killed with SIGKILL mid-call");
    await control.release();
    timeline("the provider's response is released: the Driver must report it to B");
    const view = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.effects[0]?.status === "succeeded" && v.commands[0]?.terminalAtMs ? v : undefined;
      },
      STEP_TIMEOUT_MS,
      "the effect settles on B",
    );
    const effect = view.effects[0];
    const stats = await control.stats();
    const terminalEvents = view.events.filter((e) => e.type === "tool_call.completed" || e.type === "tool_call.failed").length;
    const line = {
      scenario: SCALE_OUT_SCENARIO,
      store: "postgres",
      apiInstances: 2,
      apiInstancesKilled: 1,
      providerWrites: stats.writes[call.idempotencyKey] ?? 0,
      providerCalls: stats.createCalls[call.idempotencyKey] ?? 0,
      lookups: stats.lookups[call.idempotencyKey] ?? 0,
      effectStatus: effect?.status,
      resolution: effect?.resolution ?? null,
      fenced: view.events.some((e) => e.type === "effect.fenced"),
      commandStatus: view.commands[0]?.status,
      terminalEvents,
    };
    // A had exited (the kill above waits for it) before the provider answered: every write since is B's
    timeline(`settled on B, the one instance left: ${line.effectStatus} (${line.resolution})${line.fenced ? ", after a fence" : ""}`);
    const failures: string[] = [];
    expectInvariant(
      failures,
      line.providerWrites === 1 && line.providerCalls === 1,
      `the provider must have run once (writes ${line.providerWrites}, calls ${line.providerCalls})`,
    );
    expectInvariant(
      failures,
      line.effectStatus === "succeeded" && ["provider_result", "reported_late", "reconciled"].includes(String(line.resolution)),
      `the effect must end succeeded (settled, or fenced then reconciled), was ${line.effectStatus} (${line.resolution})`,
    );
    expectInvariant(failures, terminalEvents === 1, `the tool call must have one terminal event, had ${terminalEvents}`);
    expectInvariant(failures, view.events.filter((e) => e.terminal).length <= 1, "a run has at most one terminal event");
    return { failures, line };
  } finally {
    await Promise.all(procs.map((p) => p.kill("SIGTERM")));
    await server?.stop();
  }
}
