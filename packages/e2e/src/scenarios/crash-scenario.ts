// Runs one crash scenario on real processes (a Driver killed around the provider's commit) and checks its invariants.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pollUntil, type RunApiClient, type RunViewBody, enqueueCreateIssue, waitForProviderCount } from "../http-clients.js";
import {
  FIXTURE_ADAPTER_PACKAGE,
  startApiProcess,
  type DriverProcess,
  startScenarioDriver,
  startProviderProcess,
  writeMcpConfig,
} from "../stack.js";
import type { ManagedProcess } from "../managed-process.js";
import { expectInvariant, type ScenarioOptions, type ScenarioResult } from "./scenario.types.js";
import { accountOf, followUpTurn, SECOND_ISSUE, type TurnFollowUp } from "./turn-follow-up.js";

/**
 * Time (ms) a scenario waits for a write to land, a Driver to be finalized or a command to end: a
 * bound for a hang sized for the shared 2-core machine under load, not a timing assertion.
 */
const STEP_TIMEOUT_MS = 120_000;

/**
 * A crash scenario on real processes:
 * - `reconciliation`: `off` (the baseline fence; a bindings file is still given, to show the flag
 *   alone decides) or `on` (server `tracker` bound to the fixture adapter);
 * - `crashPoint`: `after_commit` (the provider commits and holds its response, then the Driver is
 *   SIGKILLed) or `before_commit` (the provider holds the call before its commit; the Driver is
 *   SIGKILLed while the call is in flight; the held commit is released only after the command ended,
 *   so the late commit always comes after the runtime's decision, never by a timer);
 * - `recovery`: `restart` (a new Driver process reconnects as the same instance and the command is
 *   redelivered; the API's heartbeat TTL is far above any restart time, so the restart path is
 *   certain) or `finalization` (no Driver comes back: the API's sweep finds the expired heartbeat
 *   and runs finalization repair; nothing races it);
 * - `endRunAfterRestart`: after a restart, the new Driver is stopped with `--finalize-on-exit`, so
 *   the run ends too (its own finalize) and its error is checked;
 * - `expect`: the invariants the JSON line must show. Every scenario also checks the rule
 *   `settleCommandFromEffect` (command-settlement.service.ts) enforces: a command or run that ended while the effect is `unknown` says `external_effect.unknown`,
 *   `retryable: false`, naming the effect in `details.effectIds`.
 * - `adapter?`: how `tracker` is bound when reconciliation is on: `package` (default; the fixture
 *   adapter by package, `@mosoo/fixture-adapter`), `convention` (the built-in `mcp-convention`
 *   adapter, the provider started with `--advertise-idempotency`: no provider-specific code) or
 *   `none` (the bindings file binds no server: the flag is on but `tracker` is unbound);
 * - `keyArgument?`: the provider reads the idempotency key from this tool argument
 *   (`--key-argument`) and the Driver's MCP config says so (`idempotencyKey: {in: "argument", name}`);
 * - `secondCall?`: a second `createIssue` is queued right after the first; the Driver handles one
 *   command at a time and is blocked on the first, so the second is never sent before the crash;
 * - `repeatGuard?`: the API guards `tracker` with the repeat guard (`MOSOO_REPEAT_GUARD=tracker=600000`);
 * - `followUp?`: after the run ended, what the agent does next in a new run of the same session
 *   (`resend_turn` or `follow_advice`, see `turn-follow-up.ts`); `expect.followUpAnswers` checks it.
 * Every scenario whose run failed also checks the rule `turnInterruptedRunError` (turn-account.ts) enforces: the run error's account lists
 * the write with its status, and it is retryable only when no write of the turn happened.
 */
export interface CrashScenarioSpec {
  name: string;
  reconciliation: "off" | "on";
  crashPoint: "after_commit" | "before_commit";
  recovery: "restart" | "finalization";
  endRunAfterRestart?: boolean;
  adapter?: "package" | "convention" | "none";
  /** When set, the provider reads the key from this tool argument and the Driver's config places it there. */
  keyArgument?: string;
  secondCall?: boolean;
  repeatGuard?: boolean;
  followUp?: TurnFollowUp;
  expect: {
    providerWrites: number;
    lookups: number;
    effectStatus: string;
    resolution: string | null;
    commandStatus: string;
    commandError: string | null;
    commandRetryable: boolean | null;
    runStatus: string;
    runError: string | null;
    runRetryable: boolean | null;
    /** The run error's account, `toolCallId:status` per tool call (rule 16); checked when given. */
    runAccount?: string[];
    /** The follow-up's answers, `toolCallId → "status[ code]"`; checked (deep) when given. */
    followUpAnswers?: Record<string, string>;
  };
}

/**
 * Heartbeat TTL (ms) of the API by recovery path: short when the scenario is about finalization by
 * heartbeat expiry (no Driver comes back, so nothing races the sweep), and far above any Driver
 * restart time (3–4 s seen on a loaded 2-core machine) when it is about a restart, so the sweep can
 * never finalize the instance before the new Driver reconnects.
 */
