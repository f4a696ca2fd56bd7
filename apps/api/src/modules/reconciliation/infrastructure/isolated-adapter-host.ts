import { pathToFileURL } from "node:url";
import { Piscina } from "piscina";
import { z } from "zod";
import {
  AdapterAnswerRefusedError,
  AdapterCrashedError,
  AdapterDeclarationSchema,
  declarationHash,
  ReconciliationError,
  type AdapterBindOptions,
  type AdapterDeclaration,
  type AdapterHost,
  type AdapterLogger,
  type AdapterSource,
  type AdapterTerminationReason,
  type CompensationPlanRequest,
  type InstantiatedBinding,
  type LookupContext,
  type LookupRequest,
  type ReconciliationAdapter,
} from "@mosoo/effect-reconciliation";
import type { AdapterWorkerReply, AdapterWorkerTask } from "./adapter-worker.js";
import { entryFile } from "../../../platform/compiled-entry.js";

/**
 * The compiled worker's file name in `dist/`, content-hashed (`adapter-worker-<hash>.js`): defined by
 * `scripts/build.mjs` when it builds this bundle, undeclared under tsx and vitest. A running API thus
 * keeps starting the worker it was built with, even after a rebuild wrote another beside it.
 */
declare const MOSOO_ADAPTER_WORKER_FILE: string | undefined;

/**
 * The worker entry: compiled, `dist/adapter-worker-<hash>.js` (`adapter-worker.entry.ts`); under a loader, a
 * plain ES module that registers tsx in its own thread, then loads `adapter-worker.ts` (so
 * TypeScript adapter modules load the same under `tsx`, `node --import tsx` and vitest, whose
 * workers do not inherit a loader).
 */
const WORKER_FILE = pathToFileURL(
  entryFile(
    new URL("./adapter-worker.bootstrap.mjs", import.meta.url),
    typeof MOSOO_ADAPTER_WORKER_FILE === "string" ? MOSOO_ADAPTER_WORKER_FILE : "adapter-worker.js",
  ).path,
).href;

/** What a worker reports besides the declaration, checked before the host believes it. */
const BoundReportSchema = z.strictObject({
  coverage: z.strictObject({ covered: z.array(z.string().max(256)).max(1000), notCovered: z.array(z.string().max(256)).max(1000) }),
  packageName: z.string().max(256).nullable(),
  packageVersion: z.string().max(256).nullable(),
});

/**
 * Options of {@link createIsolatedAdapterHost}:
 * - `heapMb`: old-generation heap limit of each worker (MB; `MOSOO_ADAPTER_HEAP_MB`); a worker that
 *   reaches it is terminated (`out_of_memory`);
 * - `maxThreads`: workers per bound adapter at most (the reconciliation concurrency);
 * - `bindTimeoutMs`: bound (ms) on loading and building one adapter in `bind` (module import and
 *   `create()`/discovery; a cold worker loads tsx and the module first; the API and the operator CLI
 *   take it from `MOSOO_ADAPTER_LOAD_TIMEOUT_MS`, default 15 000); past it the worker is terminated and `bind` refuses with
 *   `adapter.load_failed` naming the adapter and the bound;
 * - `bindTimeoutSetting` (optional): the setting that sets that bound, named in the refusal (e.g. `MOSOO_ADAPTER_LOAD_TIMEOUT_MS`);
 * - `onTermination(adapterId, reason)`: called once per terminated or dead worker call (metrics);
 * - `logger`: where adapter log entries and dead idle workers are reported.
 */
export interface IsolatedAdapterHostOptions {
  heapMb: number;
  maxThreads: number;
  bindTimeoutMs: number;
  bindTimeoutSetting?: string;
  onTermination?: (adapterId: string, reason: AdapterTerminationReason) => void;
  logger: AdapterLogger;
}

