// The steps of a crash scenario on real processes: start the stack, crash Driver A at the crash point, recover, await the outcome.
import {
  pollUntil,
  type ProviderControlClient,
  type RunApiClient,
  type RunViewBody,
  enqueueCreateIssue,
  waitForProviderCount,
} from "../http-clients.js";
import { FIXTURE_ADAPTER_PACKAGE, type ApiProcess, type DriverProcess, startScenarioDriver, type ProviderProcess } from "../stack.js";
import type { ManagedProcess } from "../managed-process.js";
import type { ScenarioOptions } from "./scenario.types.js";
import { startScenarioApi, startScenarioProvider, trackerDriverFiles, waitForCommandEnd, writeBindingsFile } from "./scenario-steps.js";
import {
  CRASH_STEP_TIMEOUT_MS as STEP_TIMEOUT_MS,
  HEARTBEAT_TTL_MS,
  type CrashScenarioSpec,
  type ErrorBody,
} from "./crash-scenario.types.js";
import { SECOND_ISSUE } from "./turn-follow-up.js";

/** The processes of a crash scenario and the files they share. */
export interface CrashStack {
  provider: ProviderProcess;
  api: ApiProcess;
  mcpConfigFile: string;
  stateFile: string;
  driverA: DriverProcess;
}

/**
 * Starts the provider (held at the spec's crash point), the API (reconciliation, bindings, heartbeat
 * TTL and repeat guard as the spec says) and Driver A, in that order; each process is added to `procs`.
 */
export async function startCrashStack(spec: CrashScenarioSpec, opts: ScenarioOptions, procs: ManagedProcess[]): Promise<CrashStack> {
  const { workDir, timeline } = opts;
  const convention = spec.adapter === "convention";
  const providerFlags = [
    "--fence-on-lookup-miss",
    ...(convention ? ["--advertise-idempotency"] : []),
    ...(spec.keyArgument ? ["--key-argument", spec.keyArgument] : []),
    ...(spec.crashPoint === "after_commit" ? ["--hold-response-after-commit"] : ["--hold-before-commit"]),
  ];
  const provider = await startScenarioProvider(workDir, providerFlags, procs);
  timeline(`provider up at ${provider.url} (${providerFlags.join(" ")})`);

  const binding = convention
    ? { adapterId: "mcp-convention", options: { url: provider.url } }
    : { package: FIXTURE_ADAPTER_PACKAGE, options: { url: provider.url } };
  const bindingsFile = writeBindingsFile(workDir, spec.adapter === "none" ? {} : { tracker: binding });
  const api = await startScenarioApi(
    workDir,
    {
      MOSOO_EFFECT_RECONCILIATION: spec.reconciliation,
      MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
      MOSOO_HEARTBEAT_TTL_MS: HEARTBEAT_TTL_MS[spec.recovery],
      MOSOO_SWEEP_INTERVAL_MS: "250",
      ...(spec.repeatGuard ? { MOSOO_REPEAT_GUARD: "tracker=600000" } : {}),
    },
    procs,
  );
  timeline(
    `API up at ${api.url}, MOSOO_EFFECT_RECONCILIATION=${spec.reconciliation}, ${spec.adapter === "none" ? "tracker unbound (the bindings file binds no server)" : `tracker bound to ${convention ? "the built-in mcp-convention adapter (read from the provider's tools/list)" : `the package ${FIXTURE_ADAPTER_PACKAGE.module}`}`}`,
  );

  const { mcpConfigFile, stateFile } = trackerDriverFiles(
    workDir,
    provider.url,
    spec.keyArgument ? { tracker: { in: "argument", name: spec.keyArgument } } : {},
  );
  const driverA = await startScenarioDriver(api, { stateFile, mcpConfigFile }, "driver-a", procs);
  timeline(`Driver A connected as instance ${driverA.driverInstanceId}`);
  return { provider, api, mcpConfigFile, stateFile, driverA };
}

