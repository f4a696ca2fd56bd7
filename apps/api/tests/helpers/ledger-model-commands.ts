/**
 * Commands of the ledger model test (`fc.commands` + `fc.asyncModelRun`). Each command drives the
 * real runtime as a Driver, the provider, an operator or the clock would, records what it saw in
 * the {@link Model}, then {@link checkInvariants} runs on the store, the audit log and the doubles.
 * Commands that find nothing to act on are no-ops (so shrinking stays simple).
 */
import fc from "fast-check";
import {
  effectNotExecutedError,
  effectUnknownError,
  fingerprintArguments,
  sendDeadlinePassed,
  toMcpExecuteCommandResult,
  type CommandUpdateRequest,
  type EffectClaim,
  type McpToolResult,
} from "@mosoo/contracts";
import type { AdapterFault } from "@mosoo/effect-reconciliation/testing";
import { ProviderResponseLostError } from "@mosoo/effect-reconciliation/testing";
import { RuntimeError } from "../../src/modules/ledger/domain/runtime-errors.js";
import { operatorLookup, operatorResolve } from "./operator-actions.js";
import { isSimulatedCrash } from "./crash-injector.js";
import {
  BOUND_SERVER,
  LEASE_MS,
  SEND_DEADLINE_MS,
  START_MS,
  WRITE_TOOL,
  bump,
  checkInvariants,
  commandById,
  driverStatus,
  effectById,
  figures,
  flush,
  runStatus,
  type CallRec,
  type ClaimRec,
  type DriverRec,
  type FaultSetting,
  type Model,
  type World,
} from "./ledger-model-world.js";

type Cmd = fc.AsyncCommand<Model, World>;

function trace(w: World, line: string): void {
  w.trace.push(`t+${w.clock.now() - START_MS}ms ${line}`);
}

/** Runs `fn`; a typed RuntimeError is an allowed answer (counted), anything else fails the property. */
async function guard<T>(w: World, label: string, fn: () => T | Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof RuntimeError) {
      bump(figures.runtimeErrors, err.code);
      trace(w, `  ${label} → RuntimeError ${err.code}`);
      return undefined;
    }
    trace(w, `  ${label} → THREW ${String(err)}`);
    throw err;
  }
}

/** One model step: run, then check every invariant. */
async function step(w: World, m: Model, label: string, body: () => Promise<void>): Promise<void> {
  bump(figures.commands, label.split("(")[0]!);
  trace(w, label);
  await body();
  await checkInvariants(w, m, label);
}

function canon(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canon).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canon(o[k])}`)
    .join(",")}}`;
}

// ---------------------------------------------------------------------------------------------
// Driver lifecycle

/**
 * The model's current Driver, replaced by a new registration (a new instance, or with
 * `sameInstance` a re-registration of the same instance id when rule 9 allows it) once finalized,
 * plus an active run on it.
 */
function ensureDriver(w: World, sameInstance = false): DriverRec {
  const d = w.driver;
  const status = d ? driverStatus(w, d.instance.id) : undefined;
  if (!d || status === "finalized" || status === "finalizing") {
    let token: string | undefined;
    if (d && sameInstance) {
      try {
        token = w.runtime.drivers.register({ name: "model-driver", driverInstanceId: d.instance.id }, { kind: "instance", driverInstanceId: d.instance.id }).driverToken;
        trace(w, `  re-registered instance ${d.instance.id.slice(-6)}`);
      } catch (err) {
        if (!(err instanceof RuntimeError)) throw err;
        bump(figures.runtimeErrors, err.code);
        trace(w, `  re-register refused: ${err.code}`);
      }
    }
    token ??= w.runtime.drivers.register({ name: "model-driver" }, { kind: "enrollment" }).driverToken;
    const { connectionId } = w.runtime.drivers.connect(w.runtime.drivers.authenticate(token));
    w.driver = { instance: w.runtime.drivers.authenticate(token), token, connectionId, inbox: [] };
    w.runId = null;
    trace(w, `  driver ${w.driver.instance.id.slice(-6)} connected ${connectionId.slice(-6)}`);
  }
  const driver = w.driver!;
  if (!w.runId || runStatus(w, w.runId) !== "active") {
    w.runId = w.runtime.runs.createRun({ driverInstanceId: driver.instance.id }).runId;
    trace(w, `  run ${w.runId.slice(-6)} created`);
  }
  return driver;
}

type ToolKind = "bound" | "unbound_server" | "undeclared_tool";
const TOOLS: Record<ToolKind, { serverId: string; toolName: string }> = {
  bound: { serverId: BOUND_SERVER, toolName: WRITE_TOOL },
  unbound_server: { serverId: "mailer", toolName: "sendEmail" },
  undeclared_tool: { serverId: BOUND_SERVER, toolName: "closeIssue" },
};

