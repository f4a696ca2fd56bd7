// Runs one crash scenario on real processes (a Driver killed around the provider's commit) and checks its invariants.
import type { ProviderStats, QueuedCreateIssue, RunViewBody } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import type { ScenarioOptions, ScenarioResult } from "./scenario.types.js";
import { stopScenarioProcesses } from "./scenario-steps.js";
import { checkCrashInvariants } from "./crash-scenario.invariants.js";
import { awaitRunOutcome, enqueueAndCrash, recoverDriver, releaseHeldCommit, startCrashStack } from "./crash-scenario.stack.js";
import { CRASH_STEP_TIMEOUT_MS as STEP_TIMEOUT_MS, type CrashScenarioSpec } from "./crash-scenario.types.js";
import { accountOf, followUpTurn } from "./turn-follow-up.js";

export type { CrashScenarioSpec } from "./crash-scenario.types.js";

/** The scenario's JSON line: provider counts for the key, the effect, command and run (with the run's account), the follow-up, the late write, the adapter. */
function crashLine(
  spec: CrashScenarioSpec,
  view: RunViewBody,
  stats: ProviderStats,
  call: QueuedCreateIssue["call"],
  followUp: Record<string, unknown>,
  lateWrite: string | undefined,
) {
  const effect = view.effects[0];
  const command = view.commands[0];
  return {
    scenario: spec.name,
    providerWrites: stats.writes[call.idempotencyKey] ?? 0,
    providerCalls: stats.createCalls[call.idempotencyKey] ?? 0,
    lookups: stats.lookups[call.idempotencyKey] ?? 0,
    effectStatus: effect?.status,
    resolution: effect?.resolution ?? null,
    commandStatus: command?.status,
    commandError: command?.error?.code ?? null,
    commandRetryable: command?.error?.retryable ?? null,
    runStatus: view.run.status,
    runError: view.run.error?.code ?? null,
    runRetryable: view.run.error?.retryable ?? null,
    ...(view.run.error ? { runAccount: accountOf(view.run.error).map((c) => `${c.toolCallId}:${c.status}`) } : {}),
    providerWritesAll: Object.values(stats.writes).reduce((a, b) => a + b, 0),
    ...followUp,
    ...(lateWrite ? { lateWrite } : {}),
    ...(effect?.reconciliations[0]
      ? {
          adapter: `${effect.reconciliations[0].adapterId}@${effect.reconciliations[0].adapterVersion}`,
          adapterPackage: effect.reconciliations[0].adapterPackage,
        }
      : {}),
  };
}

/** Runs one {@link CrashScenarioSpec} and checks its invariants; every process is stopped at the end. */
export async function runCrashScenario(spec: CrashScenarioSpec, opts: ScenarioOptions): Promise<ScenarioResult> {
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const stack = await startCrashStack(spec, opts, procs);
    const { api, mcpConfigFile } = stack;
    const { runs, control, runId, sessionId, call } = await enqueueAndCrash(spec, stack, timeline);
    const driverB = await recoverDriver(spec, stack, procs, timeline);
    const view = await awaitRunOutcome(spec, runs, runId, driverB, timeline);
    const lateWrite = await releaseHeldCommit(spec, stack, control, call.idempotencyKey, timeline);
    const account = accountOf(view.run.error);
    if (view.run.error)
      timeline(
        `run error: ${view.run.error.code} (retryable ${view.run.error.retryable}): ${(view.run.error as { message?: string }).message ?? ""}`,
      );
    const followUp = spec.followUp
      ? await followUpTurn(spec.followUp, {
          runs,
          control,
          apiUrl: api.url,
          enrollmentToken: api.credentials.enrollmentToken,
          mcpConfigFile,
          workDir,
          sessionId,
          error: view.run.error,
          timeline,
          procs,
          timeoutMs: STEP_TIMEOUT_MS,
        })
      : {};
    const line = crashLine(spec, view, await control.stats(), call, followUp, lateWrite);
    return { failures: checkCrashInvariants(spec, line, view, call.effectId, account, lateWrite), line };
  } finally {
    await stopScenarioProcesses(procs);
  }
}
