// Demo scenario: a task-capable provider, no adapter, the Driver killed after the task id is stored; recovered from tasks/result.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  enqueueCreateIssue,
  pollUntil,
  showEffectAsOperator,
  waitForProviderCount,
  type ProviderControlClient,
  type QueuedCreateIssue,
  type RunViewBody,
} from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import { startScenarioDriver, type ApiProcess, type DriverProcess, type ProviderProcess } from "../stack.js";
import {
  expectLineMatches,
  reconcilingApiEnv,
  startScenarioApi,
  startScenarioProvider,
  stopScenarioProcesses,
  trackerDriverFiles,
  waitForCommandEnd,
  writeBindingsFile,
  type ScenarioDriverFiles,
} from "./scenario-steps.js";
import { expectInvariant, type ScenarioOptions, type ScenarioResult } from "./scenario.types.js";

/** Name of the scenario in `npm run demo -- --only <name>`. */
export const TASK_HANDLE_SCENARIO = "reconciled-by-task-handle";

/** Bound (ms) of each wait for an event on the shared 2-core machine: a guard against a hang, not a timing assertion. */
const STEP_TIMEOUT_MS = 120_000;

/**
 * Polls `tasks/get` for `taskId` on the provider at `url` (a fresh MCP connection: the task outlives
 * the dead Driver's) until the task is `completed`, releasing the provider's held responses before
 * each poll (the held write's response settles the task; releasing again is a no-op).
 * @throws Error `e2e.timeout` when the task does not complete within {@link STEP_TIMEOUT_MS}.
 */