function enqueue(w: World, m: Model, kind: ToolKind, runId: string, driverInstanceId: string): CallRec {
  const idx = m.calls.length;
  const { serverId, toolName } = TOOLS[kind];
  const args = { title: `issue ${idx}`, body: "seen at 03:12", n: idx };
  const requestId = `req-${idx}`;
  const res = w.runtime.runs.enqueueToolCall(runId, { serverId, toolName, arguments: args, requestId });
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
  };
  m.calls.push(call);
  trace(w, `  call#${idx} ${serverId}/${toolName} effect ${call.effectId.slice(-6)} key ${call.key.slice(-6)}`);
  return call;
}

function callOfCommand(m: Model, commandId: string): CallRec {
  const call = m.calls.find((c) => c.commandId === commandId);
  if (!call) throw new Error(`command ${commandId} was not enqueued by the model`);
  return call;
}

/** Records a claim answer; with `strict` (no concurrent work) checks it against the ledger. */
function recordClaim(
  w: World,
  m: Model,
  call: CallRec,
  d: { instance: DriverRec["instance"]; connectionId: string },
  claim: EffectClaim,
  strict: boolean,
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
  if (claim.effectId !== call.effectId) throw new Error(`claim for call#${call.idx} names effect ${claim.effectId}, expected ${call.effectId}`);
  if (claim.kind === "execute") {
    m.executeClaims.set(call.effectId, (m.executeClaims.get(call.effectId) ?? 0) + 1);
    if (claim.idempotencyKey !== call.key || claim.attempt !== 1) throw new Error(`execute claim ${JSON.stringify(claim)} for call#${call.idx} (key ${call.key}): I1`);
  }
  if (!strict) return rec;
  const e = effectById(w, call.effectId)!;
  const ok =
    claim.kind === "execute"
      ? e.status === "executing" && e.attempt_count === 1 && runStatus(w, call.runId) === "active" && !["completed", "failed"].includes(commandById(w, call.commandId)!.status)
      : claim.kind === "completed"
        ? e.status === "succeeded" && canon(claim.result) === canon(JSON.parse(e.result_json!))
        : claim.kind === "not_executed"
          ? e.status === "not_executed"
          : e.status === "unknown";
  if (!ok) throw new Error(`claim answer ${JSON.stringify(claim)} disagrees with the ledger: effect ${e.status}/${e.resolution}, run ${runStatus(w, call.runId)}`);
  return rec;
}

function driverResult(call: CallRec, result: McpToolResult) {
  return toMcpExecuteCommandResult(result, { requestId: call.requestId, serverId: call.serverId, toolName: call.toolName });
}

/** The Driver reports the outcome of its attempt: complete when it holds the provider's answer, else mark unknown. */
async function reportAttempt(w: World, m: Model, c: ClaimRec, preferComplete: boolean): Promise<void> {
  if (c.claim.kind !== "execute") return;
  const call = m.calls[c.callIdx]!;
  const { effectId, attempt } = c.claim;
  if (preferComplete && c.send.kind === "answered" && c.send.write.status === "committed") {
    const result = c.send.write.result;
    const res = await guard(w, "complete", () =>
      w.runtime.ledger.complete(c.instance, effectId, {
        connectionId: c.connectionId,
        attempt,
        result: driverResult(call, result),
        receipt: { operationId: c.send.kind === "answered" && c.send.write.status === "committed" ? c.send.write.operationId : "?" },
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
          receipt: { operationId: c.send.kind === "answered" && c.send.write.status === "committed" ? c.send.write.operationId : "?" },
        }),
      );
      if (late?.outcome === "applied" || (late?.outcome === "duplicate" && late.status === "succeeded")) c.completedResult = result;
      trace(w, `  lateResult claim#${c.idx} → ${late ? `${late.outcome}/${late.status}${late.reason ? ` (${late.reason})` : ""}` : "error"}`);
    }
  } else {
    const res = await guard(w, "markUnknown", () => w.runtime.ledger.markUnknown(c.instance, effectId, { connectionId: c.connectionId, attempt, reason: "mcp_transport_closed" }));
    trace(w, `  markUnknown claim#${c.idx} → ${res ? `${res.outcome}/${res.status}` : "error"}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

class EnqueueCmd implements Cmd {
  constructor(readonly kind: ToolKind) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = ensureDriver(w);
      await guard(w, "enqueue", () => enqueue(w, m, this.kind, w.runId!, d.instance.id));
    });
  }
  toString = () => `enqueue(${this.kind})`;
}

/**
 * The Driver receives its next command (into its inbox) and, with `accept`, accepts it. Returns the
 * command id, or undefined when nothing was delivered.
 */
async function deliverNext(w: World, m: Model, d: ReturnType<typeof ensureDriver>, accept: boolean): Promise<string | undefined> {
  const env = await guard(w, "nextCommand", () => w.runtime.commands.nextCommand(d.instance, d.connectionId, 0));
  if (!env) return undefined;
  if (!d.inbox.includes(env.commandId)) d.inbox.push(env.commandId);
  trace(w, `  delivered call#${callOfCommand(m, env.commandId).idx} (was ${env.status}, redelivery ${env.redelivery})`);
  if (accept && env.status !== "accepted") {
    const res = await guard(w, "accept", () => w.runtime.commands.updateCommand(d.instance, env.commandId, { connectionId: d.connectionId, status: "accepted" }));
    trace(w, `  accept → ${res?.outcome}`);
  }
  return env.commandId;
}

class DeliverCmd implements Cmd {
  constructor(readonly accept: boolean) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      await deliverNext(w, m, ensureDriver(w), this.accept);
    });
  }
  toString = () => `deliver(${this.accept ? "accept" : "no-accept"})`;
}

