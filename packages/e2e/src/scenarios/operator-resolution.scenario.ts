// The demo scenario where no adapter is bound, so an operator settles the fenced effect through the CLI with an audit trail.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { GET_OPERATION_TOOL, GetOperationAnswerSchema } from "@mosoo/fixture-provider";
import { execa } from "execa";
import { pollUntil, enqueueCreateIssue, waitForProviderCount } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import { startApiProcess, startScenarioDriver, startProviderProcess, writeMcpConfig } from "../stack.js";
import { entryPoints } from "../workspace-paths.js";
import { expectInvariant, type ScenarioOptions, type ScenarioResult } from "./scenario.types.js";

/** Name of the scenario (and of its folder under `var/demo/`). */
export const OPERATOR_RESOLUTION_SCENARIO = "fenced-resolved-by-operator";
/** Bound (ms) of each wait for an event of the scenario: a hang bound sized for a loaded 2-core machine, not a timing assertion. */
const STEP_TIMEOUT_MS = 120_000;

/**
 * Runs the operator CLI (`apps/api/src/effects.main.ts`, the same entry as `npm run effects`)
 * against the API at `apiUrl`, prints its output in the timeline, and returns stdout.
 * @throws Error when the CLI exits non-zero (its one stderr line is in the message).
 */
async function effectsCli(apiUrl: string, operatorToken: string, args: string[], timeline: ScenarioOptions["timeline"]): Promise<string> {
  const e = entryPoints();
  timeline(`$ npm run effects -- ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ")}`);
  const res = await execa(e.node, [...e.nodeArgs, "src/effects.main.ts", "--api-url", apiUrl, ...args], {
    cwd: e.api.cwd,
    env: { MOSOO_OPERATOR_TOKEN: operatorToken },
    reject: false,
  });
  if (res.exitCode !== 0) throw new Error(`effects ${args[0]} exited ${res.exitCode}: ${res.stderr}`);
  for (const line of res.stdout.split("\n")) timeline(`    ${line}`);
  return res.stdout;
}

/** What an operator finds when they check the tracker by the effect's idempotency key (MCP `getOperation`). */
async function checkTracker(providerUrl: string, idempotencyKey: string) {
  const client = new Client({ name: "operator-check", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(providerUrl)));
  try {
    const res = await client.callTool({ name: GET_OPERATION_TOOL, arguments: { idempotencyKey } });
    return GetOperationAnswerSchema.parse(res.structuredContent);
  } finally {
    await client.close();
  }
}

/**
 * An effect the runtime cannot prove, settled by an operator through the CLI: the
 * API runs with `MOSOO_EFFECT_RECONCILIATION=on` but no adapter is bound to `tracker`, so after the
 * Driver dies between the provider's commit and the result, the restarted Driver's claim fences the
 * effect `unknown` and the command fails `external_effect.unknown`. The operator lists and shows it
 * with `npm run effects`, checks the tracker by the idempotency key, and resolves it `succeeded`
 * with the issue's text and id; the audit trail records who and why. Nothing re-executes the write.
 */