const HEARTBEAT_TTL_MS: Record<CrashScenarioSpec["recovery"], string> = { finalization: "1500", restart: "300000" };

/** The `{code, retryable, details}` of a command's or run's error, as the run API shows it. */
type ErrorBody = { code: string; retryable: boolean; details?: Record<string, unknown> } | null | undefined;

/** True when `error` names `effectId` in `details.effectIds` (see `settleCommandFromEffect` in command-settlement.service.ts). */
function namesEffect(error: ErrorBody, effectId: string): boolean {
  const ids = error?.details?.["effectIds"];
  return Array.isArray(ids) && ids.includes(effectId);
}

/** Runs one {@link CrashScenarioSpec} and checks its invariants; every process is stopped at the end. */
export async function runCrashScenario(spec: CrashScenarioSpec, opts: ScenarioOptions): Promise<ScenarioResult> {
  const { workDir, timeline } = opts;
  const procs: ManagedProcess[] = [];
  try {
    const stack = await startCrashStack(spec, opts, procs);
    const { provider, api, mcpConfigFile } = stack;
    const { runs, control, runId, sessionId, call } = await enqueueAndCrash(spec, stack, timeline);
    const driverB = await recoverDriver(spec, stack, procs, timeline);
    const view = await awaitRunOutcome(spec, runs, runId, driverB, timeline);
    const effect = view.effects[0];
    const command = view.commands[0];

    let lateWrite: string | undefined;
    if (spec.crashPoint === "before_commit") {
      // The runtime has decided; only now may the held call try to commit (an event, not a timer).
      await control.release();
      const after = await provider.proc.waitForLine(
        (j) =>
          j["idempotencyKey"] === call.idempotencyKey &&
          (j["msg"] === "commit refused: key fenced" || j["msg"] === "createIssue committed"),
        STEP_TIMEOUT_MS,
        "the released commit's outcome",
      );
      lateWrite = after["msg"] === "createIssue committed" ? "committed" : "refused";
      timeline(`the provider's held commit, released now, was ${lateWrite}`);
    }
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
      commandRetryable: command?.error?.retryable ?? null,
      runStatus: view.run.status,
      runError: view.run.error?.code ?? null,
      runRetryable: view.run.error?.retryable ?? null,
      ...(view.run.error ? { runAccount: account.map((c) => `${c.toolCallId}:${c.status}`) } : {}),
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
    return { failures: checkCrashInvariants(spec, line, view, call.effectId, account, lateWrite), line };
  } finally {
    await Promise.all(procs.map((p) => p.kill("SIGTERM")));
  }
}

/** The processes of a crash scenario and the files they share. */
interface CrashStack {
  provider: Awaited<ReturnType<typeof startProviderProcess>>;
  api: Awaited<ReturnType<typeof startApiProcess>>;
  mcpConfigFile: string;
  stateFile: string;
  driverA: DriverProcess;
}

/**
 * Starts the provider (held at the spec's crash point), the API (reconciliation, bindings, heartbeat
 * TTL and repeat guard as the spec says) and Driver A, in that order; each process is added to `procs`.
 */
async function startCrashStack(spec: CrashScenarioSpec, opts: ScenarioOptions, procs: ManagedProcess[]): Promise<CrashStack> {
  const { workDir, timeline } = opts;
  const convention = spec.adapter === "convention";
  const providerFlags = [
    "--fence-on-lookup-miss",
    ...(convention ? ["--advertise-idempotency"] : []),
    ...(spec.keyArgument ? ["--key-argument", spec.keyArgument] : []),
    ...(spec.crashPoint === "after_commit" ? ["--hold-response-after-commit"] : ["--hold-before-commit"]),
  ];
  const provider = await startProviderProcess(join(workDir, "provider.db"), providerFlags);
  procs.push(provider.proc);
  timeline(`provider up at ${provider.url} (${providerFlags.join(" ")})`);

  const bindingsFile = join(workDir, "bindings.json");
  const binding = convention
    ? { adapterId: "mcp-convention", options: { url: provider.url } }
    : { package: FIXTURE_ADAPTER_PACKAGE, options: { url: provider.url } };
  writeFileSync(bindingsFile, JSON.stringify({ bindings: spec.adapter === "none" ? {} : { tracker: binding } }, null, 2));
  const api = await startApiProcess(join(workDir, "api.db"), {
    MOSOO_EFFECT_RECONCILIATION: spec.reconciliation,
    MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
    MOSOO_HEARTBEAT_TTL_MS: HEARTBEAT_TTL_MS[spec.recovery],
    MOSOO_SWEEP_INTERVAL_MS: "250",
    ...(spec.repeatGuard ? { MOSOO_REPEAT_GUARD: "tracker=600000" } : {}),
  });
  procs.push(api.proc);
  timeline(
    `API up at ${api.url}, MOSOO_EFFECT_RECONCILIATION=${spec.reconciliation}, ${spec.adapter === "none" ? "tracker unbound (the bindings file binds no server)" : `tracker bound to ${convention ? "the built-in mcp-convention adapter (read from the provider's tools/list)" : `the package ${FIXTURE_ADAPTER_PACKAGE.module}`}`}`,
  );

  const mcpConfigFile = writeMcpConfig(
    workDir,
    { tracker: provider.url },
    spec.keyArgument ? { tracker: { in: "argument", name: spec.keyArgument } } : {},
  );
  const stateFile = join(workDir, "driver-state.json");
  const driverA = await startScenarioDriver(api, { stateFile, mcpConfigFile }, "driver-a", procs);
  timeline(`Driver A connected as instance ${driverA.driverInstanceId}`);
  return { provider, api, mcpConfigFile, stateFile, driverA };
}

