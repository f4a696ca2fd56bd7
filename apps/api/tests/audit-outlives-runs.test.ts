/**
 * Audit rows outlive the runs they mention (docs/DESIGN.md §7; deleting a run used to
 * delete its operator audit rows by cascade). Since migration 0008 `effect_operator_actions` holds
 * plain ids (no foreign key) with the run and Driver instance copied in.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createDoubleWorld, dispatchWrite, type DoubleWorld, reconnectDriver, operatorNamed } from "./kit/index.js";

let f: DoubleWorld | undefined;
afterEach(() => {
  f?.close();
  f = undefined;
});

/** An effect fenced `unknown` and then resolved `not_executed` by an operator: one audit row, the fence lifted. */
async function resolvedByOperator(fx: DoubleWorld) {
  const call = await dispatchWrite(fx);
  const restarted = await reconnectDriver(fx.runtime, call.driver);
  await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  expect((await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId)).kind).toBe("unknown");
  await fx.runtime.operator.resolve(call.effectId, { outcome: "not_executed", reason: "checked the tracker" }, operatorNamed("alice"));
  return call;
}

const auditRows = (fx: DoubleWorld) =>
  fx.store.sqlite
    .prepare("SELECT effect_id, run_id, driver_instance_id, action, actor, outcome FROM effect_operator_actions ORDER BY id")
    .all();

describe("audit rows outlive runs", () => {
  it.each(["run", "session", "driver"] as const)("deleting the %s keeps the audit row, with its run and Driver ids", async (what) => {
    f = createDoubleWorld({ bind: false });
    const call = await resolvedByOperator(f);
    const expected = [
      {
        effect_id: call.effectId,
        run_id: call.runId,
        driver_instance_id: call.driver.instance.id,
        action: "resolve",
        actor: "alice",
        outcome: "not_executed",
      },
    ];
    expect(auditRows(f)).toEqual(expected);
    if (what === "run") await f.runtime.runs.deleteRun(call.runId);
    if (what === "session") await f.runtime.runs.deleteSession(call.sessionId);
    if (what === "driver") {
      await f.runtime.repair.finalize(call.driver.instance.id, "driver_request");
      await f.runtime.runs.purgeDriver(call.driver.instance.id);
    }
    expect(f.store.sqlite.prepare("SELECT count(*) AS n FROM external_tool_effects WHERE id = ?").get(call.effectId)).toEqual({ n: 0 });
    expect(auditRows(f)).toEqual(expected);
  });
});
