// The production adapter host: every adapter call runs in a sandboxed child process of a per-binding pool.
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import type {
  AdapterDeclaration,
  AdapterLogger,
  CompensationPlanRequest,
  LookupContext,
  LookupRequest,
  ReconciliationAdapter,
} from "@mosoo/effect-reconciliation";
import {
  AdapterAnswerRefusedError,
  AdapterCrashedError,
  AdapterDeclarationSchema,
  declarationHash,
  RECONCILIATION_ERROR_CODES,
  ReconciliationError,
  type ReconciliationErrorCode,
  type AdapterBindOptions,
  type AdapterHost,
  type AdapterSource,
  type AdapterTerminationReason,
  type InstantiatedBinding,
} from "@mosoo/effect-reconciliation/host";
import { bundleAdapter, type AdapterBundle } from "./adapter-sandbox.bundle.js";
import { SandboxCallFailed, SandboxProcess } from "./adapter-sandbox.process.js";
import { createRedactor, hostSecrets, type Redactor } from "./adapter-sandbox.redaction.js";
import type { AdapterWorkerReply, AdapterWorkerTask } from "./adapter-sandbox.tasks.js";

/** What a process reports besides the declaration, checked before the host believes it. */
const BoundReportSchema = z.strictObject({
  coverage: z.strictObject({ covered: z.array(z.string().max(256)).max(1000), notCovered: z.array(z.string().max(256)).max(1000) }),
});

const LogSchema = z.object({ level: z.enum(["debug", "info", "warn", "error"]), fields: z.unknown(), message: z.string() });
/** A reply as the host accepts it from an untrusted process (anything else kills the process). */
const ReplySchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("bound"), declaration: z.unknown(), plansCompensation: z.boolean(), coverage: z.unknown() }),
  z.object({ kind: z.literal("refused"), code: z.string().max(64), message: z.string() }),
  z.object({ kind: z.literal("answered"), json: z.string().nullable(), logs: z.array(LogSchema).max(100) }),
  z.object({ kind: z.literal("unanswerable"), reason: z.string(), logs: z.array(LogSchema).max(100) }),
  z.object({ kind: z.literal("threw"), error: z.string(), logs: z.array(LogSchema).max(100) }),
]);

/**
 * Options of {@link createIsolatedAdapterHost}:
 * - `heapMb`: V8 old-generation heap limit of each adapter process (MB; `MOSOO_ADAPTER_HEAP_MB`);
 * - `rssLimitMb` (optional): resident-memory bound of each process (MB, default `2 × heapMb + 64`;
 *   native buffers count, the heap flag alone does not bound them): past it the process is killed (`out_of_memory`);
 * - `cpuLimitMs`: CPU time one call may use (ms; `MOSOO_ADAPTER_CPU_MS`): past it the process is killed (`cpu_limit`);
 * - `maxProcesses`: processes per bound adapter at most; `callsPerProcess` (default 1): calls one
 *   process serves at once (the API: the reconciliation concurrency spread over at most as many
 *   processes as the machine has cores; every call of a process is the same binding's);
 * - `bindTimeoutMs`: bound (ms) on bundling, starting and building one adapter in `bind` (the API
 *   and the operator CLI take it from `MOSOO_ADAPTER_LOAD_TIMEOUT_MS`, default 15 000); past it the
 *   process is killed and `bind` refuses with `adapter.load_failed` naming the adapter and the bound;
 * - `bindTimeoutSetting` (optional): the setting that sets that bound, named in the refusal;
 * - `onTermination(adapterId, reason)`: called once per killed or dead process during or between calls (metrics);
 * - `logger`: where adapter output (stdout/stderr lines, tagged `adapterId`, redacted) and dead idle processes are reported.
 */
export interface IsolatedAdapterHostOptions {
  heapMb: number;
  rssLimitMb?: number;
  cpuLimitMs: number;
  maxProcesses: number;
  callsPerProcess?: number;
  bindTimeoutMs: number;
  bindTimeoutSetting?: string;
  onTermination?: (adapterId: string, reason: AdapterTerminationReason) => void;
  logger: AdapterLogger;
}

/**
 * How a binding's `concurrency` lookups at once are spread over processes: at most as many
 * processes as the machine runs in parallel (`os.availableParallelism()`), each serving its share
 * (`maxProcesses`, `callsPerProcess`; both at least 1).
 */
export function adapterProcessBudget(concurrency: number): { maxProcesses: number; callsPerProcess: number } {
  const maxProcesses = Math.max(1, Math.min(concurrency, availableParallelism()));
  return { maxProcesses, callsPerProcess: Math.max(1, Math.ceil(concurrency / maxProcesses)) };
}

