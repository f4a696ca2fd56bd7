// Demo scenario: a provider that forgets keys sooner than its adapter declares; the retention canary refuses its miss.
import { enqueueCreateIssue, pollUntil, showEffectAsOperator, waitForProviderCount } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import {
  FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE,
  startScenarioDriver,
  type ApiProcess,
  type DriverProcess,
  type ProviderProcess,
} from "../stack.js";
import {
  expectLineMatches,
  reconcilingApiEnv,
  startScenarioApi,
  startScenarioProvider,
  stopScenarioProcesses,
  trackerDriverFiles,
  writeBindingsFile,
  type ScenarioDriverFiles,
} from "./scenario-steps.js";
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

/** The processes of the retention-canary scenario and the files its Drivers share. */
interface CanaryStack {
  provider: ProviderProcess;
  api: ApiProcess;
  files: ScenarioDriverFiles;
  driverA: DriverProcess;
}

/**
 * Starts the provider without a key fence, the API with `tracker` bound to the fixture adapter's
 * `max_in_flight` variant (lookups retried every ≤ 2 s, never bounded first), and Driver A; each
 * process is pushed onto `procs`.
 */
async function startCanaryStack({ workDir, timeline }: ScenarioOptions, procs: ManagedProcess[]): Promise<CanaryStack> {
  const provider = await startScenarioProvider(workDir, [], procs); // no --fence-on-lookup-miss: no fence
  timeline(`provider up at ${provider.url} (no key fence)`);
  const bindingsFile = writeBindingsFile(workDir, {
    tracker: { package: FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE, options: { url: provider.url } },
  });
  const api = await startScenarioApi(
    workDir,
    reconcilingApiEnv(bindingsFile, {
      // lookups refused inside the in-flight window are retried every ≤ 2 s, and never hit the lookup bound first
      MOSOO_LOOKUP_BACKOFF_MAX_MS: "2000",
      MOSOO_MAX_LOOKUPS: "1000",
    }),
    procs,
  );
  timeline(
    `API up at ${api.url}, reconciliation on, tracker bound to ${FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE.export} (max_in_flight, 30 days declared)`,
  );
  const files = trackerDriverFiles(workDir, provider.url);
  const driverA = await startScenarioDriver(api, files, "driver-a", procs);
  timeline(`Driver A connected as instance ${driverA.driverInstanceId}`);
  return { provider, api, files, driverA };
}

/**
 * The first `createIssue` (the canary) succeeds; the provider then holds the response of a second one
 * after its commit, starts forgetting every committed key, and Driver A is SIGKILLed.
 * @returns the clients, the run, the canary's call and the second call.
 */
async function crashAfterCanary(stack: CanaryStack, timeline: ScenarioOptions["timeline"]) {
  const { runs, control, runId, call: canary } = await enqueueCreateIssue(stack.api, stack.provider, stack.driverA.driverInstanceId);
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
  await stack.driverA.proc.kill("SIGKILL");
  timeline("Driver A killed with SIGKILL");
  return { runs, control, runId, canary, second };
}

/** Waits until the second effect is flagged for an operator, or settles (a violation the invariants report). */
function waitForOperatorFlag(api: ApiProcess, effectId: string) {
  return pollUntil(
    async () => {
      const d = await showEffectAsOperator(api.url, api.credentials.operatorToken, effectId);
      // flagged, or settled (a violation the invariants below report); `executing` / `unknown` without a flag: not yet
      return d.operatorAttention !== null || !["executing", "unknown"].includes(d.status) ? d : undefined;
    },
    STEP_TIMEOUT_MS,
    "the second effect is flagged for an operator or settles",
  );
}

/**
 * The scenario's invariants: one write per key (two in all), the last lookup `still_unknown`
 * (`retention_contradicted`), the effect `unknown` flagged `retention_contradicted`, the canary still
 * `succeeded`, no effect `not_executed`, the canary's key asked about, the contradiction counted.
 * @returns the failures, one sentence each (empty when all hold).
 */
function checkCanaryInvariants(line: Record<string, unknown> & { canaryLookups: number; retentionContradictedMetric: number }): string[] {
  const failures: string[] = [];
  expectLineMatches(failures, line, {
    providerWrites: 1,
    canaryProviderWrites: 1,
    providerWritesAll: 2,
    lastOutcome: "still_unknown",
    reasonCode: "retention_contradicted",
    effectStatus: "unknown",
    operatorAttention: "retention_contradicted",
    canaryStatus: "succeeded",
    notExecuted: 0,
  });
  expectInvariant(failures, line.canaryLookups >= 1, "the adapter must have been asked about the canary's key");
  expectInvariant(failures, line.retentionContradictedMetric >= 1, "the retention canary metric must count the contradiction");
  return failures;
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
  const { timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const stack = await startCanaryStack(opts, procs);
    const { runs, control, runId, canary, second } = await crashAfterCanary(stack, timeline);
    await startScenarioDriver(stack.api, stack.files, "driver-b", procs);
    timeline("Driver B reconnected as the same instance; the second command is redelivered");

    const detail = await waitForOperatorFlag(stack.api, second.effectId);
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
    return { failures: checkCanaryInvariants(line), line };
  } finally {
    await stopScenarioProcesses(procs);
  }
}
