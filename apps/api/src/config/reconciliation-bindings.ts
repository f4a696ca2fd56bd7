// Reads the reconciliation bindings file and binds each MCP server's adapter through the sandboxing adapter host.
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { findJsonProblem, formatJsonProblem, ServerIdSchema, ToolNameSchema } from "@mosoo/contracts";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import {
  AdapterSourceSchema,
  ReconciliationError,
  type AdapterHost,
  type AdapterSource,
  type InstantiatedBinding,
} from "@mosoo/effect-reconciliation/host";
import { BUILT_IN_ADAPTER_SOURCES } from "../modules/reconciliation/infrastructure/builtin-adapters.js";
import { ConfigError, type ApiConfig } from "./api-config.js";
import { readBindingsFileText } from "./startup-checks.js";
import {
  leaseMsFor,
  type BoundAdapterInfo,
  type ReconciliationSettings,
} from "../modules/reconciliation/application/reconciliation-settings.config.js";

/**
 * The environment an operator assigns to one binding's adapter processes (see
 * `SandboxProcess` in adapter-sandbox.process.ts), e.g. `{"TRACKER_TOKEN": "..."}`: they start with these
 * variables and no other. At most 32 names, each `^[A-Z][A-Z0-9_]{0,63}$` and not one the runtime
 * or the dynamic loader reads (`MOSOO_*`, `NODE_*`, `LD_*`, `UV_*`: `NODE_OPTIONS` could lift the
 * sandbox's limits); each value at most 8192 characters, no NUL.
 */
const BindingEnvSchema = z
  .record(
    z.string(),
    z
      .string()
      .max(8_192)
      .refine((value) => !value.includes("\0"), "an env value holds no NUL character"),
  )
  .superRefine((env, ctx) => {
    const names = Object.keys(env);
    if (names.length > 32) ctx.addIssue({ code: "custom", message: "at most 32 env names per binding" });
    for (const name of names) {
      if (!/^[A-Z][A-Z0-9_]{0,63}$/.test(name))
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: "an env name is upper-case letters, digits and _ (at most 64, starting with a letter)",
        });
      else if (/^(MOSOO_|NODE_|LD_|UV_)/.test(name))
        ctx.addIssue({ code: "custom", path: [name], message: "env names starting MOSOO_, NODE_, LD_ or UV_ are reserved" });
    }
  });

/**
 * One server's binding (see `loadAdapterModule` in adapter-loader.ts): exactly one of
 * - `adapterId`: a built-in adapter (`mcp-convention`, `mcp-tasks`, see `BUILT_IN_ADAPTER_SOURCES`), or
 * - `package`: an adapter source `{module, export}` ({@link AdapterSourceSchema}): an installed
 *   package resolved from the API's own dependencies (`pnpm --filter @mosoo/api add <package>`), an
 *   absolute path, or a path starting with `./` / `../` relative to the bindings file;
 * plus its `options` (validated by the adapter), optionally `tools`, the tools it covers
 * (each must be declared by the adapter and named once; default: every declared tool), and
 * optionally `env` ({@link BindingEnvSchema}): the whole environment of the adapter's processes.
 */
const BindingSchema = z
  .strictObject({
    adapterId: z.string().min(1).optional(),
    package: AdapterSourceSchema.optional(),
    options: z.unknown().optional(),
    env: BindingEnvSchema.optional(),
    tools: z
      .array(ToolNameSchema)
      .min(1)
      .superRefine((tools, ctx) => {
        const twice = tools.find((t, i) => tools.indexOf(t) !== i);
        if (twice !== undefined) ctx.addIssue({ code: "custom", message: `tool "${twice}" is listed twice; name each tool once` });
      })
      .optional(),
  })
  .refine(
    (b) => (b.adapterId === undefined) !== (b.package === undefined),
    "name exactly one of adapterId (a built-in) or package ({module, export})",
  );
/** See {@link BindingSchema}. */
type Binding = z.infer<typeof BindingSchema>;

/**
 * The bindings file named by `MOSOO_RECONCILIATION_BINDINGS_FILE`. Example:
 * `{"bindings": {"tracker": {"package": {"module": "@mosoo/fixture-adapter", "export": "fixtureIssueTrackerAdapterFactory"}, "options": {"url": "http://127.0.0.1:4000/mcp"}}}}`.
 * A server without a binding keeps the baseline fence.
 */
export const BindingsFileSchema = z.strictObject({ bindings: z.record(ServerIdSchema, BindingSchema) });

/** What to bind on one server: the adapter's source, its options, the optional tool list and the environment of its processes. */
interface BindingSpec {
  serverId: string;
  source: AdapterSource;
  options: unknown;
  tools: string[] | undefined;
  env: Record<string, string> | undefined;
}

/**
 * THE ISOLATION SWAP POINT (see `createIsolatedAdapterHost` in adapter-sandbox.host.ts): builds one bound adapter
 * from its source. In production (`startApi`, the operator CLI's `--db` client) it is always
 * {@link hostInstantiator} over the isolated adapter host (`createIsolatedAdapterHost`): a
 * sandboxed process with exactly `spec.env` as its environment loads `spec.source` (package names
 * resolved from the API's dependencies), instantiates it with `spec.options`, narrows it to
 * `spec.tools`, computes coverage and returns it; the adapter's `lookup`/`planCompensation` then run
 * in the binding's processes. Only tests use an in-process
 * host (`createInProcessAdapterHost` from `@mosoo/effect-reconciliation/testing`).
 * `discoveryTimeoutMs` bounds discovery (ms; the convention adapter's `tools/list`).
 * @throws ReconciliationError (`adapter.package_not_found`, `adapter.export_missing`, `adapter.load_failed`,
 *   `adapter.invalid_declaration`, `adapter.invalid_options`, `binding.tool_not_declared`).
 */