/**
 * The production {@link AdapterHost} (docs/DESIGN.md §4 "Adapters are untrusted code", "The sandbox
 * is the operating system's"; §5). `bind` bundles the adapter module with the child program
 * (`bundleAdapter`: bundling reads only the adapter's package and the dependencies it declares) and
 * gives the binding a pool of child processes (`SandboxProcess`): each starts with exactly the
 * binding's `env` (nothing of the API's environment), under Node's permission model (reads of its
 * bundle only; no writes, child processes, workers or addons),
 * with a heap limit, a resident-memory bound and a CPU-time bound per call, and stdio held by the
 * host. The host keeps only the validated, frozen declaration, the checked coverage and the
 * provenance (the package read before bundling, the declaration hash computed here). Every `lookup`
 * and `planCompensation` runs in one process of the pool with a JSON copy of the request; when the
 * caller's signal aborts the process is killed (SIGKILL), so a loop or a promise that never settles
 * holds nothing. A process that dies or is killed past a limit during a call rejects it with
 * `AdapterCrashedError` (`crashed`, `exited`, `out_of_memory`, `cpu_limit`); an answer the process
 * would not copy back (over its bound, not JSON) rejects it with `AdapterAnswerRefusedError`. Every
 * reply is validated here before use; a process that breaks the protocol is killed.
 *
 * The processes of a binding are shared, several calls each ({@link ProcessPool}); that is why no
 * pool library is used: resource pools (tarn, generic-pool) lend a resource to one borrower at a
 * time (one process per concurrent lookup: 64 processes of ~50 MB for the default concurrency, and
 * a recovery ~20× slower than the in-process bench on two cores, measured), and the process pools do not fit a hostile child:
 * piscina runs threads, tinypool pipes a child's stdout into the parent's, and workerpool ends a
 * process with SIGTERM, which adapter code can ignore.
 */
