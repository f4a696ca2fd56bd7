/**
 * Task commands of the ledger model (docs/DESIGN.md §4 "Tasks", docs/MCP-TASKS.md): the Driver reports a
 * task id for an effect (its own, another one, or one for an effect that is not dispatched), and the
 * provider moves a task on (working, input required, completed, failed with or without a result,
 * cancelled, expired). Lookups by task handle happen wherever the model reconciles (sweep, operator,
 * finalization, races); ledger-model/task-invariants.ts judges them.
 */
import type { EffectTransitionResponse } from "@mosoo/contracts";
import { UserFacingError } from "../../../src/kernel/user-facing-error.js";
import { bump, effectById, figures, type DriverRec, type Model, type World } from "../ledger-model-world.js";
import { filterAsync, step, trace, type Cmd } from "./steps.js";
import type { ModelTaskState } from "./task-provider.js";

/**
 * How the Driver reports: `own` its claim's task id (again and again: a retry is a duplicate);
 * `other` another id for the same attempt (a second, different id: refused once one is stored);
 * `not_dispatched` a task id for an effect that is not `executing`/`unknown` (intent, settled).
 */
export type TaskReport = "own" | "other" | "not_dispatched";

/** The answer docs/MCP-TASKS.md and the set-once rule give a report of `taskId` for `row` at `attempt`. */
function expectedAnswer(row: { status: string; attempt_count: number; task_id: string | null }, attempt: number, taskId: string) {
  if (attempt !== row.attempt_count) return "rejected";
  if (row.task_id !== null) return row.task_id === taskId ? "duplicate" : "conflict";
  return row.status === "executing" || row.status === "unknown" ? "applied" : "rejected";
}

/** The model Driver reports a task id (POST /v1/drivers/effects/:effectId/task, Driver protocol `effectTaskCreated`). */
export class TaskReportCmd implements Cmd {
  constructor(
    readonly pick: number,
    readonly variant: TaskReport,
  ) {}
  check = (m: Readonly<Model>) => m.calls.some((c) => c.task);
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      let target: { effectId: string; instance: DriverRec["instance"]; connectionId: string };
      let attempt: number;
      let taskId: string;
      if (this.variant === "not_dispatched") {
        const d = w.driver;
        const calls = await filterAsync(m.calls, async (c) => {
          const st = (await effectById(w, c.effectId))?.status;
          return c.task && st !== undefined && st !== "executing" && st !== "unknown";
        });
        if (!d || calls.length === 0) return;
        const call = calls[this.pick % calls.length]!;
        target = { effectId: call.effectId, instance: d.instance, connectionId: d.connectionId };
        attempt = Math.max(1, (await effectById(w, call.effectId))!.attempt_count);
        taskId = `task-never-${call.idx}`;
      } else {
        const sent = m.claims.filter((c) => c.send.kind === "task");
        if (sent.length === 0) return;
        const c = sent[this.pick % sent.length]!;
        if (c.claim.kind !== "execute" || c.send.kind !== "task") return;
        target = { effectId: c.claim.effectId, instance: c.instance, connectionId: c.connectionId };
        attempt = c.claim.attempt;
        taskId = this.variant === "own" ? c.send.taskId : `${c.send.taskId}-other-${this.pick}`;
      }
      const before = (await effectById(w, target.effectId))!;
      const expected = expectedAnswer(before, attempt, taskId);
      let answer: EffectTransitionResponse | undefined;
      let code: string | undefined;
      try {
        answer = await w.runtime.ledger.taskCreated(target.instance, target.effectId, {
          connectionId: target.connectionId,
          attempt,
          taskId,
        });
      } catch (err) {
        if (!(err instanceof UserFacingError)) throw err;
        code = err.code;
        bump(figures.runtimeErrors, err.code);
      }
      const got = answer?.outcome ?? code!;
      bump(figures.taskReports, `${this.variant}:${got}`);
      trace(w, `  task report ${taskId} for effect ${target.effectId.slice(-6)} (was ${before.status}, holds ${before.task_id}) → ${got}`);
      const after = (await effectById(w, target.effectId))!;
      // the set-once rule and "only on a dispatched effect" (decideTaskHandle; a trigger backs it in the store)
      // a refusal that comes first (another instance's effect, a superseded connection) is allowed; an answer must be the rule's
      if (answer !== undefined && answer.outcome !== expected)
        throw new Error(
          `task report ${taskId} on effect ${before.status} holding ${before.task_id}: answered ${got}, expected ${expected}`,
        );
      if (code === "effect.task_id_conflict" && expected !== "conflict")
        throw new Error(`task report ${taskId}: a conflict where ${expected} was due`);
      if (answer?.outcome === "applied") {
        if (after.task_id !== taskId) throw new Error(`task report ${taskId} applied but the effect holds ${after.task_id}`);
        m.taskIds.set(target.effectId, taskId);
        m.taskIdAtMs.set(target.effectId, w.clock.now());
      } else if (after.task_id !== before.task_id) {
        throw new Error(`task report ${taskId} answered ${got} yet the stored task id went ${before.task_id} → ${after.task_id}`);
      }
    });
  }
  toString = () => `taskReport(${this.pick}, ${this.variant})`;
}

/** The provider moves one of its tasks on (a terminal state is final; `expire` makes the provider forget it). */
export class TaskStateCmd implements Cmd {
  constructor(
    readonly pick: number,
    readonly to: ModelTaskState | "expire",
  ) {}
  check = (m: Readonly<Model>) => m.calls.some((c) => c.task);
  async run(m: Model, w: World) {
    await step(w, m, this.toString(), async () => {
      const tasks = w.tasks.tasks;
      if (tasks.length === 0) return;
      const t = tasks[this.pick % tasks.length]!;
      const changed = await w.tasks.move(t, this.to);
      trace(w, `  task ${t.taskId} → ${this.to}${changed ? "" : " (no change)"}`);
    });
  }
  toString = () => `taskState(${this.pick}, ${this.to})`;
}