export async function runOperatorResolutionScenario(opts: ScenarioOptions): Promise<ScenarioResult> {
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const provider = await startProviderProcess(join(workDir, "provider.db"), ["--fence-on-lookup-miss", "--hold-response-after-commit"]);
    procs.push(provider.proc);
    const bindingsFile = join(workDir, "bindings.json");
    writeFileSync(bindingsFile, JSON.stringify({ bindings: {} }, null, 2));
    const api = await startApiProcess(join(workDir, "api.db"), {
      MOSOO_EFFECT_RECONCILIATION: "on",
      MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
      MOSOO_SWEEP_INTERVAL_MS: "250",
      // far above any Driver restart time: the restart path is certain, the sweep never finalizes first
      MOSOO_HEARTBEAT_TTL_MS: "300000",
    });
    procs.push(api.proc);
    timeline(`provider up at ${provider.url}; API up at ${api.url} with reconciliation on, but no adapter bound to tracker`);
    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url });
    const stateFile = join(workDir, "driver-state.json");
    const driverA = await startScenarioDriver(api, { stateFile, mcpConfigFile }, "driver-a", procs);

    const { runs, control, runId, call } = await enqueueCreateIssue(api, provider, driverA.driverInstanceId);
    timeline(`queued createIssue (effect ${call.effectId}, idempotency key ${call.idempotencyKey})`);
    await waitForProviderCount(control, "writes", call.idempotencyKey, STEP_TIMEOUT_MS, "the provider commits");
    await driverA.proc.kill("SIGKILL");
    timeline("the provider committed; Driver A was killed with SIGKILL before the result was stored");
    const driverB = await startScenarioDriver(api, { stateFile, mcpConfigFile }, "driver-b", procs);
    await pollUntil(
      async () => ((await runs.getRun(runId)).commands[0]?.terminalAtMs ? true : undefined),
      STEP_TIMEOUT_MS,
      "the command ends",
    );
    timeline(
      "Driver B reconnected; its claim fenced the effect unknown (no adapter can prove it): the command failed external_effect.unknown",
    );

    const listed = await effectsCli(api.url, api.credentials.operatorToken, ["list"], timeline);
    await effectsCli(api.url, api.credentials.operatorToken, ["show", call.effectId], timeline);
    const found = await checkTracker(provider.url, call.idempotencyKey);
    if (!found.found || found.toolName !== "createIssue") throw new Error("the tracker has no issue under the effect's key");
    const outputText = found.result.content[0]?.text ?? "";
    timeline(`operator checks the tracker by the idempotency key: found "${outputText}" (issue ${found.operationId})`);
    await effectsCli(
      api.url,
      api.credentials.operatorToken,
      [
        "resolve",
        call.effectId,
        "--outcome",
        "succeeded",
        "--output-text",
        outputText,
        "--provider-operation-id",
        found.operationId,
        "--reason",
        "issue found in the tracker under the effect's key",
      ],
      timeline,
    );

    const view = await runs.getRun(runId);
    const effect = view.effects[0];
    const history = JSON.parse(await effectsCli(api.url, api.credentials.operatorToken, ["--json", "show", call.effectId], () => {})) as {
      operatorActions: Array<{
        actor: string;
        statusBefore: string;
        statusAfter: string;
        receipt: { providerOperationId?: string } | null;
      }>;
    };
    const stats = await control.stats();
    const line = {
      scenario: OPERATOR_RESOLUTION_SCENARIO,
      providerWrites: stats.writes[call.idempotencyKey] ?? 0,
      providerCalls: stats.createCalls[call.idempotencyKey] ?? 0,
      effectStatus: effect?.status,
      resolution: effect?.resolution ?? null,
      commandStatus: view.commands[0]?.status,
      commandError: view.commands[0]?.error?.code ?? null,
      auditedBy: history.operatorActions.map((a) => `${a.actor}: ${a.statusBefore} -> ${a.statusAfter}`),
    };
    const failures: string[] = [];
    expectInvariant(failures, listed.includes(call.effectId), "the CLI must list the fenced effect");
    expectInvariant(
      failures,
      line.providerWrites === 1 && line.providerCalls === 1,
      `the provider must have run once (writes ${line.providerWrites}, calls ${line.providerCalls})`,
    );
    expectInvariant(
      failures,
      line.effectStatus === "succeeded" && line.resolution === "operator",
      `the effect must end succeeded (operator), was ${line.effectStatus} (${line.resolution})`,
    );
    expectInvariant(
      failures,
      history.operatorActions.length === 1 && history.operatorActions[0]?.receipt?.providerOperationId === found.operationId,
      "one audit row carrying the provider's id",
    );
    expectInvariant(failures, view.events.filter((e) => e.terminal).length <= 1, "a run has at most one terminal event");
    return { failures, line };
  } finally {
    await Promise.all(procs.map((p) => p.kill("SIGTERM")));
  }
}