type BindingInstantiator = (spec: BindingSpec, discoveryTimeoutMs: number) => Promise<InstantiatedBinding>;

/** The {@link BindingInstantiator} of an {@link AdapterHost}: `host.bind(source, options, {tools, discoveryTimeoutMs})`. */
function hostInstantiator(host: AdapterHost): BindingInstantiator {
  return (spec, discoveryTimeoutMs) =>
    host.bind(spec.source, spec.options, {
      ...(spec.tools ? { tools: spec.tools } : {}),
      ...(spec.env ? { env: spec.env } : {}),
      discoveryTimeoutMs,
    });
}

const VAR = "MOSOO_RECONCILIATION_BINDINGS_FILE";

/**
 * How bindings are resolved: `builtIns` maps adapter ids to sources (default
 * {@link BUILT_IN_ADAPTER_SOURCES}); `discoveryTimeoutMs` bounds each adapter's discovery (ms, default 5000).
 */
export interface BindingsLoadOptions {
  builtIns?: Readonly<Record<string, AdapterSource>>;
  discoveryTimeoutMs?: number;
}

/**
 * Reads and validates the bindings file and binds each adapter through `host` (in production the
 * sandboxing host: the adapter is loaded and built in a child process, never in the caller's process).
 * @throws ConfigError (one line `config.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: ...` naming the
 *   server and the code) when the file is unreadable, not a regular file, larger than 1 MiB
 *   (`readBindingsFileText`), not JSON, holds a `__proto__`, `constructor` or `prototype` key anywhere
 *   (`findJsonProblem`, as request bodies), fails {@link BindingsFileSchema}, names an unknown built-in
 *   (`adapter.unknown_id`), a package that is not installed or fails to load
 *   (`adapter.package_not_found`), an export that is not a factory (`adapter.export_missing`), code
 *   that crashed or hung while building (`adapter.load_failed`), an invalid declaration, invalid
 *   options, or a tool the adapter does not declare (`binding.tool_not_declared`).
 */
export async function loadBindings(
  file: string,
  host: AdapterHost,
  opts: BindingsLoadOptions = {},
): Promise<Map<string, BoundAdapterInfo>> {
  const text = readBindingsFileText(file);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      `config.invalid: ${VAR}: cannot read JSON from ${file}: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`,
    );
  }
  // JSON.parse keeps a "__proto__" key, but building the record drops it without a word: refuse it
  // (and every key a request body may not carry) by the bodies' own rule.
  const problem = findJsonProblem(raw);
  if (problem) throw new ConfigError(`config.invalid: ${VAR}: ${formatJsonProblem(problem)}`);
  const parsed = BindingsFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    throw new ConfigError(`config.invalid: ${VAR}: ${where}${issue?.message ?? "invalid"}`);
  }
  const instantiate = hostInstantiator(host);
  const builtIns = opts.builtIns ?? BUILT_IN_ADAPTER_SOURCES;
  const bindings = new Map<string, BoundAdapterInfo>();
  for (const [serverId, binding] of Object.entries(parsed.data.bindings)) {
    try {
      const spec: BindingSpec = {
        serverId,
        source: sourceOf(binding, file, builtIns),
        options: binding.options,
        tools: binding.tools,
        env: binding.env,
      };
      bindings.set(serverId, { serverId, ...(await instantiate(spec, opts.discoveryTimeoutMs ?? 5_000)) });
    } catch (err) {
      const detail = ReconciliationError.is(err) ? `${err.code}: ${err.message}` : String(err);
      throw new ConfigError(`config.invalid: ${VAR}: bindings.${serverId}: ${detail.split("\n")[0]}`);
    }
  }
  return bindings;
}

function sourceOf(binding: Binding, file: string, builtIns: Readonly<Record<string, AdapterSource>>): AdapterSource {
  if (binding.package) {
    const m = binding.package.module;
    return m.startsWith("./") || m.startsWith("../")
      ? { module: resolve(dirname(file), m), export: binding.package.export }
      : binding.package;
  }
  const id = binding.adapterId!;
  const source = Object.hasOwn(builtIns, id) ? builtIns[id] : undefined;
  if (!source) {
    throw new ReconciliationError(
      "adapter.unknown_id",
      `no built-in reconciliation adapter "${id}" (built-ins: ${Object.keys(builtIns).join(", ")}); name an installed package with "package": {"module", "export"}`,
      { details: { adapterId: id } },
    );
  }
  return source;
}

/**
 * Builds the runtime's reconciliation settings from the config: binds the adapters of the bindings
 * file through `host` (when a file is named; validated even with the flag off, so a typo never
 * waits until the flag is turned on). Discovery is bounded by the lookup timeout.
 * @throws ConfigError as {@link loadBindings}.
 */
export async function resolveReconciliationSettings(
  config: ApiConfig,
  host: AdapterHost,
  opts: BindingsLoadOptions = {},
): Promise<ReconciliationSettings> {
  const r = config.reconciliation;
  const infos = r.bindingsFile
    ? await loadBindings(r.bindingsFile, host, { discoveryTimeoutMs: r.lookupTimeoutMs, ...opts })
    : new Map<string, BoundAdapterInfo>();
  const bindings = new Map<string, ReconciliationAdapter>([...infos].map(([serverId, info]) => [serverId, info.adapter]));
  return {
    enabled: r.enabled,
    bindings,
    boundAdapters: infos,
    lookupTimeoutMs: r.lookupTimeoutMs,
    leaseMs: leaseMsFor(r.lookupTimeoutMs),
    concurrency: r.concurrency,
    backoff: r.backoff,
    maxLookups: r.maxLookups,
    groupCommit: r.groupCommit,
  };
}
