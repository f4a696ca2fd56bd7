/**
 * Operator commands of the ledger model: look an `unknown` effect up now, or resolve it by hand
 * honestly (through helpers/operator-actions.ts).
 */
import { operatorLookup, operatorResolve } from "../operator-actions.js";
import { effectById, type CallRec, type Model, type World } from "../ledger-model-world.js";
import { filterAsync, guard, step, trace, type Cmd } from "./steps.js";

/**
 * An honest operator settles an `unknown` effect with what the provider holds for its key: the
 * provider's result when it committed, else (after fencing the key at the provider, so that no
 * late write can land) `not_executed`. Goes through helpers/operator-actions.ts.
 */
export async function honestResolve(w: World, call: CallRec): Promise<string> {
  if (call.task) {
    // A task's fate shows only once it completed; otherwise (working, failed, cancelled, expired) the honest operator waits.
    const ran = w.tasks.tasks.find((t) => t.key === call.key && t.state === "completed");
    return ran?.result
      ? await operatorResolve(w.runtime, call.effectId, { succeeded: ran.result })
      : "left unresolved (task not completed)";
  }
  const provider = call.bound ? w.double : w.unboundProvider;
  const record = provider.record(call.key);
  if (record) return await operatorResolve(w.runtime, call.effectId, { succeeded: record.result });
  provider.fence(call.key);
  return await operatorResolve(w.runtime, call.effectId, "not_executed");
}

/** The operator looks an `unknown` effect up now, or resolves it by hand ({@link honestResolve}). */
export class OperatorCmd implements Cmd {
  constructor(
    readonly pick: number,
    readonly action: "lookup" | "resolve",
  ) {}
  check = (m: Readonly<Model>) => m.calls.length > 0;
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const unknown = await filterAsync(m.calls, async (c) => (await effectById(w, c.effectId))?.status === "unknown");
      if (unknown.length === 0) return;
      const call = unknown[this.pick % unknown.length]!;
      const out = await guard(w, `operator ${this.action}`, async () =>
        this.action === "lookup" ? operatorLookup(w.runtime, call.effectId) : await honestResolve(w, call),
      );
      trace(w, `  operator ${this.action} call#${call.idx} → ${out ?? "refused"}`);
    });
  }
  toString = () => `operator(${this.pick}, ${this.action})`;
}
