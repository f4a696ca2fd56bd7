/**
 * The race command of the ledger model: concurrent operations on one effect, interleaved by
 * `fc.scheduler` (two reconcilers, an expiring lease, a redelivery claim, a report, finalization,
 * operator actions, an enqueue).
 */
import fc from "fast-check";
import { operatorLookup } from "../operator-actions.js";
import { LEASE_MS, effectById, figures, flush, type Model, type World } from "../ledger-model-world.js";
import { enqueue, recordClaim, reportAttempt } from "./driver-actions.js";
import { honestResolve } from "./operator-commands.js";
import { guard, step, trace, type Cmd } from "./steps.js";

const RACE_OPS = [
  "reconcile_sweep",
  "reconcile_operator",
  "claim",
  "report",
  "finalize",
  "sweep",
  "lease_expiry",
  "enqueue",
  "operator_resolve",
  "operator_lookup",
] as const;
export type RaceOp = (typeof RACE_OPS)[number];

/**
 * Concurrent work on one `unknown` (else `executing`) effect, interleaved by `fc.scheduler`: each
 * operation starts when the scheduler releases it, and every adapter lookup waits for its own
 * scheduler release. Covers R1 (two reconcilers), R2 (a lease that expires mid-lookup, then a
 * second reconciler), C6, and reconcile vs redelivery claim vs finalization vs Driver reports.
 */
export class RaceCmd implements Cmd {
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
      const rows = await Promise.all(m.calls.map(async (c) => ({ c, e: (await effectById(w, c.effectId))! })));
      const unknown = rows.filter((r) => r.c.bound && r.e.status === "unknown");
      const executing = rows.filter((r) => r.e.status === "executing");
      const pool = unknown.length > 0 ? unknown : executing;
      if (pool.length === 0) return;
      const { c: call } = pool[this.pick % pool.length]!;
      trace(w, `  race on call#${call.idx} (${(await effectById(w, call.effectId))!.status})`);
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
            start(
              op,
              async () => (await w.runtime.reconciler.reconcile(call.effectId, op === "reconcile_sweep" ? "sweep" : "operator")).kind,
            );
            break;
          case "claim":
            if (d && d.inbox.includes(call.commandId)) {
              start(op, async () => {
                const claim = await w.runtime.ledger.claim(d.instance, d.connectionId, call.commandId);
                recordClaim(w, m, call, d, claim);
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
            if (d && runId) start(op, async () => (await enqueue(w, m, "bound", runId, d.instance.id)).idx);
            break;
          }
        }
      }
      try {
        const settled = await s.waitFor(Promise.allSettled(started));
        for (const r of settled) if (r.status === "rejected") throw r.reason;
      } finally {
        w.gate = null;
        trace(
          w,
          `  schedule: ${s
            .report()
            .map((r) => `${r.label}:${r.status}`)
            .join(" → ")}`,
        );
      }
      await flush();
    });
  }
  toString = () => `race(pick=${this.pick}, ${this.ordered ? "ordered " : ""}${this.ops.join(",")})`;
}
