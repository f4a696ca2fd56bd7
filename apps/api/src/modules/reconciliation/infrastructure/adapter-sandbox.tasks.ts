// The tasks an adapter's sandboxed process runs (build, lookup, planCompensation) and their replies.
import type { AdapterLogger, ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import {
  MAX_RECEIPT_BYTES,
  MAX_RESULT_BYTES,
  adapterModuleFromNamespace,
  instantiateBinding,
  ReconciliationError,
  type AdapterSource,
  type InstantiatedBinding,
  type ReconciliationErrorCode,
} from "@mosoo/effect-reconciliation/host";

/** Bound (ms) of a discovery that a `lookup` task's fresh process has to redo (the call's own bound terminates it earlier). */
const REBUILD_DISCOVERY_MS = 30_000;

/**
 * One task of an adapter's sandboxed process (see `createIsolatedAdapterHost` in adapter-sandbox.host.ts), sent
 * by the host as one JSON line. Every task names its adapter by `source` + `options` + `tools`, so
 * any process of the binding's pool (a fresh one after a kill included) can build it from the module
 * its bundle imported (see {@link runAdapterTask}):
 * - `bind`: build the adapter (`instantiateBinding`: `create(options)` or discovery bounded by
 *   `timeoutMs`, validated, narrowed to `tools`) and answer its declaration, coverage and provenance;
 * - `lookup` / `planCompensation`: call it with `request` (a JSON copy) and a signal aborting after
 *   `timeoutMs` (ms).
 */
export type AdapterWorkerTask =
  | { op: "bind"; source: AdapterSource; options: unknown; tools: string[] | undefined; timeoutMs: number }
  | {
      op: "lookup" | "planCompensation";
      source: AdapterSource;
      options: unknown;
      tools: string[] | undefined;
      request: unknown;
      timeoutMs: number;
    };

/** One log entry an adapter wrote during a call, replayed (bounded, redacted) by the host on its own logger. */
interface AdapterWorkerLog {
  level: "debug" | "info" | "warn" | "error";
  fields: Record<string, unknown>;
  message: string;
}

/**
 * What the process answers (a process that dies answers nothing: the host sees it exit):
 * - `bound`: the (narrowed) adapter's declaration (validated again by the host), whether it plans
 *   compensations, its tool coverage and its package name / version (the host hashes the declaration itself);
 * - `refused`: `bind` failed with a `ReconciliationError` code and one line;
 * - `answered`: the call's value as the JSON text the process wrote once and measured (`null` for a
 *   value JSON omits, e.g. `undefined`); the host parses it;
 * - `unanswerable`: the call answered a value the process does not copy back: larger than
 *   {@link MAX_ANSWER_UNITS} (`reason` names the bound) or not JSON (`reason` says why);
 * - `threw`: the call threw or rejected (one line).
 */
export type AdapterWorkerReply =
  | { kind: "bound"; declaration: unknown; plansCompensation: boolean; coverage: unknown; packageName: unknown; packageVersion: unknown }
  | { kind: "refused"; code: ReconciliationErrorCode; message: string }
  | { kind: "answered"; json: string | null; logs: AdapterWorkerLog[] }
  | { kind: "unanswerable"; reason: string; logs: AdapterWorkerLog[] }
  | { kind: "threw"; error: string; logs: AdapterWorkerLog[] };

/** Most log entries kept per call (more are dropped). */
export const MAX_LOGS_PER_CALL = 100;

const adapters = new Map<string, Promise<InstantiatedBinding>>();

/**
 * Longest text (characters) the process sends of a thrown error, a refusal or a log message. The host redacts the
 * binding's credentials in it first and only then flattens it to one line and cuts it (to 300 or 500 characters), so
 * the text crosses raw (line breaks kept: a credential may span lines) and longer than what the host keeps: a
 * credential cut here could no longer be recognised there.
 */
export const MAX_RAW_TEXT_CHARS = 1_000;

/** `value` as text (an error as `name: message`), at most {@link MAX_RAW_TEXT_CHARS} characters, never flattened. */
function rawText(value: unknown): string {
  let text: string;
  try {
    text = value instanceof Error ? `${value.name}: ${value.message}` : String(value);
  } catch {
    text = "unprintable thrown value";
  }
  return text.length > MAX_RAW_TEXT_CHARS ? text.slice(0, MAX_RAW_TEXT_CHARS) : text; // never copy a huge thrown string whole
}

/** The adapter module the process's bundle imported, and the package it came from. */
export interface SandboxedModule {
  namespace: Record<string, unknown>;
  packageName: string | null;
  packageVersion: string | null;
}

function build(
  module: SandboxedModule,
  source: AdapterSource,
  options: unknown,
  tools: string[] | undefined,
  timeoutMs: number,
): Promise<InstantiatedBinding> {
  const key = JSON.stringify([source.module, source.export, options ?? null, tools ?? null]);
  const cached = adapters.get(key);
  if (cached) return cached;
  const built = (async () =>
    instantiateBinding(
      adapterModuleFromNamespace(module.namespace, source, { name: module.packageName, version: module.packageVersion }),
      options,
      tools,
      AbortSignal.timeout(timeoutMs),
    ))();
  adapters.set(key, built);
  built.catch(() => adapters.delete(key));
  return built;
}

/**
 * Largest adapter answer (in UTF-16 code units of its strings and keys, plus 8 per value) the worker
 * copies back: a result, a receipt and 64 Ki of slack, measured on what is serialised (after `toJSON()`
 * and getters). Anything larger is answered `unanswerable` with the bound (the host records
 * `invalid_adapter_output` naming it) WITHOUT finishing its serialisation: a 50 MB string answered by an
 * adapter would otherwise be copied in the worker, and an allocation that fails there can abort the
 * whole process instead of the worker (V8 out-of-memory is fatal for a large string).
 */
export const MAX_ANSWER_UNITS = MAX_RESULT_BYTES + MAX_RECEIPT_BYTES + 64 * 1024;
/** Largest log-fields object copied back per log line (same measure). */
export const MAX_LOG_FIELDS_UNITS = 16 * 1024;

/** Thrown by {@link boundedStringify}'s replacer when the serialisation passes its bound. */
class OverBound extends Error {}

/**
 * `JSON.stringify(value)`, measured while it is written: a replacer adds up, in
 * the {@link MAX_ANSWER_UNITS} measure, every value AFTER `toJSON()` ran and every getter was read —
 * exactly what goes into the string — and stops the serialisation (throws {@link OverBound}) as soon
 * as the total passes `limit`, so a small object whose `toJSON()` or getter answers 40 M characters is
 * refused before that string is copied; the finished string's length is checked against `limit` too.
 * Returns the string (`undefined` for a value JSON omits); throws `OverBound`, or whatever
 * `JSON.stringify`/`toJSON()` throws (a cycle, a BigInt, a refused call).
 */
function boundedStringify(value: unknown, limit: number): string | undefined {
  let total = 0;
  const text = JSON.stringify(value, function measure(key: string, child: unknown) {
    total += 8 + key.length + (typeof child === "string" ? child.length : 0);
    if (total > limit) throw new OverBound();
    return child;
  });
  if (text !== undefined && text.length > limit) throw new OverBound();
  return text;
}

/**
 * The JSON text of `value` that crosses to the host (`{ok: true, text}`; `text` is `undefined` for a
 * value JSON omits), serialised ONCE with {@link boundedStringify}, or `{ok: false, reason}` when it
 * is larger than `limit` (the reason names the bound) or not JSON; never throws.
 */
function tryJsonText(value: unknown, limit: number): { ok: true; text: string | undefined } | { ok: false; reason: string } {
  try {
    return { ok: true, text: boundedStringify(value, limit) };
  } catch (error) {
    if (error instanceof OverBound)
      return {
        ok: false,
        reason: `the answer is larger than the ${limit}-character bound on an adapter answer (a result, a receipt and 64 Ki of slack)`,
      };
    return { ok: false, reason: `the answer is not JSON: ${rawText(error)}` };
  }
}

/** {@link tryJsonText}, parsed back in the process into a detached copy (`{ok: true, value}`); never throws. */
function tryJsonCopy(value: unknown, limit: number): { ok: true; value: unknown } | { ok: false; reason: string } {
  const copy = tryJsonText(value, limit);
  if (!copy.ok) return copy;
  return { ok: true, value: copy.text === undefined ? undefined : (JSON.parse(copy.text) as unknown) };
}

/** {@link tryJsonCopy} for what the process reports itself (declaration, coverage, log fields): `{notJson: why}` when it cannot be copied, which no contract accepts. */
function jsonCopy(value: unknown, limit = MAX_ANSWER_UNITS): unknown {
  const copy = tryJsonCopy(value, limit);
  return copy.ok ? copy.value : { notJson: copy.reason };
}

function bufferLogger(logs: AdapterWorkerLog[]): AdapterLogger {
  const at = (level: AdapterWorkerLog["level"]) => (fields: Record<string, unknown>, message: string) => {
    if (logs.length >= MAX_LOGS_PER_CALL) return;
    const copy = jsonCopy(fields, MAX_LOG_FIELDS_UNITS);
    logs.push({
      level,
      fields: typeof copy === "object" && copy !== null ? (copy as Record<string, unknown>) : {},
      message: rawText(message),
    });
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/**
 * Runs one {@link AdapterWorkerTask} against `module` (the adapter module the sandbox bundle
 * imported). Adapter throws and rejections are answers (`threw`); only the death of the process
 * itself (an uncaught exception, a floating rejection, `process.exit`, a limit, a kill on timeout)
 * leaves the host's call unanswered. Never throws.
 */
export async function runAdapterTask(module: SandboxedModule, task: AdapterWorkerTask): Promise<AdapterWorkerReply> {
  if (task.op === "bind") {
    try {
      const built = await build(module, task.source, task.options, task.tools, task.timeoutMs);
      return {
        kind: "bound",
        declaration: jsonCopy(built.adapter.declaration),
        plansCompensation: typeof built.adapter.planCompensation === "function",
        coverage: jsonCopy(built.coverage),
        packageName: built.provenance.packageName,
        packageVersion: built.provenance.packageVersion,
      };
    } catch (error) {
      if (ReconciliationError.is(error)) return { kind: "refused", code: error.code, message: rawText(error.message) };
      return { kind: "refused", code: "adapter.load_failed", message: rawText(error) };
    }
  }
  const logs: AdapterWorkerLog[] = [];
  try {
    const { adapter } = await build(module, task.source, task.options, task.tools, REBUILD_DISCOVERY_MS);
    const context = { signal: AbortSignal.timeout(task.timeoutMs), logger: bufferLogger(logs) };
    const value =
      task.op === "lookup"
        ? await adapter.lookup(task.request as Parameters<ReconciliationAdapter["lookup"]>[0], context)
        : await adapter.planCompensation!(task.request as Parameters<NonNullable<ReconciliationAdapter["planCompensation"]>>[0], context);
    // the bound applies to the very string that is posted to the host (serialised once, here)
    const copy = tryJsonText(value, MAX_ANSWER_UNITS);
    return copy.ok ? { kind: "answered", json: copy.text ?? null, logs } : { kind: "unanswerable", reason: copy.reason, logs };
  } catch (error) {
    return { kind: "threw", error: rawText(error), logs };
  }
}