class ClaimCmd implements Cmd {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = w.driver;
      // The Driver claims what it received on this connection and has not finished.
      const open = d ? d.inbox.filter((id) => !TERMINAL.has(commandById(w, id)!.status)) : [];
      if (!d || open.length === 0) return;
      await claimOne(w, m, d, open[this.pick % open.length]!);
    });
  }
  toString = () => `claim(${this.pick})`;
}

const TERMINAL = new Set(["completed", "failed", "expired", "cancelled"]);

async function claimOne(w: World, m: Model, d: DriverRec, commandId: string): Promise<ClaimRec | undefined> {
  const call = callOfCommand(m, commandId);
  const claim = await guard(w, "claim", () => w.runtime.ledger.claim(d.instance, d.connectionId, commandId));
  return claim ? recordClaim(w, m, call, d, claim, true) : undefined;
}

/** The Driver's poll loop, one turn: receive the next command, accept it, claim its effect. */
class DriverTurnCmd implements Cmd {
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = ensureDriver(w);
      const commandId = await deliverNext(w, m, d, true);
      if (commandId) await claimOne(w, m, d, commandId);
    });
  }
  toString = () => "driverTurn";
}

/** The provider receives the Driver's write for an `execute` claim (now or `delayMs` later), maybe losing the response. */
class ProviderExecuteCmd implements Cmd {
  constructor(
    readonly pick: number,
    readonly delayMs: number,
    readonly loseResponse: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.claims.some((c) => c.claim.kind === "execute");
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const open = m.claims.filter((c) => c.claim.kind === "execute" && c.send.kind === "not_sent");
      if (open.length === 0) return;
      const c = open[this.pick % open.length]!;
      if (c.claim.kind === "execute" && sendDeadlinePassed(c.atMs, w.clock.now(), c.claim.sendWithinMs)) {
        // docs/DESIGN.md §3 rule 12: past the send-by deadline the Driver never sends; it reports instead.
        await reportDeadlineMissed(w, c);
        return;
      }
      await sendToProvider(w, m, c, this.delayMs, this.loseResponse);
    });
  }
  toString = () => `providerExecute(${this.pick}, delay=${this.delayMs}, lose=${this.loseResponse})`;
}

/** The model Driver sends claim `c`'s write to the provider (applied `delayMs` later, maybe losing the response). */
async function sendToProvider(w: World, m: Model, c: ClaimRec, requestedDelayMs: number, loseResponse: boolean): Promise<void> {
  const call = m.calls[c.callIdx]!;
  let delayMs = requestedDelayMs;
  if (w.profile.fencing === "max_in_flight" && call.bound) {
    // Honest with the declaration: network delay + lookup lag within maxInFlightMs of the send.
    delayMs = Math.min(delayMs, w.profile.maxInFlightMs - w.profile.lagMs, w.profile.maxDelayMs);
  }
  const provider = call.bound ? w.double : w.unboundProvider;
  m.sends.set(call.key, (m.sends.get(call.key) ?? 0) + 1);
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
    trace(w, `  provider settled claim#${c.idx} key ${call.key.slice(-6)}: ${c.send.kind === "answered" ? c.send.write.status : c.send.kind}`);
  };
  const p = provider.commit(call.key, call.args, { delayMs, loseResponse }).then(
    (write) => settle({ write }),
    (error: unknown) => settle({ error }),
  );
  if (delayMs === 0) await p;
  else trace(w, `  claim#${c.idx}: write in flight for ${delayMs}ms`);
}

