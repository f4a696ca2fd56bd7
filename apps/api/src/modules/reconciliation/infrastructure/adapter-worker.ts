import { fileURLToPath } from "node:url";
import {
  MAX_RECEIPT_BYTES,
  MAX_RESULT_BYTES,
  instantiateBinding,
  loadAdapterModule,
  ReconciliationError,
  type AdapterLogger,
  type AdapterSource,
  type InstantiatedBinding,
  type ReconciliationAdapter,
  type ReconciliationErrorCode,
} from "@mosoo/effect-reconciliation";

/** The API's own `package.json`: adapter packages resolve from its dependencies (docs/DESIGN.md §4 "Adapters are installable"). */
const API_PACKAGE_JSON = fileURLToPath(new URL("../../../../package.json", import.meta.url));

/** Bound (ms) of a discovery that a `lookup` task's fresh worker has to redo (the call's own bound terminates it earlier). */
const REBUILD_DISCOVERY_MS = 30_000;

/**
 * One task of the adapter worker (the piscina worker entry below; docs/DESIGN.md §4 "Adapters are
 * untrusted code"). Every task names its adapter by `source` + `options` + `tools`, so any worker of
 * the pool (a fresh one after a crash included) can build it:
 * - `bind`: load the module (`loadAdapterModule`: package names resolve from the API's
 *   dependencies), build the adapter (`instantiateBinding`: `create(options)` or discovery bounded
 *   by `timeoutMs`, validated, narrowed to `tools`) and answer its declaration, coverage and provenance;
 * - `lookup` / `planCompensation`: call it with `request` (a structured copy made by the thread
 *   boundary) and a signal aborting after `timeoutMs` (ms).
 */
export type AdapterWorkerTask =
  | { op: "bind"; source: AdapterSource; options: unknown; tools: string[] | undefined; timeoutMs: number }
  | { op: "lookup" | "planCompensation"; source: AdapterSource; options: unknown; tools: string[] | undefined; request: unknown; timeoutMs: number };

/** One log entry an adapter wrote during a call, replayed by the host on its own logger. */
interface AdapterWorkerLog {
  level: "debug" | "info" | "warn" | "error";
  fields: Record<string, unknown>;
  message: string;
}

/**
 * What the worker answers (a worker that dies answers nothing: the host sees the pool's rejection):
 * - `bound`: the (narrowed) adapter's declaration (validated again by the host), whether it plans
 *   compensations, its tool coverage and its package name / version (the host hashes the declaration itself);
 * - `refused`: `bind` failed with a `ReconciliationError` code and one line;
 * - `answered`: the call's value, as a JSON copy;
 * - `unanswerable`: the call answered a value the worker does not copy back: larger than
 *   {@link MAX_ANSWER_UNITS} (`reason` names the bound) or not JSON (`reason` says why);
 * - `threw`: the call threw or rejected (one line).
 */
export type AdapterWorkerReply =
  | { kind: "bound"; declaration: unknown; plansCompensation: boolean; coverage: unknown; packageName: unknown; packageVersion: unknown }
  | { kind: "refused"; code: ReconciliationErrorCode; message: string }
  | { kind: "answered"; value: unknown; logs: AdapterWorkerLog[] }
  | { kind: "unanswerable"; reason: string; logs: AdapterWorkerLog[] }
  | { kind: "threw"; error: string; logs: AdapterWorkerLog[] };

/** Most log entries kept per call (more are dropped). */
const MAX_LOGS_PER_CALL = 100;

const adapters = new Map<string, Promise<InstantiatedBinding>>();

function oneLine(value: unknown): string {
  let text: string;
  try {
    text = value instanceof Error ? `${value.name}: ${value.message}` : String(value);
  } catch {
    text = "unprintable thrown value";
  }
  const line = text.slice(0, 2_000).replace(/\s+/g, " ").trim(); // never copy a huge thrown string whole
  return line.length > 500 ? `${line.slice(0, 499)}…` : line;
}

function build(source: AdapterSource, options: unknown, tools: string[] | undefined, timeoutMs: number): Promise<InstantiatedBinding> {
  const key = JSON.stringify([source.module, source.export, options ?? null, tools ?? null]);
  const cached = adapters.get(key);
  if (cached) return cached;
  const built = (async () => instantiateBinding(await loadAdapterModule(source, API_PACKAGE_JSON), options, tools, AbortSignal.timeout(timeoutMs)))();
  adapters.set(key, built);
  built.catch(() => adapters.delete(key));
  return built;
}

/**
 * Largest adapter answer (in UTF-16 code units of its strings and keys, plus 8 per value) the worker
 * copies back: a result, a receipt and 64 Ki of slack. Anything larger is answered `unanswerable`
 * with the bound (the host records `invalid_adapter_output` naming it) WITHOUT serialising it: a 50 MB string answered by an
 * adapter would otherwise be copied in the worker, and an allocation that fails there can abort the
 * whole process instead of the worker (V8 out-of-memory is fatal for a large string).
 */
