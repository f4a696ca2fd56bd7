/**
 * Driver commands of the ledger model: enqueue, deliver, claim, a poll-loop turn, a slow turn
 * (the claim answer held in the network), a report of an attempt, a terminal command update
 * (honest or a lie), and a Driver process restart.
 */
import { effectNotExecutedError, effectUnknownError, sendDeadlinePassed, type CommandUpdateRequest } from "@mosoo/contracts";
import { commandById, flush, type DriverRec, type Model, type World } from "../ledger-model-world.js";
import {
  TERMINAL,
  callOfCommand,
  claimOne,
  deliverNext,
  driverResult,
  enqueue,
  ensureDriver,
  recordClaim,
  reportAttempt,
  reportDeadlineMissed,
  sendToProvider,
  type ToolKind,
} from "./driver-actions.js";
import { filterAsync, guard, step, trace, type Cmd } from "./steps.js";

export class EnqueueCmd implements Cmd {
  constructor(readonly kind: ToolKind) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = await ensureDriver(w);
      await guard(w, "enqueue", () => enqueue(w, m, this.kind, w.runId!, d.instance.id));
    });
  }
  toString = () => `enqueue(${this.kind})`;
}

export class DeliverCmd implements Cmd {
  constructor(readonly accept: boolean) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      await deliverNext(w, m, await ensureDriver(w), this.accept);
    });
  }
  toString = () => `deliver(${this.accept ? "accept" : "no-accept"})`;
}

export class ClaimCmd implements Cmd {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = w.driver;
      // The Driver claims what it received on this connection and has not finished.
      const open = d ? await filterAsync(d.inbox, async (id) => !TERMINAL.has((await commandById(w, id))!.status)) : [];
      if (!d || open.length === 0) return;
      await claimOne(w, m, d, open[this.pick % open.length]!);
    });
  }
  toString = () => `claim(${this.pick})`;
}

/** The Driver's poll loop, one turn: receive the next command, accept it, claim its effect. */
export class DriverTurnCmd implements Cmd {
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = await ensureDriver(w);
      const commandId = await deliverNext(w, m, d, true);
      if (commandId) await claimOne(w, m, d, commandId);
    });
  }
  toString = () => "driverTurn";
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
export class SlowDriverTurnCmd implements Cmd {
  constructor(
    readonly holdMs: number,
    readonly heartbeat: boolean,
    readonly sendDelayMs: number,
    readonly thenLost: boolean,
  ) {}
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = await ensureDriver(w);
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
      const c = recordClaim(w, m, call, d, claim, sentAtMs);
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
      await ensureDriver(w);
    });
  }
  toString = () =>
    `slowDriverTurn(hold=${this.holdMs}ms${this.heartbeat ? ", heartbeat" : ""}, sendDelay=${this.sendDelayMs}${this.thenLost ? ", then lost" : ""})`;
}

export class ReportCmd implements Cmd {
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
export class CommandUpdateCmd implements Cmd {
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
        req = {
          connectionId: d.connectionId,
          status: "completed",
          result: { outputText: "made up", requestId: call.requestId, serverId: call.serverId, toolName: call.toolName },
        };
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
          error: {
            code: last ? "mcp.tool_call_failed" : "mcp.server_unavailable",
            message: "the Driver gave up",
            retryable: true,
            details: {},
          },
        };
      }
      const res = await guard(w, "updateCommand", () => w.runtime.commands.updateCommand(d.instance, commandId, req));
      trace(
        w,
        `  update call#${call.idx} ${req.status}${req.status === "failed" ? `/${req.error.code}` : ""} → ${res ? `${res.outcome}/${res.status}` : "error"}`,
      );
    });
  }
  toString = () => `commandUpdate(${this.pick}, ${this.variant})`;
}

/** The Driver process restarts: same instance, new connection (a finalized instance registers anew). */
export class CrashReconnectCmd implements Cmd {
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const d = w.driver;
      if (!d) {
        await ensureDriver(w);
        return;
      }
      const fresh = await guard(w, "reconnect", async () => {
        const { connectionId } = await w.runtime.drivers.connect(await w.runtime.drivers.authenticate(d.token));
        return { instance: await w.runtime.drivers.authenticate(d.token), token: d.token, connectionId, inbox: [] } satisfies DriverRec;
      });
      if (fresh) {
        w.driver = fresh;
        trace(w, `  reconnected ${fresh.connectionId.slice(-6)}`);
      } else {
        await ensureDriver(w);
      }
    });
  }
  toString = () => "crashReconnect";
}