/** The model Driver's missed-deadline report for an `execute` claim it will never send (rule 12). */
async function reportDeadlineMissed(w: World, c: ClaimRec): Promise<void> {
  if (c.claim.kind !== "execute") return;
  c.send = { kind: "deadline_missed" };
  const elapsedMs = w.clock.now() - c.atMs;
  const { effectId, attempt } = c.claim;
  const res = await guard(w, "deadlineMissed", () => w.runtime.ledger.deadlineMissed(c.instance, effectId, { connectionId: c.connectionId, attempt, elapsedMs }));
  trace(w, `  claim#${c.idx}: send-by deadline missed after ${elapsedMs}ms → ${res ? `${res.outcome}/${res.status}` : "error"}`);
}

/**
 * A slow Driver turn: the Driver sends its claim request, the API claims, and the answer is held
 * `holdMs` in the network (repro 3's proxy) while the clock moves and the sweep runs (the API may
 * fence, finalize and look the effect up meanwhile). When the answer arrives the Driver measures
 * its deadline from when it SENT the request: past it, it reports instead of sending; within it, it
 * sends at once (the commit `sendDelayMs` later, as the declaration allows). With `thenLost` the
 * Driver is lost right after (an operator finalizes it) and the sweep runs every 500 ms for 3 s: the
 * API's lookups then race the in-flight commit, which the window claim + deadline + maxInFlight covers.
 */
class SlowDriverTurnCmd implements Cmd {
  constructor(
    readonly holdMs: number,
    readonly heartbeat: boolean,
    readonly sendDelayMs: number,
    readonly thenLost: boolean,
  ) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = ensureDriver(w);
      const commandId = await deliverNext(w, m, d, true);
      if (!commandId) return;
      const call = callOfCommand(m, commandId);
      const sentAtMs = w.clock.now();
      const claim = await guard(w, "claim", () => w.runtime.ledger.claim(d.instance, d.connectionId, commandId));
      if (!claim) return;
      w.clock.advance(this.holdMs);
      await flush();
      if (this.heartbeat) await guard(w, "heartbeat", () => w.runtime.drivers.heartbeat(d.instance, d.connectionId));
      await guard(w, "sweep", () => w.runtime.sweep.sweepOnce());
      const c = recordClaim(w, m, call, d, claim, false, sentAtMs);
      if (c.claim.kind !== "execute") return;
      if (sendDeadlinePassed(c.atMs, w.clock.now(), c.claim.sendWithinMs)) {
        await reportDeadlineMissed(w, c);
        return;
      }
      await sendToProvider(w, m, c, this.sendDelayMs, false);
      if (!this.thenLost) return;
      await guard(w, "finalize", () => w.runtime.repair.finalize(d.instance.id, "operator"));
      trace(w, `  Driver ${d.instance.id.slice(-6)} lost right after sending; finalized`);
      for (let i = 0; i < 6; i++) {
        w.clock.advance(500);
        await flush();
        await guard(w, "sweep", () => w.runtime.sweep.sweepOnce());
      }
      ensureDriver(w);
    });
  }
  toString = () => `slowDriverTurn(hold=${this.holdMs}ms${this.heartbeat ? ", heartbeat" : ""}, sendDelay=${this.sendDelayMs}${this.thenLost ? ", then lost" : ""})`;
}

class ReportCmd implements Cmd {
  constructor(
    readonly pick: number,
    readonly preferComplete: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.claims.some((c) => c.claim.kind === "execute");
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const execs = m.claims.filter((c) => c.claim.kind === "execute");
      if (execs.length === 0) return;
      await reportAttempt(w, m, execs[this.pick % execs.length]!, this.preferComplete);
    });
  }
  toString = () => `report(${this.pick}, ${this.preferComplete ? "complete" : "markUnknown"})`;
}

/**
 * The Driver sends the terminal command update for what its last claim on this connection said:
 * `honest` (completed with the result / failed with the matching error / failed when it gave up),
 * or `lie` (completed with a made-up result, whatever the ledger says).
 */
class CommandUpdateCmd implements Cmd {
  constructor(
    readonly pick: number,
    readonly variant: "honest" | "lie",
  ) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = w.driver;
      if (!d || d.inbox.length === 0) return;
      const commandId = d.inbox[this.pick % d.inbox.length]!;
      const call = callOfCommand(m, commandId);
      const mine = m.claims.filter((c) => c.callIdx === call.idx && c.connectionId === d.connectionId);
      const last = mine[mine.length - 1];
      let req: CommandUpdateRequest;
      if (this.variant === "lie") {
        req = { connectionId: d.connectionId, status: "completed", result: { outputText: "made up", requestId: call.requestId, serverId: call.serverId, toolName: call.toolName } };
      } else if (last?.claim.kind === "completed") {
        req = { connectionId: d.connectionId, status: "completed", result: last.claim.result };
      } else if (last?.claim.kind === "execute" && last.completedResult) {
        req = { connectionId: d.connectionId, status: "completed", result: driverResult(call, last.completedResult) };
      } else if (last?.claim.kind === "execute" && last.send.kind === "deadline_missed") {
        req = { connectionId: d.connectionId, status: "failed", error: effectNotExecutedError(call.effectId) };
      } else if (last?.claim.kind === "unknown") {
        req = { connectionId: d.connectionId, status: "failed", error: effectUnknownError(call.effectId) };
      } else if (last?.claim.kind === "not_executed") {
        req = { connectionId: d.connectionId, status: "failed", error: effectNotExecutedError(call.effectId) };
      } else {
        req = {
          connectionId: d.connectionId,
          status: "failed",
          error: { code: last ? "mcp.tool_call_failed" : "mcp.server_unavailable", message: "the Driver gave up", retryable: true, details: {} },
        };
      }
      const res = await guard(w, "updateCommand", () => w.runtime.commands.updateCommand(d.instance, commandId, req));
      trace(w, `  update call#${call.idx} ${req.status}${req.status === "failed" ? `/${req.error.code}` : ""} → ${res ? `${res.outcome}/${res.status}` : "error"}`);
    });
  }
  toString = () => `commandUpdate(${this.pick}, ${this.variant})`;
}

