import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pollUntil, ProviderControlClient, RunApiClient, type RunViewBody } from "../http-clients.js";
import { FIXTURE_ADAPTER_PACKAGE, startApiProcess, startDriverProcess, startProviderProcess, writeMcpConfig } from "../stack.js";
import type { ManagedProcess } from "../managed-process.js";
import { expectInvariant, type ScenarioOptions, type ScenarioResult } from "./scenario.types.js";

/** Time (ms) a scenario waits for a write to land, a Driver to be finalized or a command to end. */
const STEP_TIMEOUT_MS = 30_000;

/**
 * A crash scenario on real processes:
 * - `reconciliation`: `off` (the #412 baseline; a bindings file is still given, to show the flag
 *   alone decides) or `on` (server `tracker` bound to the fixture adapter);
 * - `crashPoint`: `after_commit` (the provider commits and holds its response, then the Driver is
 *   SIGKILLed) or `before_commit` (the provider delays its commit; the Driver is SIGKILLed while
 *   the call is in flight);
 * - `recovery`: `restart` (a new Driver process reconnects as the same instance and the command is
 *   redelivered) or `finalization` (no Driver comes back: the API's sweep finds the expired
 *   heartbeat and runs finalization repair);
 * - `adapter?`: how `tracker` is bound when reconciliation is on: `package` (default; the fixture
 *   adapter by package, `@mosoo/fixture-adapter`) or `convention` (the built-in `mcp-convention`
 *   adapter, the provider started with `--advertise-idempotency`: no provider-specific code);
 * - `keyArgument?`: the provider reads the idempotency key from this tool argument
 *   (`--key-argument`) and the Driver's MCP config says so (`idempotencyKey: {in: "argument", name}`);
 * - `expect`: the invariants the JSON line must show.
 */
export interface CrashScenarioSpec {
  name: string;
  reconciliation: "off" | "on";
  crashPoint: "after_commit" | "before_commit";
  recovery: "restart" | "finalization";
  adapter?: "package" | "convention";
  /** When set, the provider reads the key from this tool argument and the Driver's config places it there. */
  keyArgument?: string;
  expect: {
    providerWrites: number;
    lookups: number;
    effectStatus: string;
    resolution: string | null;
    commandStatus: string;
    commandError: string | null;
  };
}

/** Heartbeat TTL (ms) of the API in the finalization scenarios: short, so finalization by expiry happens within seconds. */
const HEARTBEAT_TTL_MS = "1500";
/**
 * Heartbeat TTL (ms) in the restart scenarios: long enough that the restarted Driver reconnects before
 * the instance expires even on a loaded machine (a Driver process takes ~1 s to start, 3 s and more
 * under load); with 1.5 s the sweep could finalize the instance first, turning the restart into a finalization.
 */
const RESTART_HEARTBEAT_TTL_MS = "20000";
/** How long (ms) the provider delays its commit in a `before_commit` scenario. */
const LATE_COMMIT_DELAY_MS = 2500;

