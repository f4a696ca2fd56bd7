// Demo scenario: a task-capable provider, no adapter, the Driver killed after the task id is stored; recovered from tasks/result.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { enqueueCreateIssue, pollUntil, showEffectAsOperator, waitForProviderCount } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import { startApiProcess, startScenarioDriver, startProviderProcess, writeMcpConfig } from "../stack.js";
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
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const providerFlags = ["--task-support", "optional", "--hold-response-after-commit"];
    const provider = await startProviderProcess(join(workDir, "provider.db"), providerFlags);
    procs.push(provider.proc);
    timeline(`provider up at ${provider.url} (${providerFlags.join(" ")})`);

    const bindingsFile = join(workDir, "bindings.json");
    writeFileSync(bindingsFile, JSON.stringify({ bindings: { tracker: { adapterId: "mcp-tasks", options: { url: provider.url } } } }));
    const api = await startApiProcess(join(workDir, "api.db"), {
      MOSOO_EFFECT_RECONCILIATION: "on",
      MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
      // far above any Driver restart time: the restart path is certain, no finalization overtakes it
      MOSOO_HEARTBEAT_TTL_MS: "300000",
      MOSOO_SWEEP_INTERVAL_MS: "250",
    });
    procs.push(api.proc);
    timeline(`API up at ${api.url}, reconciliation on, tracker bound to the built-in mcp-tasks reconciler`);

    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url });
    const stateFile = join(workDir, "driver-state.json");
    const driverA = await startScenarioDriver(api, { stateFile, mcpConfigFile }, "driver-a", procs);
    timeline(`Driver A connected as instance ${driverA.driverInstanceId}`);

    const { runs, control, runId, call } = await enqueueCreateIssue(api, provider, driverA.driverInstanceId);
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

    const driverB = await startScenarioDriver(api, { stateFile, mcpConfigFile }, "driver-b", procs);
    timeline("Driver B reconnected as the same instance; the command is redelivered");

    const view = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.commands[0]?.terminalAtMs ? v : undefined;
      },
      STEP_TIMEOUT_MS,
      "the command ends",
    );
    const effect = view.effects[0];
    const command = view.commands[0];
    for (const r of effect?.reconciliations ?? [])
      timeline(`lookup (${r.trigger}, ${r.adapterId}): ${r.outcome}${r.reasonCode ? ` ${r.reasonCode}` : ""}`);
    timeline(
      `command ${command?.status}; effect ${effect?.status}${effect?.resolution ? ` (${effect.resolution})` : ""}; run ${view.run.status}`,
    );

    const stats = await control.stats();
    const detail = await showEffectAsOperator(api.url, api.credentials.operatorToken, call.effectId);
    const receipt = detail.reconciliationReceipt as { providerOperationId?: unknown; detail?: { taskStatus?: unknown } } | null | undefined;
    const line = {
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
    const failures: string[] = [];
    const want: Record<string, unknown> = {
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
    };
    for (const [key, value] of Object.entries(want)) {
      const got = (line as Record<string, unknown>)[key];
      expectInvariant(
        failures,
        JSON.stringify(got) === JSON.stringify(value),
        `${key} must be ${JSON.stringify(value)}, was ${JSON.stringify(got)}`,
      );
    }
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
    return { failures, line };
  } finally {
    await Promise.all(procs.map((p) => p.kill("SIGTERM")));
  }
}
