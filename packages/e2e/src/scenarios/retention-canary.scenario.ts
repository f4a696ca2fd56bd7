// Demo scenario: a provider that forgets keys sooner than its adapter declares; the retention canary refuses its miss.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { enqueueCreateIssue, pollUntil, showEffectAsOperator, waitForProviderCount } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import {
  FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE,
  startApiProcess,
  startScenarioDriver,
  startProviderProcess,
  writeMcpConfig,
} from "../stack.js";
import { expectInvariant, type ScenarioOptions, type ScenarioResult } from "./scenario.types.js";
import { SECOND_ISSUE } from "./turn-follow-up.js";

/** Name of the scenario in `npm run demo -- --only <name>`. */
export const RETENTION_CANARY_SCENARIO = "retention-canary-refuses-forgetful-provider";

/** Bound (ms) of each wait for an event on the shared 2-core machine: a guard against a hang, not a timing assertion. */
const STEP_TIMEOUT_MS = 180_000;

/** The counter of contradicted canaries in the API's Prometheus text, or 0 when absent. */
function contradictedCanaries(metrics: string): number {
  const line = metrics
    .split("\n")
    .find((l) => l.startsWith("mosoo_effect_reconciliation_retention_canary_total") && l.includes('verdict="contradicted"'));
  return line ? Number(line.trim().split(/\s+/).pop()) : 0;
}

/**
 * `retention-canary-refuses-forgetful-provider` (see `RetentionCanary` in retention-canary.service.ts): the fixture
 * provider runs without a key fence and `tracker` is bound to the fixture adapter's `max_in_flight`
 * variant (it declares 30 days of retention and believes a miss). A first `createIssue` (the canary)
 * completes; the provider then holds the response of a second one after its commit, its `forgetKeys`
 * fault makes it answer every committed key "not found", and the Driver is SIGKILLed.
 * A new Driver reconnects; the second effect's lookups miss, and once the in-flight window is over the
 * runtime asks the same adapter about the canary, which the provider no longer finds either. Waits
 * for the effect to be flagged for an operator (a condition, never a timer). Invariants: the miss is
 * refused `still_unknown` (`retention_contradicted`), the effect stays `unknown` with operator
 * attention `retention_contradicted`, one provider write per key (two in all), no effect
 * `not_executed`, the canary still `succeeded`, and the metric counted the contradiction.
 */
