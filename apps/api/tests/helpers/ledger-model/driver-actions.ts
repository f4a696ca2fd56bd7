/**
 * What the model Driver does, shared by the command families: register/connect (ensureDriver),
 * enqueue a tool call, receive and accept commands, claim effects and record the answers, send a
 * write to the provider, report an attempt (complete / markUnknown / lateResult / deadlineMissed).
 */
import { fingerprintArguments, toMcpExecuteCommandResult, type EffectClaim, type McpToolResult } from "@mosoo/contracts";
import { ProviderResponseLostError } from "@mosoo/effect-reconciliation/testing";
import { UserFacingError } from "../../../src/kernel/user-facing-error.js";
import {
  BOUND_SERVER,
  WRITE_TOOL,
  bump,
  commandById,
  driverStatus,
  effectById,
  figures,
  runStatus,
  type CallRec,
  type ClaimRec,
  type DriverRec,
  type Model,
  type World,
} from "../ledger-model-world.js";
import { canon, guard, trace } from "./steps.js";
import { TASK_SERVER, TASK_TOOL, holdsResult } from "./task-provider.js";

// ---------------------------------------------------------------------------------------------
// Driver lifecycle

/**
 * The model's current Driver, replaced by a new registration (a new instance, or with
 * `sameInstance` a re-registration of the same instance id when rule 9 allows it) once finalized,
 * plus an active run on it.
 */
export async function ensureDriver(w: World, sameInstance = false): Promise<DriverRec> {
  const d = w.driver;
  const status = d ? await driverStatus(w, d.instance.id) : undefined;
  if (!d || status === "finalized" || status === "finalizing") {
    let token: string | undefined;
    if (d && sameInstance) {
      try {
        token = (
          await w.runtime.drivers.register(
            { name: "model-driver", driverInstanceId: d.instance.id },
            { kind: "instance", driverInstanceId: d.instance.id },
          )
        ).driverToken;
        trace(w, `  re-registered instance ${d.instance.id.slice(-6)}`);
      } catch (err) {
        if (!(err instanceof UserFacingError)) throw err;
        bump(figures.runtimeErrors, err.code);
        trace(w, `  re-register refused: ${err.code}`);
      }
    }
    token ??= (await w.runtime.drivers.register({ name: "model-driver" }, { kind: "enrollment" })).driverToken;
    const { connectionId } = await w.runtime.drivers.connect(await w.runtime.drivers.authenticate(token));
    w.driver = { instance: await w.runtime.drivers.authenticate(token), token, connectionId, inbox: [] };
    w.runId = null;
    trace(w, `  driver ${w.driver.instance.id.slice(-6)} connected ${connectionId.slice(-6)}`);
  }
  const driver = w.driver!;
  if (!w.runId || (await runStatus(w, w.runId)) !== "active") {
    w.runId = (await w.runtime.runs.createRun({ driverInstanceId: driver.instance.id })).runId;
    trace(w, `  run ${w.runId.slice(-6)} created`);
  }
  return driver;
}

export type ToolKind = "bound" | "unbound_server" | "undeclared_tool" | "task";
const TOOLS: Record<ToolKind, { serverId: string; toolName: string }> = {
  bound: { serverId: BOUND_SERVER, toolName: WRITE_TOOL },
  task: { serverId: TASK_SERVER, toolName: TASK_TOOL },
  unbound_server: { serverId: "mailer", toolName: "sendEmail" },
  undeclared_tool: { serverId: BOUND_SERVER, toolName: "closeIssue" },
};

export async function enqueue(w: World, m: Model, kind: ToolKind, runId: string, driverInstanceId: string): Promise<CallRec> {
  const idx = m.calls.length;
  const { serverId, toolName } = TOOLS[kind];
  const args = { title: `issue ${idx}`, body: "seen at 03:12", n: idx };
  const requestId = `req-${idx}`;
  const res = await w.runtime.runs.enqueueToolCall(runId, { serverId, toolName, arguments: args, requestId });
  const call: CallRec = {
    idx,
    runId,
    commandId: res.commandId,
    effectId: res.effectId,
    key: res.idempotencyKey,
    driverInstanceId,
    serverId,
    toolName,
    requestId,
    args,
    bound: kind === "bound",
    task: kind === "task",
  };
  m.calls.push(call);
  if (call.task) w.taskEffects.add(call.effectId);
  trace(w, `  call#${idx} ${serverId}/${toolName} effect ${call.effectId.slice(-6)} key ${call.key.slice(-6)}`);
  return call;
}

export function callOfCommand(m: Model, commandId: string): CallRec {
  const call = m.calls.find((c) => c.commandId === commandId);
  if (!call) throw new Error(`command ${commandId} was not enqueued by the model`);
  return call;
}

