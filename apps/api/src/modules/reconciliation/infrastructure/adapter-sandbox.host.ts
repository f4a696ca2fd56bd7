// The production adapter host: every adapter call runs in a sandboxed child process of a per-binding pool.
import { rmSync } from "node:fs";
import { availableParallelism } from "node:os";
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
import { makeBundleFolder, removeStaleBundleFolders, type BundleFolder } from "./adapter-sandbox.folder.js";
import { SandboxCallFailed, SandboxProcess } from "./adapter-sandbox.process.js";
import { createRedactor, hostSecrets, type Redactor } from "./adapter-sandbox.redaction.js";
import { ProcessPool } from "./adapter-sandbox.pool.js";
import { BoundReportSchema, deepFreeze, oneLine, replay, ReplySchema } from "./adapter-sandbox.replies.js";
import type { AdapterWorkerReply, AdapterWorkerTask } from "./adapter-sandbox.tasks.js";

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
 * The bundles go to a folder this process holds a lock on (`makeBundleFolder`, made by the first `bind`), removed
 * by `close()`; creating a host first removes the folders whose owner died without `close()`
 * (`removeStaleBundleFolders`, logged as `adapter_host.stale_bundles_removed`).
 *
 * The processes of a binding are shared, several calls each ({@link ProcessPool}); that is why no
 * pool library is used: resource pools (tarn, generic-pool) lend a resource to one borrower at a
 * time (one process per concurrent lookup: 64 processes of ~50 MB for the default concurrency, and
 * a recovery ~20× slower than the in-process bench on two cores, measured), and the process pools do not fit a hostile child:
 * piscina runs threads, tinypool pipes a child's stdout into the parent's, and workerpool ends a
 * process with SIGTERM, which adapter code can ignore.
 */
export function createIsolatedAdapterHost(opts: IsolatedAdapterHostOptions): AdapterHost {
  const stale = removeStaleBundleFolders();
  if (stale.length > 0) opts.logger.info({ folders: stale }, "adapter_host.stale_bundles_removed");
  const h: HostState = { opts, pools: [], folder: undefined, ownSecrets: hostSecrets(), bundles: 0, closed: false };
  return {
    bind: (source: AdapterSource, options: unknown, bindOpts: AdapterBindOptions = {}) => bindAdapter(h, source, options, bindOpts),
    close: async () => closeHost(h),
  };
}

/** The state of one {@link createIsolatedAdapterHost}: its options, every binding's pool, the bundles' folder, the host's own secrets (redacted from adapter output). */
interface HostState {
  readonly opts: IsolatedAdapterHostOptions;
  readonly pools: ProcessPool[];
  /** The temporary folder the adapters are bundled into, with its owner lock: made by the first `bind` ({@link bundleFolder}), released and removed on close. */
  folder: BundleFolder | undefined;
  readonly ownSecrets: string[];
  /** Bundles made so far (names each bundle file). */
  bundles: number;
  closed: boolean;
}

/** One binding being built: what `bind` was given, the name adapter output is tagged with (`label`), its redactor, bundle and pool. */
interface Binding {
  readonly source: AdapterSource;
  readonly options: unknown;
  /** The adapter's module and export, the details of every refusal. */
  readonly details: { module: string; export: string };
  /** The export name until the declaration is checked, then the declaration's id. */
  readonly label: { current: string };
  readonly redactor: Redactor;
  readonly bundle: AdapterBundle;
  readonly pool: ProcessPool;
  /** The tools the binding narrows the adapter to (undefined: all it declares). */
  readonly toolList: string[] | undefined;
}

/**
 * A binding's pool of sandboxed processes (at most `maxProcesses`, `callsPerProcess` calls each), every
 * process started with exactly `env`; its output lines and idle deaths are logged (redacted, tagged
 * with `label.current`). The pool is registered on the host so `close()` kills it.
 */
function newPool(
  h: HostState,
  label: { current: string },
  bundle: AdapterBundle,
  env: Readonly<Record<string, string>>,
  redactor: Redactor,
) {
  const { opts } = h;
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
  h.pools.push(pool);
  return pool;
}

/**
 * Runs `task` in a process of `pool` (bounded by `signal` and, if given, `cpuLimitMs`) and validates the reply.
 * @throws AdapterCrashedError when the reply breaks the protocol (the process is killed, `crashed`) or the process
 *   died or was killed past a limit; an `AbortError` when the call's bound killed it (the caller's signal decides);
 *   `Error` when the host is closed. Every killed process is reported to `onTermination`.
 */
async function callProcess(
  h: HostState,
  pool: ProcessPool,
  adapterId: string,
  task: AdapterWorkerTask,
  signal: AbortSignal,
  cpuLimitMs?: number,
): Promise<AdapterWorkerReply> {
  if (h.closed) throw new Error("the adapter host is closed");
  const child = pool.pick();
  try {
    const raw = await child.call(task, signal, cpuLimitMs);
    const reply = ReplySchema.safeParse(raw);
    if (!reply.success) {
      child.kill("crashed");
      h.opts.onTermination?.(adapterId, "crashed");
      throw new AdapterCrashedError("crashed", "adapter process crashed: it broke the host's protocol");
    }
    return reply.data as AdapterWorkerReply;
  } catch (error) {
    if (!(error instanceof SandboxCallFailed)) throw error;
    h.opts.onTermination?.(adapterId, error.reason);
    // the call's bound killed the process: the caller's signal decides (lookup_timeout)
    if (error.reason === "timeout") throw Object.assign(new Error("the adapter call was aborted"), { name: "AbortError" });
    throw new AdapterCrashedError(error.reason, error.message);
  }
}

