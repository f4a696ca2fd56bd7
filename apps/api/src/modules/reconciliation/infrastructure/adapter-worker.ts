import { isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";
import {
  createAdapterRegistry,
  ReconciliationError,
  type AdapterLogger,
  type AdapterSource,
  type ReconciliationAdapter,
  type ReconciliationErrorCode,
} from "@mosoo/effect-reconciliation";

/**
 * One task of the adapter worker (the piscina worker entry below; DESIGN.md §4 "Adapters are
 * untrusted code"). Every task names its adapter by `source` + `options`, so any worker of the pool
 * (a fresh one after a crash included) can build it:
 * - `bind`: build the adapter (`create(options)`, validated as `AdapterRegistry.instantiate`) and
 *   answer its declaration;
 * - `lookup` / `planCompensation`: call it with `request` (a structured copy made by the thread
 *   boundary) and a signal aborting after `timeoutMs` (ms).
 */
export type AdapterWorkerTask =
  | { op: "bind"; source: AdapterSource; options: unknown }
  | { op: "lookup" | "planCompensation"; source: AdapterSource; options: unknown; request: unknown; timeoutMs: number };

/** One log entry an adapter wrote during a call, replayed by the host on its own logger. */
export interface AdapterWorkerLog {
  level: "debug" | "info" | "warn" | "error";
  fields: Record<string, unknown>;
  message: string;
}

/**
 * What the worker answers (a worker that dies answers nothing: the host sees the pool's rejection):
 * - `bound`: the adapter's declaration (validated again by the host) and whether it plans compensations;
 * - `refused`: `bind` failed with a `ReconciliationError` code and one line;
 * - `answered`: the call's value, as a JSON copy (a value JSON cannot carry answers
 *   `{notJson: message}`, which no contract accepts);
 * - `threw`: the call threw or rejected (one line).
 */
export type AdapterWorkerReply =
  | { kind: "bound"; declaration: unknown; plansCompensation: boolean }
  | { kind: "refused"; code: ReconciliationErrorCode; message: string }
  | { kind: "answered"; value: unknown; logs: AdapterWorkerLog[] }
  | { kind: "threw"; error: string; logs: AdapterWorkerLog[] };

/** Most log entries kept per call (more are dropped). */
const MAX_LOGS_PER_CALL = 100;

const adapters = new Map<string, ReconciliationAdapter>();

function oneLine(value: unknown): string {
  let text: string;
  try {
    text = value instanceof Error ? `${value.name}: ${value.message}` : String(value);
  } catch {
    text = "unprintable thrown value";
  }
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 500 ? `${line.slice(0, 499)}…` : line;
}

function specifierOf(module: string): string {
  return isAbsolute(module) ? pathToFileURL(module).href : module;
}

async function build(source: AdapterSource, options: unknown): Promise<ReconciliationAdapter> {
  const key = JSON.stringify([source.module, source.export, options ?? null]);
  const cached = adapters.get(key);
  if (cached) return cached;
  let factory: unknown;
  try {
    const mod = (await import(specifierOf(source.module))) as Record<string, unknown>;
    factory = mod[source.export];
  } catch (error) {
    throw new ReconciliationError("adapter.load_failed", `cannot load adapter module ${source.module}: ${oneLine(error)}`, { details: { ...source } });
  }
  if (typeof factory !== "object" || factory === null) {
    throw new ReconciliationError("adapter.load_failed", `adapter module ${source.module} has no factory export "${source.export}"`, { details: { ...source } });
  }
  const registry = createAdapterRegistry();
  const declaration = registry.register(factory as Parameters<typeof registry.register>[0]);
  const adapter = registry.instantiate(declaration.id, options);
  adapters.set(key, adapter);
  return adapter;
}

function jsonCopy(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : (JSON.parse(text) as unknown);
  } catch (error) {
    return { notJson: oneLine(error) };
  }
}

function bufferLogger(logs: AdapterWorkerLog[]): AdapterLogger {
  const at = (level: AdapterWorkerLog["level"]) => (fields: Record<string, unknown>, message: string) => {
    if (logs.length >= MAX_LOGS_PER_CALL) return;
    const copy = jsonCopy(fields);
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
      const adapter = await build(task.source, task.options);
      return { kind: "bound", declaration: jsonCopy(adapter.declaration), plansCompensation: typeof adapter.planCompensation === "function" };
    } catch (error) {
      if (ReconciliationError.is(error)) return { kind: "refused", code: error.code, message: oneLine(error.message) };
      return { kind: "refused", code: "adapter.load_failed", message: oneLine(error) };
    }
  }
  const logs: AdapterWorkerLog[] = [];
  try {
    const adapter = await build(task.source, task.options);
    const context = { signal: AbortSignal.timeout(task.timeoutMs), logger: bufferLogger(logs) };
    const value =
      task.op === "lookup"
        ? await adapter.lookup(task.request as Parameters<ReconciliationAdapter["lookup"]>[0], context)
        : await adapter.planCompensation!(task.request as Parameters<NonNullable<ReconciliationAdapter["planCompensation"]>>[0], context);
    return { kind: "answered", value: jsonCopy(value), logs };
  } catch (error) {
    return { kind: "threw", error: oneLine(error), logs };
  }
}
