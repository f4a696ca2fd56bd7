/**
 * The effect's MCP task handle (docs/DESIGN.md §4 "Tasks"): the Driver's `effectTaskCreated` report
 * stores it once (applied, then duplicate; another id is refused 409 `effect.task_id_conflict`), and
 * the store itself refuses a malformed id (CHECK) or any change of a stored one (trigger).
 */
import { afterEach, describe, expect, it } from "vitest";
import { CrashLab } from "./helpers/crash-lab.js";

const labs: CrashLab[] = [];
afterEach(async () => {
  for (const lab of labs.splice(0)) await lab.dispose();
});

/** A lab with one `executing` effect (claimed, not reported); returns what the reports need. */
async function executingEffect() {
  const lab = new CrashLab("neither", "ok");
  labs.push(lab);
  await lab.setup();
  const call = await lab.runtime.runs.enqueueToolCall(lab.runId!, {
    serverId: "tracker",
    toolName: "createIssue",
    arguments: { title: "t" },
    requestId: "req-1",
  });
  const d = lab.driver!;
  const instance = () => lab.runtime.drivers.authenticate(d.token);
  await lab.runtime.commands.updateCommand(await instance(), call.commandId, { connectionId: d.connectionId, status: "accepted" });
  const claim = await lab.runtime.ledger.claim(await instance(), d.connectionId, call.commandId);
  if (claim.kind !== "execute") throw new Error("expected execute");
  const report = async (taskId: string, attempt = claim.attempt) =>
    lab.runtime.ledger.taskCreated(await instance(), claim.effectId, { connectionId: d.connectionId, attempt, taskId });
  return { lab, effectId: claim.effectId, report };
}

describe("task handle", () => {
  it("is stored once: applied, the same id again duplicate, another id refused 409 effect.task_id_conflict", async () => {
    const { lab, effectId, report } = await executingEffect();
    expect(await report("task-1")).toEqual({ outcome: "applied", status: "executing" });
    expect(await report("task-1")).toEqual({ outcome: "duplicate", status: "executing" });
    await expect(report("task-2")).rejects.toMatchObject({ code: "effect.task_id_conflict", httpStatus: 409 });
    expect(await report("task-1", 2)).toMatchObject({ outcome: "rejected" });
    const row = lab.sqlite.prepare("SELECT task_id, status FROM external_tool_effects WHERE id = ?").get(effectId);
    expect(row).toEqual({ task_id: "task-1", status: "executing" });
  });

  it("the store refuses a malformed id (CHECK) and any change or clearing of a stored one (trigger)", async () => {
    const { lab, effectId, report } = await executingEffect();
    const update = (value: string | null) => () =>
      lab.sqlite.prepare("UPDATE external_tool_effects SET task_id = ? WHERE id = ?").run(value, effectId);
    expect(update("a b")).toThrow(/external_tool_effects_task_id_check/);
    expect(update("x".repeat(257))).toThrow(/external_tool_effects_task_id_check/);
    await report("task-1");
    expect(update("task-2")).toThrow(/effect\.task_id_set_once/);
    expect(update(null)).toThrow(/effect\.task_id_set_once/);
    expect(update("task-1")).not.toThrow();
  });
});