/** A binding that failed keeps no process alive: drops and kills its pool, then throws `error`. */
function failBinding(h: HostState, b: Binding, error: ReconciliationError): never {
  h.pools.splice(h.pools.indexOf(b.pool), 1);
  b.pool.killAll();
  throw error;
}

/**
 * The host's `bind` (see {@link createIsolatedAdapterHost}): bundles the adapter, builds it in a process of a new pool,
 * checks what the process reports, and answers the binding with a handle whose calls run in that pool.
 * @throws ReconciliationError `adapter.load_failed` (bundle, build, bound, malformed report), `adapter.invalid_declaration`,
 *   or the code the adapter refused with; `Error` when the host is closed.
 */
async function bindAdapter(
  h: HostState,
  source: AdapterSource,
  options: unknown,
  bindOpts: AdapterBindOptions,
): Promise<InstantiatedBinding> {
  if (h.closed) throw new Error("the adapter host is closed");
  const label = { current: source.export };
  const env = { ...(bindOpts.env ?? {}) };
  const redactor = createRedactor([...h.ownSecrets, ...Object.values(env)]);
  const bundle = await bundleAdapter(source, bundleFolder(h), `adapter-${++h.bundles}`);
  const b: Binding = {
    source,
    options,
    details: { module: source.module, export: source.export },
    label,
    redactor,
    bundle,
    pool: newPool(h, label, bundle, env, redactor),
    toolList: bindOpts.tools === undefined ? undefined : [...bindOpts.tools],
  };
  const reply = await buildInProcess(h, b, bindOpts);
  const { declaration, coverage, plansCompensation } = checkBoundReply(h, b, reply);
  label.current = declaration.id;
  return {
    adapter: Object.freeze(adapterHandle(h, b, declaration, plansCompensation)),
    coverage,
    provenance: {
      source: { ...source },
      packageName: bundle.packageName,
      packageVersion: bundle.packageVersion,
      declarationHash: declarationHash(declaration),
    },
  };
}

/**
 * Step 1 of {@link bindAdapter}: builds the adapter in a process of the binding's pool within `bindTimeoutMs` (wall and CPU;
 * its discovery within `discoveryTimeoutMs`, at most that bound).
 * @throws ReconciliationError `adapter.load_failed` (the binding's pool killed): past the bound (naming it and its
 *   setting), or the process failed.
 */
async function buildInProcess(h: HostState, b: Binding, bindOpts: AdapterBindOptions): Promise<AdapterWorkerReply> {
  const { opts } = h;
  const { source } = b;
  const discoveryMs = Math.min(bindOpts.discoveryTimeoutMs ?? opts.bindTimeoutMs, opts.bindTimeoutMs);
  const bound = AbortSignal.timeout(opts.bindTimeoutMs);
  try {
    // building may take CPU up to the bind bound (a module's import, discovery); the wall bound decides
    return await callProcess(
      h,
      b.pool,
      b.label.current,
      { op: "bind", source, options: b.options, tools: b.toolList, timeoutMs: discoveryMs },
      bound,
      opts.bindTimeoutMs,
    );
  } catch (error) {
    const setting = opts.bindTimeoutSetting ? ` (${opts.bindTimeoutSetting})` : "";
    return failBinding(
      h,
      b,
      new ReconciliationError(
        "adapter.load_failed",
        bound.aborted || (error as { reason?: unknown }).reason === "cpu_limit"
          ? `adapter ${source.module}#${source.export} did not load and build within ${opts.bindTimeoutMs} ms${setting}: its module import or create() hangs; the process was killed`
          : `adapter ${source.module}#${source.export} could not be built: ${oneLine(error)}`,
        { details: b.details, cause: error },
      ),
    );
  }
}

/**
 * Step 2 of {@link bindAdapter}: believes the build's reply only once checked: a refusal keeps the adapter's code when it
 * is a reconciliation code (else `adapter.load_failed`); the declaration must pass `AdapterDeclarationSchema` (it is
 * frozen); the covered tools must be exactly the declaration's tools. Any failure kills the binding's pool.
 * @throws ReconciliationError as above, `adapter.invalid_declaration`, or `adapter.load_failed` (unexpected reply, malformed report).
 */
