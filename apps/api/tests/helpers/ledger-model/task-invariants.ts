/**
 * Invariants of task-augmented calls in the ledger model (docs/DESIGN.md §4 "Tasks", docs/MCP-TASKS.md),
 * checked on the store after every command: the task id is set once and only on a dispatched effect,
 * and every lookup by task handle answers what the provider's task state says (the table of
 * docs/MCP-TASKS.md), never `not_executed`.
 */
import { TASK_POLL_MS, type ModelTask, type TaskWorld } from "./task-provider.js";

/** The effect columns the task checks read (a row of ledger-model-world.ts `EffectDb`; no import of it: the world imports this file). */
interface TaskEffectRow {
  id: string;
  status: string;
  resolution: string | null;
  attempt_count: number;
  task_id: string | null;
  idempotency_key: string;
  result_json: string | null;
  reconciliation_receipt_json: string | null;
  operator_attention: string | null;
}
/** The reconciliation record columns the task checks read. */
interface TaskRecordRow {
  id: string;
  outcome: string;
  reason_code: string | null;
  receipt_json: string | null;
  started_at_ms: number;
  next_lookup_at_ms: number | null;
}
/** The parts of the ledger model the task checks read and keep. */
interface TaskModel {
  calls: ReadonlyArray<{ task: boolean; effectId: string; key: string }>;
  sends: ReadonlyMap<string, number>;
  taskIds: ReadonlyMap<string, string>;
  taskIdAtMs: ReadonlyMap<string, number>;
  seenTaskRecords: Set<string>;
}

/** What the provider holds for an effect's stored task id at a lookup. */
type HandleState = "no_handle" | "unknown_id" | "expired" | ModelTask["state"];

/** The outcome docs/MCP-TASKS.md gives each handle state: a reason code of `still_unknown`, or `confirmed_succeeded`. */
const EXPECTED: Record<HandleState, string> = {
  no_handle: "still_unknown/no_task_handle",
  unknown_id: "still_unknown/task_expired",
  expired: "still_unknown/task_expired",
  working: "still_unknown/task_working",
  input_required: "still_unknown/task_input_required",
  cancelled: "still_unknown/task_cancelled",
  failed_error: "still_unknown/task_failed",
  completed: "confirmed_succeeded",
  failed_result: "confirmed_succeeded",
};

/**
 * `still_unknown` reasons the runtime gives whatever the adapter would say (docs/DESIGN.md §5): the lookup
 * hit its bound or the network failed (`lookup_timeout`, `adapter_error`), the API process died in it
 * (`lookup_interrupted`), the lookup bound was reached. Never a confirmation.
 */
const ANY_STATE = new Set(["lookup_timeout", "adapter_error", "adapter_crashed", "lookup_interrupted", "lookup_bound_reached"]);

/** True when `effectId` is the effect of a task-augmented call of the model. */
export function isTaskRecordOfEffect(m: TaskModel, effectId: string): boolean {
  return m.calls.some((c) => c.task && c.effectId === effectId);
}

/** The handle state of `e` now (tasks change only in TaskStateCmd and handles only in TaskReportCmd, which look nothing up). */
function handleState(tasks: TaskWorld, e: TaskEffectRow): HandleState {
  if (e.task_id === null) return "no_handle";
  const task = tasks.get(e.task_id);
  if (!task) return "unknown_id";
  return task.expired ? "expired" : task.state;
}

/**
 * Checks one effect of a task-augmented call (`fail` throws):
 * - set once: the stored task id is the first one the ledger accepted, never another, never cleared,
 *   and only on an effect that was dispatched;
 * - every new reconciliation record answers what docs/MCP-TASKS.md says for the task's state (or a
 *   runtime reason of {@link ANY_STATE}); a working task's retry waits its `pollInterval`;
 * - never `confirmed_not_executed`; `not_executed` only from a missed send-by deadline with nothing sent;
 * - `succeeded` by reconciliation holds the task's own result and a receipt naming the task.
 * Each judged record is counted in `tally` (by task state and outcome).
 */