/** The Driver process restarts: same instance, new connection (a finalized instance registers anew). */
class CrashReconnectCmd implements Cmd {
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = w.driver;
      if (!d) {
        ensureDriver(w);
        return;
      }
      const fresh = await guard(w, "reconnect", () => {
        const { connectionId } = w.runtime.drivers.connect(w.runtime.drivers.authenticate(d.token));
        return { instance: w.runtime.drivers.authenticate(d.token), token: d.token, connectionId, inbox: [] } satisfies DriverRec;
      });
      if (fresh) {
        w.driver = fresh;
        trace(w, `  reconnected ${fresh.connectionId.slice(-6)}`);
      } else {
        ensureDriver(w);
      }
    });
  }
  toString = () => "crashReconnect";
}

class FinalizeCmd implements Cmd {
  constructor(
    readonly trigger: "driver_request" | "operator",
    readonly sameInstance: boolean,
  ) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = w.driver;
      if (d) {
        const summary = await guard(w, "finalize", () => w.runtime.repair.finalize(d.instance.id, this.trigger));
        trace(w, `  finalized ${d.instance.id.slice(-6)}: ${JSON.stringify(summary)}`);
      }
      ensureDriver(w, this.sameInstance);
    });
  }
  toString = () => `finalize(${this.trigger}${this.sameInstance ? ", re-register same instance" : ""})`;
}

class AdvanceClockCmd implements Cmd {
  constructor(
    readonly ms: number,
    readonly heartbeat: boolean,
  ) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      w.clock.advance(this.ms);
      await flush();
      const d = w.driver;
      if (this.heartbeat && d) await guard(w, "heartbeat", () => w.runtime.drivers.heartbeat(d.instance, d.connectionId));
    });
  }
  toString = () => `advance(${this.ms}ms${this.heartbeat ? ", heartbeat" : ""})`;
}

class SweepCmd implements Cmd {
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const report = await w.runtime.sweep.sweepOnce();
      trace(w, `  sweep: ${JSON.stringify(report)}`);
    });
  }
  toString = () => "sweep";
}

class SetFaultsCmd implements Cmd {
  constructor(readonly fault: FaultSetting) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const lag = this.fault.lag && w.profile.fencing === "max_in_flight" ? w.profile.lagMs : 0;
      m.fault = { ...this.fault, lag: lag > 0 };
      w.double.setFaults({ adapterFault: this.fault.adapterFault, lookupLagMs: lag, lookupDelayMs: this.fault.slow ? 1_000 : 0 });
    });
  }
  toString = () => `setFaults(${this.fault.adapterFault}${this.fault.lag ? ", lag" : ""}${this.fault.slow ? ", slow" : ""})`;
}

/**
 * An honest operator settles an `unknown` effect with what the provider holds for its key: the
 * provider's result when it committed, else (after fencing the key at the provider, so that no
 * late write can land) `not_executed`. Goes through helpers/operator-actions.ts.
 */
function honestResolve(w: World, call: CallRec): string {
  const provider = call.bound ? w.double : w.unboundProvider;
  const record = provider.record(call.key);
  if (record) return operatorResolve(w.runtime, call.effectId, { succeeded: record.result });
  provider.fence(call.key);
  return operatorResolve(w.runtime, call.effectId, "not_executed");
}

/** The operator looks an `unknown` effect up now, or resolves it by hand ({@link honestResolve}). */
class OperatorCmd implements Cmd {
  constructor(
    readonly pick: number,
    readonly action: "lookup" | "resolve",
  ) {}
  check = (m: Readonly<Model>) => m.calls.length > 0;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const unknown = m.calls.filter((c) => effectById(w, c.effectId)?.status === "unknown");
      if (unknown.length === 0) return;
      const call = unknown[this.pick % unknown.length]!;
      const out = await guard(w, `operator ${this.action}`, () => (this.action === "lookup" ? operatorLookup(w.runtime, call.effectId) : honestResolve(w, call)));
      trace(w, `  operator ${this.action} call#${call.idx} → ${out ?? "refused"}`);
    });
  }
  toString = () => `operator(${this.pick}, ${this.action})`;
}