/** Queues the `createIssue` (with `secondCall`, a second one), waits for the spec's crash point, SIGKILLs Driver A; returns the queued call. */
async function enqueueAndCrash(spec: CrashScenarioSpec, stack: CrashStack, timeline: ScenarioOptions["timeline"]) {
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
async function recoverDriver(spec: CrashScenarioSpec, stack: CrashStack, procs: ManagedProcess[], timeline: ScenarioOptions["timeline"]) {
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
async function awaitRunOutcome(
  spec: CrashScenarioSpec,
  runs: RunApiClient,
  runId: string,
  driverB: DriverProcess | undefined,
  timeline: ScenarioOptions["timeline"],
): Promise<RunViewBody> {
  let view: RunViewBody = await pollUntil(
    async () => {
      const v = await runs.getRun(runId);
      return v.commands[0]?.terminalAtMs ? v : undefined;
    },
    STEP_TIMEOUT_MS,
    "the command ends",
  );
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
 * The scenario's invariants: every `spec.expect` key equals the line's; a failed run's account lists the
 * write and is retryable only when nothing was written; at most one provider call and one terminal event;
 * a late commit was refused; an error given while the write is unknown is `external_effect.unknown`,
 * not retryable, naming the effect.
 * @returns the failures, one sentence each (empty when all hold).
 */
function checkCrashInvariants(
  spec: CrashScenarioSpec,
  line: Record<string, unknown> & { providerCalls: number },
  view: RunViewBody,
  effectId: string,
  account: ReturnType<typeof accountOf>,
  lateWrite: string | undefined,
): string[] {
  const effect = view.effects[0];
  const command = view.commands[0];
  const failures: string[] = [];
  for (const [key, want] of Object.entries(spec.expect)) {
    const got = (line as Record<string, unknown>)[key];
    expectInvariant(
      failures,
      JSON.stringify(got) === JSON.stringify(want),
      `${key} must be ${JSON.stringify(want)}, was ${JSON.stringify(got)}`,
    );
  }
  // See `turnInterruptedRunError` in turn-account.ts: the run's account lists the write as the ledger has it; retryable only when nothing was written
  if (view.run.status === "failed") {
    const listed = account.find((c) => c.effectId === effectId);
    const want = effect?.status === "executing" ? "unknown" : effect?.status === "intent" ? "never_sent" : effect?.status;
    expectInvariant(failures, listed?.status === want, `the run's account must list effect ${effectId} as ${want}, was ${listed?.status}`);
    const written = account.some((c) => ["succeeded", "unknown", "compensated"].includes(c.status));
    expectInvariant(
      failures,
      view.run.error?.retryable === !written,
      `the run error is retryable only when nothing of the turn was written`,
    );
  }
  expectInvariant(failures, line.providerCalls <= 1, `the provider must be called at most once for the key, was ${line.providerCalls}`);
  expectInvariant(failures, view.events.filter((e) => e.terminal).length <= 1, "a run has at most one terminal event");
  if (lateWrite) expectInvariant(failures, lateWrite === "refused", "a late commit after a confirmed non-execution must be refused");
  // See `settleCommandFromEffect` in command-settlement.service.ts: an answer given while the write is unknown never invites a resend and names the effect
  for (const [who, error] of [
    ["command", command?.error],
    ["run", view.run.error],
  ] as const) {
    if (error?.code === "external_effect.unknown") {
      expectInvariant(failures, error.retryable === false, `the ${who}'s external_effect.unknown must not be retryable`);
      expectInvariant(
        failures,
        namesEffect(error, effectId),
        `the ${who}'s external_effect.unknown must name effect ${effectId} in details.effectIds`,
      );
    }
    if (effect?.status === "unknown" && error) {
      expectInvariant(
        failures,
        error.code === "external_effect.unknown",
        `the ${who} ended while its effect is unknown: its error must be external_effect.unknown, was ${error.code}`,
      );
    }
  }
  return failures;
}