/** Records a claim answer (see {@link checkClaimAgainstLedger} for the check when no concurrent work runs). */
export function recordClaim(
  w: World,
  m: Model,
  call: CallRec,
  d: { instance: DriverRec["instance"]; connectionId: string },
  claim: EffectClaim,
  sentAtMs = w.clock.now(),
): ClaimRec {
  const rec: ClaimRec = {
    idx: m.claims.length,
    callIdx: call.idx,
    instance: d.instance,
    connectionId: d.connectionId,
    claim,
    atMs: sentAtMs,
    send: { kind: "not_sent" },
    completedResult: null,
  };
  m.claims.push(rec);
  bump(figures.claims, claim.kind);
  trace(w, `  claim#${rec.idx} call#${call.idx} → ${claim.kind}${claim.kind === "execute" ? ` attempt ${claim.attempt}` : ""}`);
  if (claim.effectId !== call.effectId)
    throw new Error(`claim for call#${call.idx} names effect ${claim.effectId}, expected ${call.effectId}`);
  if (claim.kind === "execute") {
    m.executeClaims.set(call.effectId, (m.executeClaims.get(call.effectId) ?? 0) + 1);
    if (claim.idempotencyKey !== call.key || claim.attempt !== 1)
      throw new Error(`execute claim ${JSON.stringify(claim)} for call#${call.idx} (key ${call.key}): I1`);
  }
  return rec;
}

/** Checks a claim answer against the ledger (only when no concurrent work runs: the answer must match the rows now). */
async function checkClaimAgainstLedger(w: World, call: CallRec, claim: EffectClaim): Promise<void> {
  const e = (await effectById(w, call.effectId))!;
  const ok =
    claim.kind === "execute"
      ? e.status === "executing" &&
        e.attempt_count === 1 &&
        (await runStatus(w, call.runId)) === "active" &&
        !["completed", "failed"].includes((await commandById(w, call.commandId))!.status)
      : claim.kind === "completed"
        ? e.status === "succeeded" && canon(claim.result) === canon(JSON.parse(e.result_json!))
        : claim.kind === "not_executed"
          ? e.status === "not_executed"
          : e.status === "unknown";
  if (!ok)
    throw new Error(
      `claim answer ${JSON.stringify(claim)} disagrees with the ledger: effect ${e.status}/${e.resolution}, run ${await runStatus(w, call.runId)}`,
    );
}

export function driverResult(call: CallRec, result: McpToolResult) {
  return toMcpExecuteCommandResult(result, { requestId: call.requestId, serverId: call.serverId, toolName: call.toolName });
}

/** The Driver reports the outcome of its attempt: complete when it holds the provider's answer, else mark unknown. */
export async function reportAttempt(w: World, m: Model, c: ClaimRec, preferComplete: boolean): Promise<void> {
  if (c.claim.kind !== "execute") return;
  const call = m.calls[c.callIdx]!;
  const { effectId, attempt } = c.claim;
  // what the Driver holds: the provider's answer, or the result of its task once the task ended with one (docs/MCP-TASKS.md)
  const task = c.send.kind === "task" ? w.tasks.get(c.send.taskId) : undefined;
  const held =
    c.send.kind === "answered" && c.send.write.status === "committed"
      ? { result: c.send.write.result, operationId: c.send.write.operationId }
      : task?.result && holdsResult(task)
        ? { result: task.result as McpToolResult, operationId: task.taskId }
        : null;
  if (preferComplete && held) {
    const result = held.result;
    const res = await guard(w, "complete", () =>
      w.runtime.ledger.complete(c.instance, effectId, {
        connectionId: c.connectionId,
        attempt,
        result: driverResult(call, result),
        receipt: { operationId: held.operationId },
      }),
    );
    if (res?.outcome === "applied") c.completedResult = result;
    trace(w, `  complete claim#${c.idx} → ${res ? `${res.outcome}/${res.status}` : "error"}`);
    if (res?.outcome === "rejected") {
      // Fenced meanwhile: the real result is late evidence (docs/DESIGN.md §3 rule 13), not thrown away.
      const late = await guard(w, "lateResult", () =>
        w.runtime.ledger.lateResult(c.instance, effectId, {
          connectionId: c.connectionId,
          attempt,
          idempotencyKey: call.key,
          toolName: call.toolName,
          requestFingerprint: fingerprintArguments(call.args),
          result: driverResult(call, result),
          receipt: { operationId: held.operationId },
        }),
      );
      if (late?.outcome === "applied" || (late?.outcome === "duplicate" && late.status === "succeeded")) c.completedResult = result;
      trace(
        w,
        `  lateResult claim#${c.idx} → ${late ? `${late.outcome}/${late.status}${late.reason ? ` (${late.reason})` : ""}` : "error"}`,
      );
    }
  } else {
    const res = await guard(w, "markUnknown", () =>
      w.runtime.ledger.markUnknown(c.instance, effectId, { connectionId: c.connectionId, attempt, reason: "mcp_transport_closed" }),
    );
    trace(w, `  markUnknown claim#${c.idx} → ${res ? `${res.outcome}/${res.status}` : "error"}`);
  }
}

/**
 * The Driver receives its next command (into its inbox) and, with `accept`, accepts it. Returns the
 * command id, or undefined when nothing was delivered.
 */