/** What runs while the API process is armed to die (ApiCrashCmd). */
export type CrashOp = "none" | "sweep" | "finalize" | "reconcile" | "claim";

/**
 * The API process dies at its k-th durable write from now (before or after that write commits)
 * while running `op` (a sweep, finalization of the current Driver, a reconcile of an unknown
 * effect, a redelivery claim), or simply between commands (`none`, or when `op` ends before write
 * k); a new API process opens the same file (stale leases released). The Driver, the provider and
 * the clock live on.
 */
class ApiCrashCmd implements Cmd {
  constructor(
    readonly k: number,
    readonly phase: "before_commit" | "after_commit",
    readonly op: CrashOp,
    readonly pick: number,
  ) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      w.injector.arm({ atWrite: w.injector.writes + this.k, phase: this.phase });
      const d = w.driver;
      try {
        switch (this.op) {
          case "sweep":
            await w.runtime.sweep.sweepOnce();
            break;
          case "finalize":
            if (d) await w.runtime.repair.finalize(d.instance.id, "operator");
            break;
          case "reconcile": {
            const unknown = m.calls.filter((c) => c.bound && effectById(w, c.effectId)?.status === "unknown");
            const call = unknown[this.pick % Math.max(1, unknown.length)];
            if (call) await w.runtime.reconciler.reconcile(call.effectId, "sweep");
            break;
          }
          case "claim": {
            const open = d ? d.inbox.filter((id) => !["completed", "failed", "expired", "cancelled"].includes(commandById(w, id)?.status ?? "")) : [];
            const commandId = open[this.pick % Math.max(1, open.length)];
            if (d && commandId) {
              const call = callOfCommand(m, commandId);
              const claim = await w.runtime.ledger.claim(d.instance, d.connectionId, commandId);
              recordClaim(w, m, call, d, claim, false);
            }
            break;
          }
          case "none":
            break;
        }
      } catch (err) {
        if (!isSimulatedCrash(err) && !(err instanceof RuntimeError)) throw err;
      }
      const crashed = w.injector.crashed;
      w.injector.disarm();
      figures.apiRestarts += 1;
      if (crashed) figures.apiCrashes += 1;
      trace(w, `  API ${crashed ? crashed.message : "stopped (no crash point reached)"}; restarted on the same file`);
      w.restart();
    });
  }
  toString = () => `apiCrash(${this.op}, write +${this.k} ${this.phase})`;
}

export const RACE_OPS = ["reconcile_sweep", "reconcile_operator", "claim", "report", "finalize", "sweep", "lease_expiry", "enqueue", "operator_resolve", "operator_lookup"] as const;
export type RaceOp = (typeof RACE_OPS)[number];

/**
 * Concurrent work on one `unknown` (else `executing`) effect, interleaved by `fc.scheduler`: each
 * operation starts when the scheduler releases it, and every adapter lookup waits for its own
 * scheduler release. Covers R1 (two reconcilers), R2 (a lease that expires mid-lookup, then a
 * second reconciler), C6, and reconcile vs redelivery claim vs finalization vs Driver reports.
 */
