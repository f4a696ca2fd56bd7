import { join } from "node:path";
import { pollUntil, ProviderControlClient, RunApiClient } from "../http-clients.js";
import { startApiProcess, startDriverProcess, startProviderProcess, writeMcpConfig } from "../stack.js";
import type { ManagedProcess } from "../managed-process.js";
import { expectInvariant, type ScenarioOptions, type ScenarioResult } from "./scenario.types.js";

/** Time (ms) a scenario waits for a write to land or a command to end. */
const STEP_TIMEOUT_MS = 30_000;

/**
 * The #412 crash on real processes: the provider commits `createIssue` and holds its response,
 * the Driver is killed with SIGKILL, a new Driver process reconnects as the same instance, the
 * command is redelivered, and the ledger fences the effect as `unknown` instead of replaying the
 * write. Invariants: one provider write and one provider call for the key, effect `unknown`,
 * command failed `external_effect.unknown`.
 */
export async function runDriverCrashAfterCommit(opts: ScenarioOptions): Promise<ScenarioResult> {
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const provider = await startProviderProcess(join(workDir, "provider.db"), ["--hold-response-after-commit"]);
    procs.push(provider.proc);
    timeline(`provider up at ${provider.url} (holds each response after commit)`);
    const api = await startApiProcess(join(workDir, "api.db"));
    procs.push(api.proc);
    timeline(`API up at ${api.url} (SQLite ${join(workDir, "api.db")})`);
    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url });
    const stateFile = join(workDir, "driver-state.json");
    const driverA = await startDriverProcess({ apiUrl: api.url, stateFile, mcpConfigFile, name: "driver-a" });
    procs.push(driverA.proc);
    timeline(`Driver A connected as instance ${driverA.driverInstanceId} (pid ${driverA.proc.pid})`);

    const runs = new RunApiClient(api.url);
    const control = new ProviderControlClient(provider.controlUrl);
    const { runId } = await runs.createRun(driverA.driverInstanceId);
    const call = await runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { title: "Disk full on db-1", body: "seen at 03:12" } });
    timeline(`queued createIssue: command ${call.commandId}, effect ${call.effectId}, idempotency key ${call.idempotencyKey}`);

    await pollUntil(async () => ((await control.stats()).writes[call.idempotencyKey] === 1 ? true : undefined), STEP_TIMEOUT_MS, "the provider commits the write");
    timeline("provider committed the write and is holding its response");
    await driverA.proc.kill("SIGKILL");
    timeline("Driver A killed with SIGKILL before it could store the result");
    await control.setFaults({ holdResponseAfterCommit: false });

    const driverB = await startDriverProcess({ apiUrl: api.url, stateFile, mcpConfigFile, name: "driver-b" });
    procs.push(driverB.proc);
    timeline(`Driver B reconnected as the same instance ${driverB.driverInstanceId} with a new connection`);

    const view = await pollUntil(async () => {
      const v = await runs.getRun(runId);
      return v.commands[0]?.terminalAtMs ? v : undefined;
    }, STEP_TIMEOUT_MS, "the redelivered command ends");
    const stats = await control.stats();
    const effect = view.effects[0];
    const command = view.commands[0];
    timeline(`redelivered command ended ${command?.status} ${command?.error?.code ?? ""}; effect ${effect?.status}`);

    const failures: string[] = [];
    const providerWrites = stats.writes[call.idempotencyKey] ?? 0;
    const providerCalls = stats.createCalls[call.idempotencyKey] ?? 0;
    expectInvariant(failures, driverB.driverInstanceId === driverA.driverInstanceId, "Driver B must reconnect as the same instance");
    expectInvariant(failures, providerWrites === 1, `provider writes for the key must be 1, saw ${providerWrites}`);
    expectInvariant(failures, providerCalls === 1, `provider createIssue calls for the key must be 1 (no replay), saw ${providerCalls}`);
    expectInvariant(failures, effect?.status === "unknown", `effect must be unknown, is ${effect?.status}`);
    expectInvariant(failures, command?.status === "failed" && command.error?.code === "external_effect.unknown", "command must fail with external_effect.unknown");
    return {
      failures,
      line: {
        scenario: "driver-crash-after-commit",
        providerWrites,
        providerCalls,
        effectStatus: effect?.status,
        commandStatus: command?.status,
        commandError: command?.error?.code ?? null,
      },
    };
  } finally {
    await Promise.all(procs.map((p) => p.kill("SIGTERM")));
  }
}