export function createIsolatedAdapterHost(opts: IsolatedAdapterHostOptions): AdapterHost {
  const pools: ProcessPool[] = [];
  const dir = mkdtempSync(join(tmpdir(), "mosoo-adapters-"));
  const ownSecrets = hostSecrets();
  let bundles = 0;
  let closed = false;

  function newPool(label: { current: string }, bundle: AdapterBundle, env: Readonly<Record<string, string>>, redactor: Redactor) {
    const pool = new ProcessPool(
      () =>
        new SandboxProcess({
          bundleFile: bundle.file,
          readable: bundle.readable,
          env,
          packageInfo: { name: bundle.packageName, version: bundle.packageVersion },
          heapMb: opts.heapMb,
          rssLimitBytes: (opts.rssLimitMb ?? 2 * opts.heapMb + 64) * 1024 * 1024,
          cpuLimitMs: opts.cpuLimitMs,
          onOutput: (stream, line) => opts.logger.warn({ adapterId: label.current, stream, line: redactor.text(line) }, "adapter.output"),
          onIdleDeath: (reason) => {
            opts.onTermination?.(label.current, reason);
            opts.logger.warn({ adapterId: label.current, reason }, "adapter.worker_died_idle");
          },
        }),
      Math.max(1, opts.maxProcesses),
      Math.max(1, opts.callsPerProcess ?? 1),
    );
    pools.push(pool);
    return pool;
  }

  async function call(pool: ProcessPool, adapterId: string, task: AdapterWorkerTask, signal: AbortSignal, cpuLimitMs?: number) {
    if (closed) throw new Error("the adapter host is closed");
    const child = pool.pick();
    try {
      const raw = await child.call(task, signal, cpuLimitMs);
      const reply = ReplySchema.safeParse(raw);
      if (!reply.success) {
        child.kill("crashed");
        opts.onTermination?.(adapterId, "crashed");
        throw new AdapterCrashedError("crashed", "adapter process crashed: it broke the host's protocol");
      }
      return reply.data as AdapterWorkerReply;
    } catch (error) {
      if (!(error instanceof SandboxCallFailed)) throw error;
      opts.onTermination?.(adapterId, error.reason);
      // the call's bound killed the process: the caller's signal decides (lookup_timeout)
      if (error.reason === "timeout") throw Object.assign(new Error("the adapter call was aborted"), { name: "AbortError" });
      throw new AdapterCrashedError(error.reason, error.message);
    }
  }

  return {
    async bind(source: AdapterSource, options: unknown, bindOpts: AdapterBindOptions = {}): Promise<InstantiatedBinding> {
      if (closed) throw new Error("the adapter host is closed");
      const details = { module: source.module, export: source.export };
      const label = { current: source.export };
      const env = { ...(bindOpts.env ?? {}) };
      const redactor = createRedactor([...ownSecrets, ...Object.values(env)]);
      const bundle = await bundleAdapter(source, dir, `adapter-${++bundles}`);
      const pool = newPool(label, bundle, env, redactor);
      const fail = async (error: ReconciliationError): Promise<never> => {
        // a binding that failed keeps no process alive
        pools.splice(pools.indexOf(pool), 1);
        pool.killAll();
        throw error;
      };
      const toolList = bindOpts.tools === undefined ? undefined : [...bindOpts.tools];
      const discoveryMs = Math.min(bindOpts.discoveryTimeoutMs ?? opts.bindTimeoutMs, opts.bindTimeoutMs);
      const bound = AbortSignal.timeout(opts.bindTimeoutMs);
      let reply: AdapterWorkerReply;
      try {
        // building may take CPU up to the bind bound (a module's import, discovery); the wall bound decides
        reply = await call(
          pool,
          label.current,
          { op: "bind", source, options, tools: toolList, timeoutMs: discoveryMs },
          bound,
          opts.bindTimeoutMs,
        );
      } catch (error) {
        const setting = opts.bindTimeoutSetting ? ` (${opts.bindTimeoutSetting})` : "";
        return fail(
          new ReconciliationError(
            "adapter.load_failed",
            bound.aborted || (error as { reason?: unknown }).reason === "cpu_limit"
              ? `adapter ${source.module}#${source.export} did not load and build within ${opts.bindTimeoutMs} ms${setting}: its module import or create() hangs; the process was killed`
              : `adapter ${source.module}#${source.export} could not be built: ${oneLine(error)}`,
            { details, cause: error },
          ),
        );
      }
      if (reply.kind === "refused") {
        const code = (RECONCILIATION_ERROR_CODES as readonly string[]).includes(reply.code)
          ? (reply.code as ReconciliationErrorCode)
          : "adapter.load_failed";
        return fail(new ReconciliationError(code, redactor.text(oneLine(reply.message)), { details }));
      }
      if (reply.kind !== "bound")
        return fail(
          new ReconciliationError("adapter.load_failed", `adapter ${source.module}#${source.export}: unexpected reply`, { details }),
        );
      const parsed = AdapterDeclarationSchema.safeParse(reply.declaration);
      if (!parsed.success)
        return fail(
          new ReconciliationError(
            "adapter.invalid_declaration",
            `adapter ${source.module}#${source.export}: ${parsed.error.message.split("\n")[0]}`,
            {
              details,
            },
          ),
        );
      const report = BoundReportSchema.safeParse({ coverage: reply.coverage });
      const declaration: AdapterDeclaration = deepFreeze(parsed.data);
      // The covered tools are exactly the (narrowed) declaration's tools; a process that says otherwise is not believed.
      if (!report.success || JSON.stringify(report.data.coverage.covered) !== JSON.stringify(declaration.tools))
        return fail(
          new ReconciliationError("adapter.load_failed", `adapter ${source.module}#${source.export}: the binding report is malformed`, {
            details,
          }),
        );
      label.current = declaration.id;
      const run = async (op: "lookup" | "planCompensation", request: unknown, context: LookupContext): Promise<unknown> => {
        // The caller's signal bounds the call (the process is killed when it aborts); the adapter's own signal never fires first.
        const timeoutMs = 2_147_483_647;
        const reply = await call(pool, declaration.id, { op, source, options, tools: toolList, request, timeoutMs }, context.signal);
        if (reply.kind === "answered" || reply.kind === "threw" || reply.kind === "unanswerable")
          for (const log of reply.logs) replay(context.logger, log, redactor);
        if (reply.kind === "threw") throw new Error(redactor.text(oneLine(reply.error)));
        // recorded as invalid_adapter_output with this reason (the size bound), not as a schema message
        if (reply.kind === "unanswerable") throw new AdapterAnswerRefusedError(redactor.text(oneLine(reply.reason)));
        if (reply.kind !== "answered") throw new Error("unexpected reply from the adapter process");
        try {
          return reply.json === null ? undefined : (JSON.parse(reply.json) as unknown);
        } catch {
          throw new AdapterAnswerRefusedError("the answer is not JSON");
        }
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
          packageName: bundle.packageName,
          packageVersion: bundle.packageVersion,
          declarationHash: declarationHash(declaration),
        },
      };
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      // calls in flight reject (adapter_crashed)
      for (const pool of pools) pool.killAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Replays one adapter log entry on `logger`, bounded and redacted; logging never changes an outcome. */
function replay(logger: AdapterLogger, log: z.infer<typeof LogSchema>, redactor: Redactor): void {
  try {
    logger[log.level](redactor.fields(log.fields), redactor.text(log.message));
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
  const line = text.slice(0, 2_000).replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * The processes of one binding: at most `max`, each serving up to `perProcess` calls at once.
 * `pick()` answers the least-loaded live process, starting a new one (with `spawn`) while all are at
 * capacity and fewer than `max` run; dead processes are dropped as they are found. `killAll()` kills
 * every process (their calls in flight reject).
 */
class ProcessPool {
  private readonly processes: SandboxProcess[] = [];
  constructor(
    private readonly spawn: () => SandboxProcess,
    private readonly max: number,
    private readonly perProcess: number,
  ) {}

  pick(): SandboxProcess {
    for (let i = this.processes.length - 1; i >= 0; i--) if (this.processes[i]!.dead) this.processes.splice(i, 1);
    let best: SandboxProcess | undefined;
    for (const p of this.processes) if (best === undefined || p.load < best.load) best = p;
    if (best !== undefined && (best.load < this.perProcess || this.processes.length >= this.max)) return best;
    const fresh = this.spawn();
    this.processes.push(fresh);
    return fresh;
  }

  killAll(): void {
    for (const p of this.processes.splice(0)) p.kill("exited");
  }
}