/** Runs one {@link CrashScenarioSpec} and checks its invariants; every process is stopped at the end. */
export async function runCrashScenario(spec: CrashScenarioSpec, opts: ScenarioOptions): Promise<ScenarioResult> {
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const convention = spec.adapter === "convention";
    const providerFlags = [
      "--fence-on-lookup-miss",
      ...(convention ? ["--advertise-idempotency"] : []),
      ...(spec.keyArgument ? ["--key-argument", spec.keyArgument] : []),
      ...(spec.crashPoint === "after_commit" ? ["--hold-response-after-commit"] : ["--delay-before-commit-ms", String(LATE_COMMIT_DELAY_MS)]),
    ];
    const provider = await startProviderProcess(join(workDir, "provider.db"), providerFlags);
    procs.push(provider.proc);
    timeline(`provider up at ${provider.url} (${providerFlags.join(" ")})`);

    const bindingsFile = join(workDir, "bindings.json");
    const binding = convention ? { adapterId: "mcp-convention", options: { url: provider.url } } : { package: FIXTURE_ADAPTER_PACKAGE, options: { url: provider.url } };
    writeFileSync(bindingsFile, JSON.stringify({ bindings: { tracker: binding } }, null, 2));
    const api = await startApiProcess(join(workDir, "api.db"), {
      MOSOO_EFFECT_RECONCILIATION: spec.reconciliation,
      MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
      MOSOO_HEARTBEAT_TTL_MS: spec.recovery === "restart" ? RESTART_HEARTBEAT_TTL_MS : HEARTBEAT_TTL_MS,
      MOSOO_SWEEP_INTERVAL_MS: "250",
    });
    procs.push(api.proc);
    timeline(
      `API up at ${api.url}, MOSOO_EFFECT_RECONCILIATION=${spec.reconciliation}, tracker bound to ${convention ? "the built-in mcp-convention adapter (read from the provider's tools/list)" : `the package ${FIXTURE_ADAPTER_PACKAGE.module}`}`,
    );

    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url }, spec.keyArgument ? { tracker: { in: "argument", name: spec.keyArgument } } : {});
    const stateFile = join(workDir, "driver-state.json");
    const driverA = await startDriverProcess({ apiUrl: api.url, stateFile, mcpConfigFile, name: "driver-a", enrollmentToken: api.credentials.enrollmentToken });
    procs.push(driverA.proc);
    timeline(`Driver A connected as instance ${driverA.driverInstanceId}`);

    const runs = new RunApiClient(api.url, api.credentials.apiKey);
    const control = new ProviderControlClient(provider.controlUrl);
    const { runId } = await runs.createRun(driverA.driverInstanceId);
    const call = await runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { title: "Disk full on db-1", body: "seen at 03:12" } });
    timeline(`queued createIssue (effect ${call.effectId}, idempotency key ${call.idempotencyKey})`);

    if (spec.crashPoint === "after_commit") {
      await pollUntil(async () => ((await control.stats()).writes[call.idempotencyKey] === 1 ? true : undefined), STEP_TIMEOUT_MS, "the provider commits");
      timeline("provider committed the write; its response is held (lost)");
    } else {
      await pollUntil(async () => ((await control.stats()).createCalls[call.idempotencyKey] === 1 ? true : undefined), STEP_TIMEOUT_MS, "the call reaches the provider");
      timeline(`provider received the call and delays its commit by ${LATE_COMMIT_DELAY_MS} ms`);
    }
    await driverA.proc.kill("SIGKILL");
    timeline("Driver A killed with SIGKILL");

    if (spec.recovery === "restart") {
      const driverB = await startDriverProcess({ apiUrl: api.url, stateFile, mcpConfigFile, name: "driver-b", enrollmentToken: api.credentials.enrollmentToken });
      procs.push(driverB.proc);
      timeline(`Driver B reconnected as the same instance; the command is redelivered`);
    } else {
      timeline(`no Driver comes back; waiting for the sweep to find the expired heartbeat (TTL ${HEARTBEAT_TTL_MS} ms)`);
    }

    const view: RunViewBody = await pollUntil(async () => {
      const v = await runs.getRun(runId);
      return v.commands[0]?.terminalAtMs ? v : undefined;
    }, STEP_TIMEOUT_MS, "the command ends");
    const effect = view.effects[0];
    const command = view.commands[0];
    for (const r of effect?.reconciliations ?? []) timeline(`lookup (${r.trigger}): ${r.outcome}${r.reasonCode ? ` ${r.reasonCode}` : ""}`);
    timeline(`command ${command?.status}${command?.error?.code ? ` ${command.error.code}` : ""}; effect ${effect?.status}${effect?.resolution ? ` (${effect.resolution})` : ""}; run ${view.run.status}`);

    let lateWrite: string | undefined;
    if (spec.crashPoint === "before_commit") {
      await new Promise((r) => setTimeout(r, LATE_COMMIT_DELAY_MS + 500));
      const s = await control.stats();
      lateWrite = (s.writes[call.idempotencyKey] ?? 0) > 0 ? "committed" : "refused";
      timeline(`the provider's delayed commit was ${lateWrite}`);
    }
    const stats = await control.stats();
    const line = {
      scenario: spec.name,
      providerWrites: stats.writes[call.idempotencyKey] ?? 0,
      providerCalls: stats.createCalls[call.idempotencyKey] ?? 0,
      lookups: stats.lookups[call.idempotencyKey] ?? 0,
      effectStatus: effect?.status,
      resolution: effect?.resolution ?? null,
      commandStatus: command?.status,
      commandError: command?.error?.code ?? null,
      ...(lateWrite ? { lateWrite } : {}),
      ...(effect?.reconciliations[0] ? { adapter: `${effect.reconciliations[0].adapterId}@${effect.reconciliations[0].adapterVersion}`, adapterPackage: effect.reconciliations[0].adapterPackage } : {}),
    };
    const failures: string[] = [];
    for (const [key, want] of Object.entries(spec.expect)) {
      const got = (line as Record<string, unknown>)[key];
      expectInvariant(failures, got === want, `${key} must be ${JSON.stringify(want)}, was ${JSON.stringify(got)}`);
    }
    expectInvariant(failures, line.providerCalls <= 1, `the provider must be called at most once for the key, was ${line.providerCalls}`);
    expectInvariant(failures, view.events.filter((e) => e.terminal).length <= 1, "a run has at most one terminal event");
    if (lateWrite) expectInvariant(failures, lateWrite === "refused", "a late commit after a confirmed non-execution must be refused");
    return { failures, line };
  } finally {
    await Promise.all(procs.map((p) => p.kill("SIGTERM")));
  }
}