export async function deliverNext(
  w: World,
  m: Model,
  d: Awaited<ReturnType<typeof ensureDriver>>,
  accept: boolean,
): Promise<string | undefined> {
  const env = await guard(w, "nextCommand", () => w.runtime.commands.nextCommand(d.instance, d.connectionId, 0));
  if (!env) return undefined;
  if (!d.inbox.includes(env.commandId)) d.inbox.push(env.commandId);
  trace(w, `  delivered call#${callOfCommand(m, env.commandId).idx} (was ${env.status}, redelivery ${env.redelivery})`);
  if (accept && env.status !== "accepted") {
    const res = await guard(w, "accept", () =>
      w.runtime.commands.updateCommand(d.instance, env.commandId, { connectionId: d.connectionId, status: "accepted" }),
    );
    trace(w, `  accept → ${res?.outcome}`);
  }
  return env.commandId;
}

export const TERMINAL = new Set(["completed", "failed", "expired", "cancelled"]);

export async function claimOne(w: World, m: Model, d: DriverRec, commandId: string): Promise<ClaimRec | undefined> {
  const call = callOfCommand(m, commandId);
  const claim = await guard(w, "claim", () => w.runtime.ledger.claim(d.instance, d.connectionId, commandId));
  if (!claim) return undefined;
  const rec = recordClaim(w, m, call, d, claim);
  await checkClaimAgainstLedger(w, call, claim);
  return rec;
}

/** The model Driver sends claim `c`'s write to the provider (applied `delayMs` later, maybe losing the response). */
export async function sendToProvider(w: World, m: Model, c: ClaimRec, requestedDelayMs: number, loseResponse: boolean): Promise<void> {
  const call = m.calls[c.callIdx]!;
  let delayMs = requestedDelayMs;
  if (w.profile.fencing === "max_in_flight" && call.bound) {
    // Honest with the declaration: network delay + lookup lag within maxInFlightMs of the send.
    delayMs = Math.min(delayMs, w.profile.maxInFlightMs - w.profile.lagMs, w.profile.maxDelayMs);
  }
  const provider = call.bound ? w.double : w.unboundProvider;
  m.sends.set(call.key, (m.sends.get(call.key) ?? 0) + 1);
  if (call.task) {
    // A task-augmented call (docs/MCP-TASKS.md): the provider answers a task id at once; the tool runs when the task completes.
    const taskId = w.tasks.create(call.key, call.args);
    c.send = { kind: "task", taskId };
    trace(w, `  provider created task ${taskId} for claim#${c.idx} key ${call.key.slice(-6)}`);
    // The Driver reports the task id as soon as it arrives (apps/driver), unless it died first (`loseResponse`).
    const claim = c.claim;
    if (!loseResponse && claim.kind === "execute") {
      const res = await guard(w, "taskCreated", () =>
        w.runtime.ledger.taskCreated(c.instance, claim.effectId, { connectionId: c.connectionId, attempt: claim.attempt, taskId }),
      );
      if (res?.outcome === "applied") {
        m.taskIds.set(call.effectId, taskId);
        m.taskIdAtMs.set(call.effectId, w.clock.now());
      }
      bump(figures.taskReports, `at_send:${res?.outcome ?? "refused"}`);
      trace(w, `  task id reported → ${res ? `${res.outcome}/${res.status}` : "refused"}`);
    }
    return;
  }
  c.send = { kind: "pending" };
  const settle = (outcome: { write?: Awaited<ReturnType<typeof provider.commit>>; error?: unknown }) => {
    if (outcome.write) {
      c.send = { kind: "answered", write: outcome.write };
      if (outcome.write.status === "committed") m.committed.set(call.key, outcome.write.operationId);
    } else if (outcome.error instanceof ProviderResponseLostError) {
      c.send = { kind: "lost" };
    } else {
      w.violations.push(`provider commit failed unexpectedly: ${String(outcome.error)}`);
    }
    trace(
      w,
      `  provider settled claim#${c.idx} key ${call.key.slice(-6)}: ${c.send.kind === "answered" ? c.send.write.status : c.send.kind}`,
    );
  };
  const p = provider.commit(call.key, call.args, { delayMs, loseResponse }).then(
    (write) => settle({ write }),
    (error: unknown) => settle({ error }),
  );
  if (delayMs === 0) await p;
  else trace(w, `  claim#${c.idx}: write in flight for ${delayMs}ms`);
}

/** The model Driver's missed-deadline report for an `execute` claim it will never send (rule 12). */
export async function reportDeadlineMissed(w: World, c: ClaimRec): Promise<void> {
  if (c.claim.kind !== "execute") return;
  c.send = { kind: "deadline_missed" };
  const elapsedMs = w.clock.now() - c.atMs;
  const { effectId, attempt } = c.claim;
  const res = await guard(w, "deadlineMissed", () =>
    w.runtime.ledger.deadlineMissed(c.instance, effectId, { connectionId: c.connectionId, attempt, elapsedMs }),
  );
  trace(w, `  claim#${c.idx}: send-by deadline missed after ${elapsedMs}ms → ${res ? `${res.outcome}/${res.status}` : "error"}`);
}
