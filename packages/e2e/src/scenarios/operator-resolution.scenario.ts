// The demo scenario where no adapter is bound, so an operator settles the fenced effect through the CLI with an audit trail.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { GET_OPERATION_TOOL, GetOperationAnswerSchema } from "@mosoo/fixture-provider";
import { execa } from "execa";
import { enqueueCreateIssue, waitForProviderCount, type QueuedCreateIssue, type RunViewBody } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import { startScenarioDriver } from "../stack.js";
import {
  reconcilingApiEnv,
  startScenarioApi,
  startScenarioProvider,
  stopScenarioProcesses,
  trackerDriverFiles,
  waitForCommandEnd,
  writeBindingsFile,
} from "./scenario-steps.js";
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

/** What the operator CLI's `--json show` prints of an effect's audit trail (the part the scenario reads). */
interface OperatorHistory {
  operatorActions: Array<{
    actor: string;
    statusBefore: string;
    statusAfter: string;
    receipt: { providerOperationId?: string } | null;
  }>;
}

/**
 * Starts the provider (fences on a lookup miss, holds each response after its commit), the API with
 * reconciliation on but no adapter bound, and Driver A; queues `createIssue`, waits for the provider's
 * commit and SIGKILLs Driver A; Driver B then reconnects and its claim fences the effect `unknown`.
 * Waits for the command to end. Each process is pushed onto `procs`.
 * @returns the API, the provider and the queued call's clients and ids.
 */
async function crashUnprovable({ workDir, timeline }: ScenarioOptions, procs: ManagedProcess[]) {
  const provider = await startScenarioProvider(workDir, ["--fence-on-lookup-miss", "--hold-response-after-commit"], procs);
  const bindingsFile = writeBindingsFile(workDir, {});
  const api = await startScenarioApi(workDir, reconcilingApiEnv(bindingsFile), procs);
  timeline(`provider up at ${provider.url}; API up at ${api.url} with reconciliation on, but no adapter bound to tracker`);
  const files = trackerDriverFiles(workDir, provider.url);
  const driverA = await startScenarioDriver(api, files, "driver-a", procs);

  const queued = await enqueueCreateIssue(api, provider, driverA.driverInstanceId);
  const { runs, control, runId, call } = queued;
  timeline(`queued createIssue (effect ${call.effectId}, idempotency key ${call.idempotencyKey})`);
  await waitForProviderCount(control, "writes", call.idempotencyKey, STEP_TIMEOUT_MS, "the provider commits");
  await driverA.proc.kill("SIGKILL");
  timeline("the provider committed; Driver A was killed with SIGKILL before the result was stored");
  await startScenarioDriver(api, files, "driver-b", procs);
  await waitForCommandEnd(runs, runId, STEP_TIMEOUT_MS);
  timeline(
    "Driver B reconnected; its claim fenced the effect unknown (no adapter can prove it): the command failed external_effect.unknown",
  );
  return { api, provider, ...queued };
}

/**
 * The operator's part, through the CLI: lists and shows the effect, checks the tracker by its
 * idempotency key, and resolves it `succeeded` with the issue's text and id.
 * @returns the CLI's `list` output and what the tracker answered.
 * @throws Error when the tracker has no `createIssue` under the key, or a CLI command fails.
 */
async function operatorResolves(
  apiUrl: string,
  operatorToken: string,
  providerUrl: string,
  call: QueuedCreateIssue["call"],
  timeline: ScenarioOptions["timeline"],
) {
  const listed = await effectsCli(apiUrl, operatorToken, ["list"], timeline);
  await effectsCli(apiUrl, operatorToken, ["show", call.effectId], timeline);
  const found = await checkTracker(providerUrl, call.idempotencyKey);
  if (!found.found || found.toolName !== "createIssue") throw new Error("the tracker has no issue under the effect's key");
  const outputText = found.result.content[0]?.text ?? "";
  timeline(`operator checks the tracker by the idempotency key: found "${outputText}" (issue ${found.operationId})`);
  await effectsCli(
    apiUrl,
    operatorToken,
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
  return { listed, providerOperationId: found.operationId };
}

/**
 * The scenario's invariants: the CLI listed the effect, the provider ran once, the effect ended
 * `succeeded` (`operator`) with one audit row carrying the provider's id, and at most one terminal event.
 * @returns the failures, one sentence each (empty when all hold).
 */
function checkOperatorInvariants(
  line: { providerWrites: number; providerCalls: number; effectStatus: unknown; resolution: unknown },
  listed: string,
  effectId: string,
  history: OperatorHistory,
  providerOperationId: string,
  view: RunViewBody,
): string[] {
  const failures: string[] = [];
  expectInvariant(failures, listed.includes(effectId), "the CLI must list the fenced effect");
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
    history.operatorActions.length === 1 && history.operatorActions[0]?.receipt?.providerOperationId === providerOperationId,
    "one audit row carrying the provider's id",
  );
  expectInvariant(failures, view.events.filter((e) => e.terminal).length <= 1, "a run has at most one terminal event");
  return failures;
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
  const procs: ManagedProcess[] = [];
  try {
    const { api, provider, runs, control, runId, call } = await crashUnprovable(opts, procs);
    const operatorToken = api.credentials.operatorToken;
    const { listed, providerOperationId } = await operatorResolves(api.url, operatorToken, provider.url, call, opts.timeline);

    const view = await runs.getRun(runId);
    const effect = view.effects[0];
    const history = JSON.parse(await effectsCli(api.url, operatorToken, ["--json", "show", call.effectId], () => {})) as OperatorHistory;
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
    return { failures: checkOperatorInvariants(line, listed, call.effectId, history, providerOperationId, view), line };
  } finally {
    await stopScenarioProcesses(procs);
  }
}