class RaceCmd implements Cmd {
  /**
   * @param ordered the operations START in the listed order (each one once the previous one ran
   *   its synchronous part, e.g. took its lease); their lookups still settle in scheduler order.
   *   `[reconcile, lease_expiry, reconcile]` ordered is R2: a lookup outlives its lease.
   */
  constructor(
    readonly s: fc.Scheduler,
    readonly pick: number,
    readonly ops: readonly RaceOp[],
    readonly ordered: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.calls.length > 0;
  [fc.cloneMethod]() {
    return new RaceCmd(fc.hasCloneMethod(this.s) ? this.s[fc.cloneMethod]() : this.s, this.pick, this.ops, this.ordered);
  }
  async run(m: Model, w: World) {
    await step(w, m, `race(${this.ordered ? "ordered " : ""}${this.ops.join(",")})`, async () => {
      const rows = m.calls.map((c) => ({ c, e: effectById(w, c.effectId)! }));
      const unknown = rows.filter((r) => r.c.bound && r.e.status === "unknown");
      const executing = rows.filter((r) => r.e.status === "executing");
      const pool = unknown.length > 0 ? unknown : executing;
      if (pool.length === 0) return;
      const { c: call } = pool[this.pick % pool.length]!;
      trace(w, `  race on call#${call.idx} (${effectById(w, call.effectId)!.status})`);
      const s = this.s;
      w.gate = (label) => s.schedule(Promise.resolve(label), label).then(() => undefined);
      const d = w.driver;
      const started: Array<Promise<unknown>> = [];
      let previousStarted: Promise<unknown> = Promise.resolve();
      const start = (name: string, op: () => unknown) => {
        figures.raceOps += 1;
        let markStarted: () => void = () => {};
        const hasStarted = new Promise<void>((resolve) => (markStarted = resolve));
        const after = this.ordered ? previousStarted : Promise.resolve();
        previousStarted = hasStarted;
        started.push(
          after
            .then(() => w.gate!(`op ${name}`))
            .then(async () => {
              trace(w, `  [race] ${name} starts`);
              const running = guard(w, `[race] ${name}`, op);
              markStarted();
              const out = await running;
              trace(w, `  [race] ${name} done: ${out === undefined ? "-" : JSON.stringify(out).slice(0, 160)}`);
            })
            .finally(markStarted),
        );
      };
      for (const op of this.ops) {
        switch (op) {
          case "reconcile_sweep":
          case "reconcile_operator":
            start(op, async () => (await w.runtime.reconciler.reconcile(call.effectId, op === "reconcile_sweep" ? "sweep" : "operator")).kind);
            break;
          case "claim":
            if (d && d.inbox.includes(call.commandId)) {
              start(op, async () => {
                const claim = await w.runtime.ledger.claim(d.instance, d.connectionId, call.commandId);
                recordClaim(w, m, call, d, claim, false);
                return claim.kind;
              });
            }
            break;
          case "report": {
            const c = m.claims.filter((x) => x.callIdx === call.idx && x.claim.kind === "execute").at(-1);
            if (c) start(op, () => reportAttempt(w, m, c, true));
            break;
          }
          case "finalize":
            start(op, () => w.runtime.repair.finalize(call.driverInstanceId, "operator"));
            break;
          case "operator_resolve":
            start(op, () => honestResolve(w, call));
            break;
          case "operator_lookup":
            start(op, () => operatorLookup(w.runtime, call.effectId));
            break;
          case "sweep":
            start(op, () => w.runtime.sweep.sweepOnce());
            break;
          case "lease_expiry":
            start(op, () => {
              w.clock.advance(LEASE_MS + 1);
              return LEASE_MS + 1;
            });
            break;
          case "enqueue": {
            const runId = w.runId;
            if (d && runId) start(op, () => enqueue(w, m, "bound", runId, d.instance.id).idx);
            break;
          }
        }
      }
      try {
        const settled = await s.waitFor(Promise.allSettled(started));
        for (const r of settled) if (r.status === "rejected") throw r.reason;
      } finally {
        w.gate = null;
        trace(w, `  schedule: ${s.report().map((r) => `${r.label}:${r.status}`).join(" → ")}`);
      }
      await flush();
    });
  }
  toString = () => `race(pick=${this.pick}, ${this.ordered ? "ordered " : ""}${this.ops.join(",")})`;
}

// ---------------------------------------------------------------------------------------------
// Arbitraries

const FAULTS: AdapterFault[] = ["none", "throws", "rejects", "garbage", "hangs_ignoring_signal", "wrong_key", "conflicting_fingerprint", "oversized_receipt"];

/**
 * The weighted command arbitraries. `raceEnqueue` lets race commands enqueue a tool call
 * concurrently with the other operations (finalization included): that is how the
 * enqueue-during-finalization bug was found (see the pinned regression in the test file).
 */
export function commandArbitraries(opts: { raceEnqueue: boolean; operator?: boolean; apiCrash?: boolean }): Array<fc.Arbitrary<Cmd>> {
  const enqueueArb = fc.constantFrom<ToolKind>("bound", "bound", "bound", "bound", "unbound_server", "undeclared_tool").map((k) => new EnqueueCmd(k));
  // the Driver accepts what it receives, except now and then (it crashed right after receiving)
  const deliverArb = fc.nat(5).map((n) => new DeliverCmd(n !== 0));
  const claimArb = fc.nat(7).map((p) => new ClaimCmd(p));
  const executeArb = fc
    .record({ pick: fc.nat(7), delay: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }) }), lose: fc.boolean() })
    .map((r) => new ProviderExecuteCmd(r.pick, r.delay, r.lose));
  const reportArb = fc.record({ pick: fc.nat(7), complete: fc.boolean() }).map((r) => new ReportCmd(r.pick, r.complete));
  const updateArb = fc
    .record({ pick: fc.nat(7), variant: fc.constantFrom<"honest" | "lie">("honest", "honest", "honest", "lie") })
    .map((r) => new CommandUpdateCmd(r.pick, r.variant));
  const crashArb = fc.constant(null).map(() => new CrashReconnectCmd());
  const turnArb = fc.constant(null).map(() => new DriverTurnCmd());
  // a slow Driver: the claim answer is held past any window (deadline + maxInFlight + lag), or just around the deadline
  const slowTurnArb = fc
    .record({
      hold: fc.oneof(fc.integer({ min: 8_000, max: SEND_DEADLINE_MS - 1 }), fc.integer({ min: SEND_DEADLINE_MS, max: 11_000 }), fc.integer({ min: 25_000, max: 70_000 })),
      heartbeat: fc.boolean(),
      sendDelay: fc.integer({ min: 0, max: 3_000 }),
      thenLost: fc.boolean(),
    })
    .map((r) => new SlowDriverTurnCmd(r.hold, r.heartbeat, r.sendDelay, r.thenLost));
  const finalizeArb = fc
    .record({ trigger: fc.constantFrom<"driver_request" | "operator">("driver_request", "operator"), same: fc.boolean() })
    .map((r) => new FinalizeCmd(r.trigger, r.same));
  const advanceArb = fc
    .record({ ms: fc.oneof(fc.integer({ min: 1, max: 2_000 }), fc.integer({ min: 2_000, max: 40_000 })), heartbeat: fc.boolean() })
    .map((r) => new AdvanceClockCmd(r.ms, r.heartbeat));
  const sweepArb = fc.constant(null).map(() => new SweepCmd());
  const faultArb = fc
    .record({
      adapterFault: fc.oneof({ weight: 3, arbitrary: fc.constant<AdapterFault>("none") }, { weight: 4, arbitrary: fc.constantFrom(...FAULTS) }),
      lag: fc.boolean(),
      slow: fc.nat(3).map((n) => n === 0),
    })
    .map((f) => new SetFaultsCmd(f));
  const raceArb = fc
    .record({
      s: fc.scheduler(),
      pick: fc.nat(7),
      core: fc.shuffledSubarray(
        (opts.operator
          ? ["reconcile_sweep", "reconcile_operator", "claim", "report", "sweep", "lease_expiry", "operator_resolve", "operator_lookup"]
          : ["reconcile_sweep", "reconcile_operator", "claim", "report", "sweep", "lease_expiry"]) as RaceOp[],
        { minLength: 1, maxLength: 3 },
      ),
      finalize: fc.nat(3).map((n) => n === 0),
      enqueue: fc.nat(2).map((n) => opts.raceEnqueue && n === 0),
    })
    .map((r) => new RaceCmd(r.s, r.pick, [...r.core, ...(r.finalize ? (["finalize"] as const) : []), ...(r.enqueue ? (["enqueue"] as const) : [])], false));
  // R2: a reconciler's lookup outlives its lease, a second reconciler takes the expired lease; any
  // extra operation (a redelivery claim, a Driver report, finalization, a sweep) joins the race.
  const zombieArb = fc
    .record({
      s: fc.scheduler(),
      pick: fc.nat(7),
      first: fc.constantFrom<RaceOp>("reconcile_sweep", "reconcile_operator", "claim", "finalize"),
      second: fc.constantFrom<RaceOp>("reconcile_sweep", "reconcile_operator", "claim", "sweep"),
      extra: fc.option(fc.constantFrom<RaceOp>("report", "claim", "finalize", "sweep"), { nil: undefined }),
    })
    .map((r) => new RaceCmd(r.s, r.pick, [r.first, "lease_expiry", r.second, ...(r.extra && r.extra !== r.first && r.extra !== r.second ? [r.extra] : [])], true));
  const weighted: Array<[number, fc.Arbitrary<Cmd>]> = [
    [2, enqueueArb],
    [3, deliverArb],
    [2, claimArb],
    [3, turnArb],
    [1, slowTurnArb],
    [3, executeArb],
    [2, reportArb],
    [2, updateArb],
    [1, crashArb],
    [1, finalizeArb],
    [2, advanceArb],
    [1, sweepArb],
    [1, faultArb],
    [2, raceArb],
    [2, zombieArb],
  ];
  if (opts.apiCrash) {
    weighted.push([
      1,
      fc
        .record({
          k: fc.integer({ min: 1, max: 3 }),
          phase: fc.constantFrom<"before_commit" | "after_commit">("before_commit", "after_commit"),
          op: fc.constantFrom<CrashOp>("none", "sweep", "finalize", "reconcile", "claim"),
          pick: fc.nat(7),
        })
        .map((r) => new ApiCrashCmd(r.k, r.phase, r.op, r.pick)),
    ]);
  }
  if (opts.operator) {
    weighted.push([1, fc.record({ pick: fc.nat(7), action: fc.constantFrom<"lookup" | "resolve">("lookup", "resolve") }).map((r) => new OperatorCmd(r.pick, r.action))]);
  }
  return weighted.flatMap(([n, arb]) => Array.from({ length: n }, () => arb));
}