export function checkTaskEffect(
  tasks: TaskWorld,
  m: TaskModel,
  e: TaskEffectRow,
  recs: readonly TaskRecordRow[],
  tally: Map<string, number>,
  fail: (message: string) => never,
): void {
  const first = m.taskIds.get(e.id);
  if (first !== undefined && e.task_id !== first)
    fail(`effect ${e.id} holds task id ${e.task_id}, but the ledger took ${first} first (a task id is set once)`);
  if (first === undefined && e.task_id !== null) fail(`effect ${e.id} holds task id ${e.task_id}, which no accepted report gave`);
  if (e.task_id !== null && e.attempt_count < 1) fail(`effect ${e.id} holds task id ${e.task_id} but was never dispatched`);

  const state = handleState(tasks, e);
  for (const r of recs) {
    if (r.outcome === "confirmed_not_executed")
      fail(`task effect ${e.id}: record ${r.id} is confirmed_not_executed (${state}); a task lookup never proves non-execution`);
    if (m.seenTaskRecords.has(r.id)) continue;
    m.seenTaskRecords.add(r.id);
    const got = `${r.outcome}${r.reason_code ? `/${r.reason_code}` : ""}`;
    tally.set(`${state}→${got}`, (tally.get(`${state}→${got}`) ?? 0) + 1);
    if (r.outcome === "superseded" || (r.outcome === "still_unknown" && ANY_STATE.has(r.reason_code ?? ""))) continue;
    // a lookup that started before the task id was stored rightly found no handle (a slow Driver reports it after a fence)
    const storedAtMs = m.taskIdAtMs.get(e.id);
    if (got === EXPECTED.no_handle && storedAtMs !== undefined && Number(r.started_at_ms) <= storedAtMs) continue;
    if (got !== EXPECTED[state])
      fail(`task effect ${e.id} (task ${e.task_id}: ${state}): lookup answered ${got}, expected ${EXPECTED[state]}`);
    if (state === "working" && r.next_lookup_at_ms !== null && Number(r.next_lookup_at_ms) < Number(r.started_at_ms) + TASK_POLL_MS)
      fail(
        `task effect ${e.id}: a working task's next lookup at ${r.next_lookup_at_ms}, before its pollInterval ${TASK_POLL_MS} ms after ${r.started_at_ms}`,
      );
  }

  const confirmed = recs.filter((r) => r.outcome === "confirmed_succeeded");
  if (e.status === "succeeded") {
    const result = JSON.parse(e.result_json ?? "null") as { outputText?: string; isError?: boolean } | null;
    const task = e.task_id ? tasks.get(e.task_id) : undefined;
    const text = (t: ModelTask | undefined) => (t?.result?.content[0] as { text?: string } | undefined)?.text;
    if (e.resolution === "reconciled") {
      if (!task || (task.state !== "completed" && task.state !== "failed_result"))
        fail(`task effect ${e.id} succeeded/reconciled, but its task ${e.task_id} is ${task?.state ?? "unknown to the provider"}`);
      const receipt = JSON.parse(e.reconciliation_receipt_json ?? "null") as {
        providerOperationId?: string;
        detail?: { taskStatus?: string };
      };
      const status = task.state === "completed" ? "completed" : "failed";
      if (receipt?.providerOperationId !== e.task_id || receipt.detail?.taskStatus !== status)
        fail(`task effect ${e.id}: receipt ${e.reconciliation_receipt_json} does not name task ${e.task_id} (${status})`);
      if (result?.outputText !== text(task) || (result?.isError ?? false) !== (task.state === "failed_result"))
        fail(`task effect ${e.id} succeeded with ${e.result_json}, the task holds ${JSON.stringify(task.result)}`);
      if (confirmed.length !== 1 || confirmed[0]!.receipt_json !== e.reconciliation_receipt_json)
        fail(`task effect ${e.id} succeeded/reconciled without its matching confirmed_succeeded record (I7/I8)`);
    } else if (e.resolution === "operator") {
      const ran = tasks.tasks.find((t) => t.key === e.idempotency_key && t.state === "completed");
      if (!ran || result?.outputText !== text(ran)) fail(`task effect ${e.id} resolved succeeded by the operator with ${e.result_json}`);
    } else if (e.resolution === "provider_result" || e.resolution === "reported_late") {
      // the Driver read tasks/result of its own task and completed the effect with it
      const own = tasks.tasks.find((t) => t.key === e.idempotency_key);
      if (!own || (own.state !== "completed" && own.state !== "failed_result") || result?.outputText !== text(own))
        fail(
          `task effect ${e.id} succeeded (${e.resolution}) with ${e.result_json}, its task ${own?.taskId} is ${own?.state ?? "missing"}`,
        );
    } else fail(`task effect ${e.id} succeeded with resolution ${e.resolution}`);
  } else if (e.status === "not_executed") {
    const sent = m.sends.get(e.idempotency_key) ?? 0;
    if (e.resolution !== "deadline_missed" || sent !== 0 || tasks.tasks.some((t) => t.key === e.idempotency_key))
      fail(`task effect ${e.id} is not_executed (${e.resolution}) after ${sent} sends: never not_executed once a task may exist`);
  } else if (e.resolution !== null || e.result_json !== null || e.reconciliation_receipt_json !== null || confirmed.length > 0) {
    fail(`task effect ${e.id} is ${e.status} yet holds a resolution, result, receipt or confirmed record (I7)`);
  }
}

/**
 * After quiescence (I2 for tasks): an effect whose stored handle names a task that ended with a tool
 * result the provider still holds ended `succeeded`, unless it waits for an operator.
 */
export function checkTaskQuiescence(tasks: TaskWorld, e: TaskEffectRow, fail: (message: string) => never): void {
  const task = e.task_id ? tasks.get(e.task_id) : undefined;
  if (
    task &&
    !task.expired &&
    (task.state === "completed" || task.state === "failed_result") &&
    e.status !== "succeeded" &&
    e.operator_attention === null
  )
    fail(`task effect ${e.id} is ${e.status} after quiescence while its task ${task.taskId} ${task.state} with a result (I2)`);
}