/**
 * The production {@link AdapterHost} (docs/DESIGN.md §4 "Adapters are untrusted code", §5): each bound
 * adapter gets its own piscina pool of worker threads (at least one kept warm, `resourceLimits`
 * from `heapMb`, tsx loaded for TypeScript adapter modules). This is the production implementation of
 * the bindings' swap point (`BindingInstantiator`): the adapter is loaded (package names resolved
 * from the API's dependencies), built (options, discovery), narrowed to the binding's tools, and its
 * coverage and package read in the worker; the host keeps only the validated, frozen declaration,
 * the checked coverage and the provenance, whose declaration hash it computes itself. Every `lookup` and
 * `planCompensation` runs in a worker with a structured copy of the request and a signal aborting
 * after the call's bound; when the caller's signal aborts, piscina terminates the worker, so a
 * synchronous loop or a promise that never settles holds nothing. A worker that dies during a call
 * (uncaught exception, floating rejection, `process.exit`, heap limit) rejects the call with
 * `AdapterCrashedError`; an answer the worker would not copy back (over its size bound, or not
 * JSON) rejects it with `AdapterAnswerRefusedError` naming the bound; a worker that dies between calls is logged and replaced. Nothing an
 * adapter does reaches the host's process: its pools listen to every worker error.
 */