export async function runRetentionCanaryScenario(opts: ScenarioOptions): Promise<ScenarioResult> {
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const provider = await startProviderProcess(join(workDir, "provider.db")); // no --fence-on-lookup-miss: no fence
    procs.push(provider.proc);
    timeline(`provider up at ${provider.url} (no key fence)`);

    const bindingsFile = join(workDir, "bindings.json");
    writeFileSync(
      bindingsFile,
      JSON.stringify({ bindings: { tracker: { package: FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE, options: { url: provider.url } } } }),
    );
    const api = await startApiProcess(join(workDir, "api.db"), {
      MOSOO_EFFECT_RECONCILIATION: "on",
      MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
      // far above any Driver restart time: the restart path is certain, no finalization overtakes it
      MOSOO_HEARTBEAT_TTL_MS: "300000",
      MOSOO_SWEEP_INTERVAL_MS: "250",
      // lookups refused inside the in-flight window are retried every ≤ 2 s, and never hit the lookup bound first
      MOSOO_LOOKUP_BACKOFF_MAX_MS: "2000",
      MOSOO_MAX_LOOKUPS: "1000",
    });
    procs.push(api.proc);
    timeline(
      `API up at ${api.url}, reconciliation on, tracker bound to ${FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE.export} (max_in_flight, 30 days declared)`,
    );

    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url });
    const stateFile = join(workDir, "driver-state.json");
    const driverA = await startScenarioDriver(api, { stateFile, mcpConfigFile }, "driver-a", procs);
    timeline(`Driver A connected as instance ${driverA.driverInstanceId}`);

    const { runs, control, runId, call: canary } = await enqueueCreateIssue(api, provider, driverA.driverInstanceId);
    await pollUntil(
      async () => ((await runs.getRun(runId)).effects.find((e) => e.id === canary.effectId)?.status === "succeeded" ? true : undefined),
      STEP_TIMEOUT_MS,
      "the canary write succeeds",
    );
    timeline(`the first createIssue succeeded (effect ${canary.effectId}): the retention canary`);

    await control.setFaults({ holdResponseAfterCommit: true });
    const second = await runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", ...SECOND_ISSUE });
    await waitForProviderCount(control, "writes", second.idempotencyKey, STEP_TIMEOUT_MS, "the provider commits the second write");
    timeline(`the provider committed the second write (effect ${second.effectId}) and holds its response`);
    // Before the crash, so that no lookup of the effect can ever find its key.
    await control.setFaults({ forgetKeys: true });
    timeline("the provider now forgets every committed key (forgetKeys fault): getOperation answers not found");
    await driverA.proc.kill("SIGKILL");
    timeline("Driver A killed with SIGKILL");

    const driverB = await startScenarioDriver(api, { stateFile, mcpConfigFile }, "driver-b", procs);
    timeline("Driver B reconnected as the same instance; the second command is redelivered");

    const detail = await pollUntil(
      async () => {
        const d = await showEffectAsOperator(api.url, api.credentials.operatorToken, second.effectId);
        // flagged, or settled (a violation the invariants below report); `executing` / `unknown` without a flag: not yet
        return d.operatorAttention !== null || !["executing", "unknown"].includes(d.status) ? d : undefined;
      },
      STEP_TIMEOUT_MS,
      "the second effect is flagged for an operator or settles",
    );
    for (const r of detail.reconciliations) timeline(`lookup (${r.trigger}): ${r.outcome}${r.reasonCode ? ` ${r.reasonCode}` : ""}`);
    const view = await runs.getRun(runId);
    const last = detail.reconciliations.at(-1);
    timeline(`effect ${detail.status}, operator attention ${detail.operatorAttention}`);

    const stats = await control.stats();
    const metrics = await runs.metrics();
    const line = {
      scenario: RETENTION_CANARY_SCENARIO,
      providerWrites: stats.writes[second.idempotencyKey] ?? 0,
      canaryProviderWrites: stats.writes[canary.idempotencyKey] ?? 0,
      providerWritesAll: Object.values(stats.writes).reduce((a, b) => a + b, 0),
      lookups: stats.lookups[second.idempotencyKey] ?? 0,
      canaryLookups: stats.lookups[canary.idempotencyKey] ?? 0,
      lastOutcome: last?.outcome ?? null,
      reasonCode: last?.reasonCode ?? null,
      effectStatus: detail.status,
      operatorAttention: detail.operatorAttention,
      canaryStatus: view.effects.find((e) => e.id === canary.effectId)?.status,
      notExecuted: view.effects.filter((e) => e.status === "not_executed").length,
      retentionContradictedMetric: contradictedCanaries(metrics),
      adapter: last ? `${last.adapterId}@${last.adapterVersion}` : null,
    };
    const failures: string[] = [];
    const want: Record<string, unknown> = {
      providerWrites: 1,
      canaryProviderWrites: 1,
      providerWritesAll: 2,
      lastOutcome: "still_unknown",
      reasonCode: "retention_contradicted",
      effectStatus: "unknown",
      operatorAttention: "retention_contradicted",
      canaryStatus: "succeeded",
      notExecuted: 0,
    };
    for (const [key, value] of Object.entries(want)) {
      const got = (line as Record<string, unknown>)[key];
      expectInvariant(
        failures,
        JSON.stringify(got) === JSON.stringify(value),
        `${key} must be ${JSON.stringify(value)}, was ${JSON.stringify(got)}`,
      );
    }
    expectInvariant(failures, line.canaryLookups >= 1, "the adapter must have been asked about the canary's key");
    expectInvariant(failures, line.retentionContradictedMetric >= 1, "the retention canary metric must count the contradiction");
    return { failures, line };
  } finally {
    await Promise.all(procs.map((p) => p.kill("SIGTERM")));
  }
}