/** Queues the `createIssue` (with `secondCall`, a second one), waits for the spec's crash point, SIGKILLs Driver A; returns the queued call. */
export async function enqueueAndCrash(spec: CrashScenarioSpec, stack: CrashStack, timeline: ScenarioOptions["timeline"]) {
  const { api, provider, driverA } = stack;
  const queued = await enqueueCreateIssue(api, provider, driverA.driverInstanceId);
  const { runs, control, runId, call } = queued;
  timeline(`queued createIssue (effect ${call.effectId}, idempotency key ${call.idempotencyKey})`);
  if (spec.secondCall) {
    const second = await runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", ...SECOND_ISSUE });
    timeline(`queued a second createIssue (${SECOND_ISSUE.toolCallId}, effect ${second.effectId}); the Driver is busy with the first`);
  }

  if (spec.crashPoint === "after_commit") {
    await waitForProviderCount(control, "writes", call.idempotencyKey, STEP_TIMEOUT_MS, "the provider commits");
    timeline("provider committed the write; its response is held (lost)");
  } else {
    await waitForProviderCount(control, "createCalls", call.idempotencyKey, STEP_TIMEOUT_MS, "the call reaches the provider");
    timeline("provider received the call and holds it before its commit");
  }
  await driverA.proc.kill("SIGKILL");
  timeline("Driver A killed with SIGKILL");
  return queued;
}

/** The spec's recovery: `restart` starts Driver B (same state file, same instance, added to `procs`); `finalization` starts none. */
export async function recoverDriver(
  spec: CrashScenarioSpec,
  stack: CrashStack,
  procs: ManagedProcess[],
  timeline: ScenarioOptions["timeline"],
) {
  let driverB: DriverProcess | undefined;
  if (spec.recovery === "restart") {
    driverB = await startScenarioDriver(stack.api, stack, "driver-b", procs, { finalizeOnExit: spec.endRunAfterRestart === true });
    timeline(
      `Driver B reconnected as the same instance (heartbeat TTL ${HEARTBEAT_TTL_MS.restart} ms: no finalization can overtake it); the command is redelivered`,
    );
  } else {
    timeline(`no Driver comes back; waiting for the sweep to find the expired heartbeat (TTL ${HEARTBEAT_TTL_MS.finalization} ms)`);
  }
  return driverB;
}

/**
 * Waits until the command ends (and, after a finalization or with `endRunAfterRestart`, until the run
 * ends too; Driver B is then stopped with SIGTERM so it finalizes), and logs the lookups and outcome.
 * @returns the run's last view.
 */
export async function awaitRunOutcome(
  spec: CrashScenarioSpec,
  runs: RunApiClient,
  runId: string,
  driverB: DriverProcess | undefined,
  timeline: ScenarioOptions["timeline"],
): Promise<RunViewBody> {
  let view: RunViewBody = await waitForCommandEnd(runs, runId, STEP_TIMEOUT_MS);
  if (spec.recovery === "finalization") {
    // the repair ends the command, then the run (its account read in that last step)
    view = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.run.status !== "active" && v.commands.every((c) => c.terminalAtMs) ? v : undefined;
      },
      STEP_TIMEOUT_MS,
      "the run ends",
    );
  }
  if (driverB && spec.endRunAfterRestart) {
    await driverB.proc.kill("SIGTERM");
    timeline("Driver B stopped with --finalize-on-exit: it finalized its instance, so the run ends");
    view = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.run.status !== "active" ? v : undefined;
      },
      STEP_TIMEOUT_MS,
      "the run ends",
    );
  }
  const effect = view.effects[0];
  const command = view.commands[0];
  for (const r of effect?.reconciliations ?? []) timeline(`lookup (${r.trigger}): ${r.outcome}${r.reasonCode ? ` ${r.reasonCode}` : ""}`);
  const answer = (e: ErrorBody) => (e ? ` ${e.code} (retryable ${e.retryable})` : "");
  timeline(
    `command ${command?.status}${answer(command?.error)}; effect ${effect?.status}${effect?.resolution ? ` (${effect.resolution})` : ""}; run ${view.run.status}${answer(view.run.error)}`,
  );
  return view;
}

/**
 * With `before_commit`, releases the provider's held call only now that the runtime has decided (an
 * event, not a timer) and reads whether its commit went through.
 * @returns `committed` or `refused`; `undefined` for `after_commit` (nothing is held).
 */
export async function releaseHeldCommit(
  spec: CrashScenarioSpec,
  stack: CrashStack,
  control: ProviderControlClient,
  idempotencyKey: string,
  timeline: ScenarioOptions["timeline"],
): Promise<string | undefined> {
  if (spec.crashPoint !== "before_commit") return undefined;
  await control.release();
  const after = await stack.provider.proc.waitForLine(
    (j) => j["idempotencyKey"] === idempotencyKey && (j["msg"] === "commit refused: key fenced" || j["msg"] === "createIssue committed"),
    STEP_TIMEOUT_MS,
    "the released commit's outcome",
  );
  const lateWrite = after["msg"] === "createIssue committed" ? "committed" : "refused";
  timeline(`the provider's held commit, released now, was ${lateWrite}`);
  return lateWrite;
}
