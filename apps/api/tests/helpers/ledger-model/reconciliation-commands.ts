/**
 * Reconciliation-side commands of the ledger model: finalization of the current Driver and a
 * sweep. The concurrent interleavings live in race-command.ts.
 */
import { type Model, type World } from "../ledger-model-world.js";
import { ensureDriver } from "./driver-actions.js";
import { guard, step, trace, type Cmd } from "./steps.js";

export class FinalizeCmd implements Cmd {
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
      await ensureDriver(w, this.sameInstance);
    });
  }
  toString = () => `finalize(${this.trigger}${this.sameInstance ? ", re-register same instance" : ""})`;
}

export class SweepCmd implements Cmd {
  check = () => true;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const report = await w.runtime.sweep.sweepOnce();
      trace(w, `  sweep: ${JSON.stringify(report)}`);
    });
  }
  toString = () => "sweep";
}