async function releaseUntilTaskCompleted(url: string, taskId: string, release: () => Promise<void>): Promise<void> {
  const client = new Client({ name: "demo-task-check", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    await pollUntil(
      async () => {
        await release();
        const task = await client.experimental.tasks.getTask(taskId);
        return task.status === "completed" ? true : undefined;
      },
      STEP_TIMEOUT_MS,
      `task ${taskId} completes`,
    );
  } finally {
    await client.close();
  }
}

/** The processes of the task-handle scenario and the files its Drivers share. */
interface TaskHandleStack {
  provider: ProviderProcess;
  api: ApiProcess;
  files: ScenarioDriverFiles;
  driverA: DriverProcess;
}

/**
 * Starts the task-capable provider (holding each response after its commit), the API with `tracker`
 * bound to the built-in `mcp-tasks` reconciler, and Driver A; each process is pushed onto `procs`.
 */
async function startTaskHandleStack({ workDir, timeline }: ScenarioOptions, procs: ManagedProcess[]): Promise<TaskHandleStack> {
  const providerFlags = ["--task-support", "optional", "--hold-response-after-commit"];
  const provider = await startScenarioProvider(workDir, providerFlags, procs);
  timeline(`provider up at ${provider.url} (${providerFlags.join(" ")})`);
  const bindingsFile = writeBindingsFile(workDir, { tracker: { adapterId: "mcp-tasks", options: { url: provider.url } } });
  const api = await startScenarioApi(workDir, reconcilingApiEnv(bindingsFile), procs);
  timeline(`API up at ${api.url}, reconciliation on, tracker bound to the built-in mcp-tasks reconciler`);
  const files = trackerDriverFiles(workDir, provider.url);
  const driverA = await startScenarioDriver(api, files, "driver-a", procs);
  timeline(`Driver A connected as instance ${driverA.driverInstanceId}`);
  return { provider, api, files, driverA };
}

/**
 * Queues `createIssue`, SIGKILLs Driver A on its `effect.task_handle_stored` line, then waits for the
 * provider's commit and releases the held response until `tasks/get` says `completed`.
 * @returns the queued call's clients and ids, and the stored task id.
 */
async function crashAfterTaskStored(stack: TaskHandleStack, timeline: ScenarioOptions["timeline"]) {
  const { api, provider, driverA } = stack;
  const queued = await enqueueCreateIssue(api, provider, driverA.driverInstanceId);
  const { control, call } = queued;
  timeline(`queued createIssue (effect ${call.effectId}, idempotency key ${call.idempotencyKey})`);
  const stored = await driverA.proc.waitForLine(
    (j) => j["msg"] === "effect.task_handle_stored" && j["effectId"] === call.effectId,
    STEP_TIMEOUT_MS,
    "effect.task_handle_stored",
  );
  const taskId = String(stored["taskId"]);
  await driverA.proc.kill("SIGKILL");
  timeline(`Driver A stored task ${taskId} on the effect, then was killed with SIGKILL`);

  await waitForProviderCount(control, "writes", call.idempotencyKey, STEP_TIMEOUT_MS, "the provider commits");
  await releaseUntilTaskCompleted(provider.url, taskId, () => control.release());
  timeline("the provider committed the write; its held response released, tasks/get says completed");
  return { ...queued, taskId };
}

/** The scenario's JSON line: provider counts for the key, the lookup, the effect, command and run, and the receipt. */
async function taskHandleLine(
  api: ApiProcess,
  control: ProviderControlClient,
  call: QueuedCreateIssue["call"],
  view: RunViewBody,
  taskId: string,
) {
  const effect = view.effects[0];
  const command = view.commands[0];
  const stats = await control.stats();
  const detail = await showEffectAsOperator(api.url, api.credentials.operatorToken, call.effectId);
  const receipt = detail.reconciliationReceipt as { providerOperationId?: unknown; detail?: { taskStatus?: unknown } } | null | undefined;
  return {
    scenario: TASK_HANDLE_SCENARIO,
    providerWrites: stats.writes[call.idempotencyKey] ?? 0,
    providerCalls: stats.createCalls[call.idempotencyKey] ?? 0,
    lookups: effect?.reconciliations.length ?? 0,
    getOperationCalls: stats.lookups[call.idempotencyKey] ?? 0,
    effectStatus: effect?.status,
    resolution: effect?.resolution ?? null,
    commandStatus: command?.status,
    runStatus: view.run.status,
    adapter: effect?.reconciliations[0] ? `${effect.reconciliations[0].adapterId}@${effect.reconciliations[0].adapterVersion}` : null,
    adapterPackage: effect?.reconciliations[0]?.adapterPackage ?? null,
    taskId,
    receiptOperationId: receipt?.providerOperationId ?? null,
    receiptTaskStatus: receipt?.detail?.taskStatus ?? null,
  };
}

/**
 * The scenario's invariants: one write and one call, one lookup by the task handle (no `getOperation`),
 * the effect `succeeded` (`reconciled`) with the receipt naming the completed task, the command
 * `completed`, the run active, the lookup the built-in `mcp-tasks` reconciler's.
 * @returns the failures, one sentence each (empty when all hold).
 */
function checkTaskHandleInvariants(line: Record<string, unknown>, view: RunViewBody, taskId: string): string[] {
  const effect = view.effects[0];
  const failures: string[] = [];
  expectLineMatches(failures, line, {
    providerWrites: 1,
    providerCalls: 1,
    lookups: 1,
    getOperationCalls: 0,
    effectStatus: "succeeded",
    resolution: "reconciled",
    commandStatus: "completed",
    runStatus: "active",
    receiptOperationId: taskId,
    receiptTaskStatus: "completed",
  });
  expectInvariant(
    failures,
    effect?.reconciliations[0]?.adapterId === "mcp-tasks",
    "the lookup must be the built-in mcp-tasks reconciler's",
  );
  // built-ins are recorded under the runtime's own package: no provider-specific adapter package was loaded
  expectInvariant(
    failures,
    effect?.reconciliations[0]?.adapterPackage === "@mosoo/effect-reconciliation",
    `the lookup must come from the runtime's built-in, was package ${effect?.reconciliations[0]?.adapterPackage}`,
  );
  return failures;
}

/**
 * `reconciled-by-task-handle` (docs/MCP-TASKS.md): the fixture provider declares task support
 * (`--task-support optional`) and holds each write's response after its commit; `tracker` is bound to
 * the built-in `mcp-tasks` reconciler (no provider-specific adapter, no convention). The Driver calls
 * `createIssue` task-augmented, stores the task id through the API (`effect.task_handle_stored`) and is
 * SIGKILLed on that line. The held response is then released until `tasks/get` says `completed` (a
 * condition, never a timer); a new Driver reconnects as the same instance and the command is
 * redelivered. Invariants: one provider write and one call, one lookup (by the task handle; no
 * `getOperation`), the effect `succeeded` (`reconciled`) with the receipt naming the task, the
 * command `completed`, the run still active.
 */
export async function runTaskHandleScenario(opts: ScenarioOptions): Promise<ScenarioResult> {
  const { timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const stack = await startTaskHandleStack(opts, procs);
    const { runs, control, runId, call, taskId } = await crashAfterTaskStored(stack, timeline);
    await startScenarioDriver(stack.api, stack.files, "driver-b", procs);
    timeline("Driver B reconnected as the same instance; the command is redelivered");

    const view = await waitForCommandEnd(runs, runId, STEP_TIMEOUT_MS);
    const effect = view.effects[0];
    for (const r of effect?.reconciliations ?? [])
      timeline(`lookup (${r.trigger}, ${r.adapterId}): ${r.outcome}${r.reasonCode ? ` ${r.reasonCode}` : ""}`);
    timeline(
      `command ${view.commands[0]?.status}; effect ${effect?.status}${effect?.resolution ? ` (${effect.resolution})` : ""}; run ${view.run.status}`,
    );
    const line = await taskHandleLine(stack.api, control, call, view, taskId);
    return { failures: checkTaskHandleInvariants(line, view, taskId), line };
  } finally {
    await stopScenarioProcesses(procs);
  }
}
