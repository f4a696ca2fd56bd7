/**
 * Provider and environment commands of the ledger model: the provider receives a write (maybe
 * late, maybe losing the response), the adapter's faults change, the clock moves.
 */
import { sendDeadlinePassed } from "@mosoo/contracts";
import { flush, type FaultSetting, type Model, type World } from "../ledger-model-world.js";
import { reportDeadlineMissed, sendToProvider } from "./driver-actions.js";
import { guard, step, type Cmd } from "./steps.js";

/** The provider receives the Driver's write for an `execute` claim (now or `delayMs` later), maybe losing the response. */
export class ProviderExecuteCmd implements Cmd {
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

export class AdvanceClockCmd implements Cmd {
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

export class SetFaultsCmd implements Cmd {
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