const MAX_ANSWER_UNITS = MAX_RESULT_BYTES + MAX_RECEIPT_BYTES + 64 * 1024;
/** Largest log-fields object copied back per log line (same measure). */
const MAX_LOG_FIELDS_UNITS = 16 * 1024;

/**
 * The size of `value` as {@link MAX_ANSWER_UNITS} measures it, walked iteratively (no recursion, so
 * depth cannot overflow the stack), stopping as soon as it passes `limit` (then returns `limit + 1`).
 */
function boundedSize(value: unknown, limit: number): number {
  let total = 0;
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const v = stack.pop();
    total += 8;
    if (typeof v === "string") total += v.length;
    else if (typeof v === "object" && v !== null) {
      if (seen.has(v)) continue; // a cycle: JSON.stringify refuses it below
      seen.add(v);
      for (const [k, child] of Object.entries(v)) {
        total += k.length;
        stack.push(child);
      }
    }
    if (total > limit) return limit + 1;
  }
  return total;
}

/**
 * A detached JSON copy of `value` (`{ok: true, value}`), or `{ok: false, reason}` when it is larger
 * than `limit` (see {@link boundedSize}; the reason names the bound) or not JSON; never throws.
 */
function tryJsonCopy(value: unknown, limit: number): { ok: true; value: unknown } | { ok: false; reason: string } {
  try {
    if (boundedSize(value, limit) > limit) return { ok: false, reason: `the answer is larger than the ${limit}-character bound on an adapter answer (a result, a receipt and 64 Ki of slack)` };
    const text = JSON.stringify(value);
    return { ok: true, value: text === undefined ? undefined : (JSON.parse(text) as unknown) };
  } catch (error) {
    return { ok: false, reason: `the answer is not JSON: ${oneLine(error)}` };
  }
}

/** {@link tryJsonCopy} for what the worker reports itself (declaration, coverage, log fields): `{notJson: why}` when it cannot be copied, which no contract accepts. */
function jsonCopy(value: unknown, limit = MAX_ANSWER_UNITS): unknown {
  const copy = tryJsonCopy(value, limit);
  return copy.ok ? copy.value : { notJson: copy.reason };
}

function bufferLogger(logs: AdapterWorkerLog[]): AdapterLogger {
  const at = (level: AdapterWorkerLog["level"]) => (fields: Record<string, unknown>, message: string) => {
    if (logs.length >= MAX_LOGS_PER_CALL) return;
    const copy = jsonCopy(fields, MAX_LOG_FIELDS_UNITS);
    logs.push({ level, fields: typeof copy === "object" && copy !== null ? (copy as Record<string, unknown>) : {}, message: oneLine(message) });
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/**
 * The piscina worker entry: runs one {@link AdapterWorkerTask}. Adapter throws and rejections are
 * answers (`threw`); only the death of the worker itself (an uncaught exception, a floating
 * rejection, `process.exit`, the heap limit, a termination on timeout) rejects the host's call.
 */
export default async function runAdapterTask(task: AdapterWorkerTask): Promise<AdapterWorkerReply> {
  if (task.op === "bind") {
    try {
      const built = await build(task.source, task.options, task.tools, task.timeoutMs);
      return {
        kind: "bound",
        declaration: jsonCopy(built.adapter.declaration),
        plansCompensation: typeof built.adapter.planCompensation === "function",
        coverage: jsonCopy(built.coverage),
        packageName: built.provenance.packageName,
        packageVersion: built.provenance.packageVersion,
      };
    } catch (error) {
      if (ReconciliationError.is(error)) return { kind: "refused", code: error.code, message: oneLine(error.message) };
      return { kind: "refused", code: "adapter.load_failed", message: oneLine(error) };
    }
  }
  const logs: AdapterWorkerLog[] = [];
  try {
    const { adapter } = await build(task.source, task.options, task.tools, REBUILD_DISCOVERY_MS);
    const context = { signal: AbortSignal.timeout(task.timeoutMs), logger: bufferLogger(logs) };
    const value =
      task.op === "lookup"
        ? await adapter.lookup(task.request as Parameters<ReconciliationAdapter["lookup"]>[0], context)
        : await adapter.planCompensation!(task.request as Parameters<NonNullable<ReconciliationAdapter["planCompensation"]>>[0], context);
    const copy = tryJsonCopy(value, MAX_ANSWER_UNITS);
    return copy.ok ? { kind: "answered", value: copy.value, logs } : { kind: "unanswerable", reason: copy.reason, logs };
  } catch (error) {
    return { kind: "threw", error: oneLine(error), logs };
  }
}
