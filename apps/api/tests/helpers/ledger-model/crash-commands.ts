/**
 * The API-process crash command of the ledger model: the process dies at a planned durable write
 * while it runs an operation, and a new process opens the same file.
 */
import { UserFacingError } from "../../../src/kernel/user-facing-error.js";
import { isSimulatedCrash } from "../crash-injector.js";
import { commandById, effectById, figures, type Model, type World } from "../ledger-model-world.js";
import { callOfCommand, recordClaim } from "./driver-actions.js";
import { filterAsync, step, trace, type Cmd } from "./steps.js";

/** What runs while the API process is armed to die (ApiCrashCmd). */
export type CrashOp = "none" | "sweep" | "finalize" | "reconcile" | "claim";

/**
 * The API process dies at its k-th durable write from now (before or after that write commits)
 * while running `op` (a sweep, finalization of the current Driver, a reconcile of an unknown
 * effect, a redelivery claim), or simply between commands (`none`, or when `op` ends before write
 * k); a new API process opens the same file (expired leases ended). The Driver, the provider and
 * the clock live on.
 */
export class ApiCrashCmd implements Cmd {
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
            const unknown = await filterAsync(m.calls, async (c) => c.bound && (await effectById(w, c.effectId))?.status === "unknown");
            const call = unknown[this.pick % Math.max(1, unknown.length)];
            if (call) await w.runtime.reconciler.reconcile(call.effectId, "sweep");
            break;
          }
          case "claim": {
            const open = d
              ? await filterAsync(
                  d.inbox,
                  async (id) => !["completed", "failed", "expired", "cancelled"].includes((await commandById(w, id))?.status ?? ""),
                )
              : [];
            const commandId = open[this.pick % Math.max(1, open.length)];
            if (d && commandId) {
              const call = callOfCommand(m, commandId);
              const claim = await w.runtime.ledger.claim(d.instance, d.connectionId, commandId);
              recordClaim(w, m, call, d, claim);
            }
            break;
          }
          case "none":
            break;
        }
      } catch (err) {
        if (!isSimulatedCrash(err) && !(err instanceof UserFacingError)) throw err;
      }
      const crashed = w.injector.crashed;
      w.injector.disarm();
      figures.apiRestarts += 1;
      if (crashed) figures.apiCrashes += 1;
      trace(w, `  API ${crashed ? crashed.message : "stopped (no crash point reached)"}; restarted on the same file`);
      await w.restart();
    });
  }
  toString = () => `apiCrash(${this.op}, write +${this.k} ${this.phase})`;
}