function checkBoundReply(
  h: HostState,
  b: Binding,
  reply: AdapterWorkerReply,
): { declaration: AdapterDeclaration; coverage: InstantiatedBinding["coverage"]; plansCompensation: boolean } {
  const { source, details } = b;
  if (reply.kind === "refused") {
    const code = (RECONCILIATION_ERROR_CODES as readonly string[]).includes(reply.code)
      ? (reply.code as ReconciliationErrorCode)
      : "adapter.load_failed";
    return failBinding(h, b, new ReconciliationError(code, oneLine(b.redactor.text(reply.message)), { details }));
  }
  if (reply.kind !== "bound")
    return failBinding(
      h,
      b,
      new ReconciliationError("adapter.load_failed", `adapter ${source.module}#${source.export}: unexpected reply`, { details }),
    );
  const parsed = AdapterDeclarationSchema.safeParse(reply.declaration);
  if (!parsed.success)
    return failBinding(
      h,
      b,
      new ReconciliationError(
        "adapter.invalid_declaration",
        `adapter ${source.module}#${source.export}: ${parsed.error.message.split("\n")[0]}`,
        { details },
      ),
    );
  const report = BoundReportSchema.safeParse({ coverage: reply.coverage });
  const declaration: AdapterDeclaration = deepFreeze(parsed.data);
  // The covered tools are exactly the (narrowed) declaration's tools; a process that says otherwise is not believed.
  if (!report.success || JSON.stringify(report.data.coverage.covered) !== JSON.stringify(declaration.tools))
    return failBinding(
      h,
      b,
      new ReconciliationError("adapter.load_failed", `adapter ${source.module}#${source.export}: the binding report is malformed`, {
        details,
      }),
    );
  return { declaration, coverage: report.data.coverage, plansCompensation: reply.plansCompensation };
}

/** Step 3 of {@link bindAdapter}: the adapter handle the host answers: the checked declaration, and `lookup` (and `planCompensation` when the adapter plans one) run through {@link runInPool}. */
function adapterHandle(h: HostState, b: Binding, declaration: AdapterDeclaration, plansCompensation: boolean): ReconciliationAdapter {
  return {
    declaration,
    lookup: (request: LookupRequest, context: LookupContext) => runInPool(h, b, declaration, "lookup", request, context),
    ...(plansCompensation
      ? {
          planCompensation: (request: CompensationPlanRequest, context: LookupContext) =>
            runInPool(h, b, declaration, "planCompensation", request, context),
        }
      : {}),
  };
}

/**
 * One `lookup` or `planCompensation` in a process of the binding's pool, bounded by the caller's signal (the process is
 * killed when it aborts): replays the adapter's logs (redacted) and answers its JSON answer.
 * @throws Error the adapter's own error (one line, redacted); AdapterAnswerRefusedError for an answer the process
 *   would not copy back, or one that is not JSON; and what {@link callProcess} throws.
 */
async function runInPool(
  h: HostState,
  b: Binding,
  declaration: AdapterDeclaration,
  op: "lookup" | "planCompensation",
  request: unknown,
  context: LookupContext,
): Promise<unknown> {
  const { redactor } = b;
  // The caller's signal bounds the call (the process is killed when it aborts); the adapter's own signal never fires first.
  const timeoutMs = 2_147_483_647;
  const task: AdapterWorkerTask = { op, source: b.source, options: b.options, tools: b.toolList, request, timeoutMs };
  const reply = await callProcess(h, b.pool, declaration.id, task, context.signal);
  if (reply.kind === "answered" || reply.kind === "threw" || reply.kind === "unanswerable")
    for (const log of reply.logs) replay(context.logger, log, redactor);
  if (reply.kind === "threw") throw new Error(oneLine(redactor.text(reply.error)));
  // recorded as invalid_adapter_output with this reason (the size bound), not as a schema message
  if (reply.kind === "unanswerable") throw new AdapterAnswerRefusedError(oneLine(redactor.text(reply.reason)));
  if (reply.kind !== "answered") throw new Error("unexpected reply from the adapter process");
  try {
    return reply.json === null ? undefined : (JSON.parse(reply.json) as unknown);
  } catch {
    throw new AdapterAnswerRefusedError("the answer is not JSON");
  }
}

/**
 * The path of the host's bundle folder, made (and locked) on first use, so a host that binds nothing makes none.
 * @throws ReconciliationError `adapter.load_failed` when the folder cannot be made in the OS temp folder (its error named).
 */
function bundleFolder(h: HostState): string {
  try {
    if (!h.folder) {
      h.folder = makeBundleFolder();
      if (h.folder.unlocked !== null)
        h.opts.logger.warn(
          { folder: h.folder.path, error: h.folder.unlocked, consequence: "a crash leaves this folder for removal by hand" },
          "adapter_host.bundle_folder_unlocked",
        );
    }
  } catch (err) {
    throw new ReconciliationError("adapter.load_failed", `cannot make the adapters' bundle folder: ${oneLine(err)}`);
  }
  return h.folder.path;
}

/** The host's `close()`: once; kills every pool (calls in flight reject `adapter_crashed`) and removes the bundles' folder. */
function closeHost(h: HostState): void {
  if (h.closed) return;
  h.closed = true;
  // calls in flight reject (adapter_crashed)
  for (const pool of h.pools) pool.killAll();
  if (h.folder) {
    h.folder.release();
    rmSync(h.folder.path, { recursive: true, force: true });
  }
}