export function createIsolatedAdapterHost(opts: IsolatedAdapterHostOptions): AdapterHost {
  const pools: Piscina[] = [];
  let closed = false;

  function newPool(label: { current: string }): Piscina {
    const pool = new Piscina({
      filename: WORKER_FILE,
      execArgv: [], // nothing inherited from the host process; the bootstrap loads tsx itself
      minThreads: 1,
      maxThreads: Math.max(1, opts.maxThreads),
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: opts.heapMb, maxYoungGenerationSizeMb: Math.max(4, Math.ceil(opts.heapMb / 8)) },
    });
    // A worker that dies between calls (a throwing timer left behind) must never become an
    // unhandled 'error' event of the host's process.
    pool.on("error", (error: unknown) => {
      opts.onTermination?.(label.current, classify(error));
      opts.logger.warn({ adapterId: label.current, error: oneLine(error) }, "adapter.worker_died_idle");
    });
    pools.push(pool);
    return pool;
  }

  async function call(pool: Piscina, adapterId: string, task: AdapterWorkerTask, signal: AbortSignal): Promise<AdapterWorkerReply> {
    if (closed) throw new Error("the adapter host is closed");
    try {
      return (await pool.run(task, { signal })) as AdapterWorkerReply;
    } catch (error) {
      // Only piscina's AbortError is the bound terminating the worker. A worker that died on its own
      // (heap limit, exit, uncaught error) before the abort is a crash even if the signal has
      // aborted since: the death is what the pool reported (ERR_WORKER_OUT_OF_MEMORY for the heap limit).
      if (signal.aborted && isAbortError(error)) {
        opts.onTermination?.(adapterId, "timeout");
        throw error;
      }
      const reason = classify(error);
      opts.onTermination?.(adapterId, reason);
      throw new AdapterCrashedError(reason === "timeout" ? "crashed" : reason, `adapter worker ${reason}: ${oneLine(error)}`);
    }
  }

  return {
    async bind(source: AdapterSource, options: unknown, bindOpts: AdapterBindOptions = {}): Promise<InstantiatedBinding> {
      const label = { current: source.export };
      const pool = newPool(label);
      const fail = async (error: ReconciliationError): Promise<never> => {
        // a binding that failed keeps no worker alive
        pools.splice(pools.indexOf(pool), 1);
        await pool.destroy().catch(() => undefined);
        throw error;
      };
      const details = { module: source.module, export: source.export };
      const toolList = bindOpts.tools === undefined ? undefined : [...bindOpts.tools];
      const discoveryMs = Math.min(bindOpts.discoveryTimeoutMs ?? opts.bindTimeoutMs, opts.bindTimeoutMs);
      let reply: AdapterWorkerReply;
      const bound = AbortSignal.timeout(opts.bindTimeoutMs);
      try {
        reply = await call(pool, label.current, { op: "bind", source, options, tools: toolList, timeoutMs: discoveryMs }, bound);
      } catch (error) {
        if (bound.aborted) {
          // A module import or create() that never ends (a hang, a synchronous loop): the worker is terminated at the bound.
          const setting = opts.bindTimeoutSetting ? ` (${opts.bindTimeoutSetting})` : "";
          return fail(
            new ReconciliationError(
              "adapter.load_failed",
              `adapter ${source.module}#${source.export} did not load and build within ${opts.bindTimeoutMs} ms${setting}: its module import or create() hangs; the worker was terminated`,
              { details, cause: error },
            ),
          );
        }
        return fail(
          new ReconciliationError(
            "adapter.load_failed",
            `adapter ${source.module}#${source.export} could not be built: ${oneLine(error)}`,
            { details, cause: error },
          ),
        );
      }
      if (reply.kind === "refused") return fail(new ReconciliationError(reply.code, reply.message, { details }));
      if (reply.kind !== "bound")
        return fail(
          new ReconciliationError("adapter.load_failed", `adapter ${source.module}#${source.export}: unexpected worker reply`, { details }),
        );
      const parsed = AdapterDeclarationSchema.safeParse(reply.declaration);
      if (!parsed.success)
        return fail(
          new ReconciliationError(
            "adapter.invalid_declaration",
            `adapter ${source.module}#${source.export}: ${parsed.error.message.split("\n")[0]}`,
            { details },
          ),
        );
      const report = BoundReportSchema.safeParse({
        coverage: reply.coverage,
        packageName: reply.packageName,
        packageVersion: reply.packageVersion,
      });
      if (!report.success)
        return fail(
          new ReconciliationError(
            "adapter.load_failed",
            `adapter ${source.module}#${source.export}: the worker's binding report is malformed`,
            { details },
          ),
        );
      const declaration: AdapterDeclaration = deepFreeze(parsed.data);
      // The covered tools are exactly the (narrowed) declaration's tools; a worker that says otherwise is not believed.
      if (JSON.stringify(report.data.coverage.covered) !== JSON.stringify(declaration.tools)) {
        return fail(
          new ReconciliationError(
            "adapter.load_failed",
            `adapter ${source.module}#${source.export}: the worker's coverage disagrees with its declaration`,
            { details },
          ),
        );
      }
      label.current = declaration.id;
      const run = async (op: "lookup" | "planCompensation", request: unknown, context: LookupContext): Promise<unknown> => {
        // The caller's signal bounds the call: when it aborts, piscina terminates the worker. The
        // adapter's own signal in the worker is therefore never the bound (it never fires first).
        const timeoutMs = 2_147_483_647;
        const reply = await call(pool, declaration.id, { op, source, options, tools: toolList, request, timeoutMs }, context.signal);
        if (reply.kind === "answered" || reply.kind === "threw" || reply.kind === "unanswerable")
          for (const log of reply.logs) replay(context.logger, log);
        if (reply.kind === "threw") throw new Error(reply.error);
        // recorded as invalid_adapter_output with this reason (the size bound), not as a schema message
        if (reply.kind === "unanswerable") throw new AdapterAnswerRefusedError(reply.reason);
        if (reply.kind !== "answered") throw new Error("unexpected worker reply");
        // the JSON text the worker measured against its bound (docs/DESIGN.md §4); parsing yields plain data
        return reply.json === null ? undefined : (JSON.parse(reply.json) as unknown);
      };
      const handle: ReconciliationAdapter = {
        declaration,
        lookup: (request: LookupRequest, context: LookupContext) => run("lookup", request, context),
        ...(reply.plansCompensation
          ? { planCompensation: (request: CompensationPlanRequest, context: LookupContext) => run("planCompensation", request, context) }
          : {}),
      };
      return {
        adapter: Object.freeze(handle),
        coverage: report.data.coverage,
        provenance: {
          source: { ...source },
          packageName: report.data.packageName,
          packageVersion: report.data.packageVersion,
          declarationHash: declarationHash(declaration),
        },
      };
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.allSettled(pools.map((pool) => pool.destroy()));
    },
  };
}

/** True for piscina's `AbortError` (`name === "AbortError"`): the task was aborted by its signal, the worker terminated by the host. */
function isAbortError(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "AbortError";
}

/** How a worker ended, from the pool's rejection. */
function classify(error: unknown): AdapterTerminationReason {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === "ERR_WORKER_OUT_OF_MEMORY") return "out_of_memory";
  if (/worker exited with code/i.test(oneLine(error))) return "exited";
  return "crashed";
}

function replay(
  logger: AdapterLogger,
  log: { level: "debug" | "info" | "warn" | "error"; fields: Record<string, unknown>; message: string },
): void {
  try {
    logger[log.level](log.fields, log.message);
  } catch {
    // logging never changes an outcome
  }
}

function oneLine(value: unknown): string {
  let text: string;
  try {
    text = value instanceof Error ? value.message : String(value);
  } catch {
    text = "unprintable error";
  }
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
