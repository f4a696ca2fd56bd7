import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { ServerIdSchema, ToolNameSchema } from "@mosoo/contracts";
import {
  AdapterSourceSchema,
  declarationHash,
  instantiateBinding,
  loadAdapterModule,
  narrowAdapter,
  ReconciliationError,
  type AdapterRegistry,
  type AdapterSource,
  type InstantiatedBinding,
  type ReconciliationAdapter,
} from "@mosoo/effect-reconciliation";
import { BUILT_IN_ADAPTER_SOURCES, createBuiltInAdapterRegistry } from "../adapters/reconciliation/builtin-adapters.js";
import { ConfigError, type ApiConfig } from "./api-config.js";
import type { BoundAdapterInfo, ReconciliationSettings } from "../modules/reconciliation/application/reconciliation-settings.js";

/**
 * One server's binding (DESIGN.md §4 "Adapters are installable"): exactly one of
 * - `adapterId`: a built-in adapter (`mcp-convention`, or one a host registered in code), or
 * - `package`: an installed adapter package, `{module, export}` ({@link AdapterSourceSchema}),
 *   resolved from the API's own dependencies (`pnpm --filter @mosoo/api add <package>`);
 * plus its `options` (validated by the adapter) and optionally `tools`, the tools it covers
 * (each must be declared by the adapter; default: every declared tool).
 */
export const BindingSchema = z
  .strictObject({
    adapterId: z.string().min(1).optional(),
    package: AdapterSourceSchema.optional(),
    options: z.unknown().optional(),
    tools: z.array(ToolNameSchema).min(1).optional(),
  })
  .refine((b) => (b.adapterId === undefined) !== (b.package === undefined), "name exactly one of adapterId (a built-in) or package ({module, export})");
/** See {@link BindingSchema}. */
export type Binding = z.infer<typeof BindingSchema>;

/**
 * The bindings file named by `MOSOO_RECONCILIATION_BINDINGS_FILE`. Example:
 * `{"bindings": {"tracker": {"package": {"module": "@mosoo/fixture-adapter", "export": "fixtureIssueTrackerAdapterFactory"}, "options": {"url": "http://127.0.0.1:4000/mcp"}}}}`.
 * A server without a binding keeps the baseline fence.
 */
export const BindingsFileSchema = z.strictObject({ bindings: z.record(ServerIdSchema, BindingSchema) });
/** See {@link BindingsFileSchema}. */
export type BindingsFile = z.infer<typeof BindingsFileSchema>;

/** What to bind on one server: the adapter's source, its options and the optional tool list. */
export interface BindingSpec {
  serverId: string;
  source: AdapterSource;
  options: unknown;
  tools: string[] | undefined;
}

/**
 * THE ISOLATION SWAP POINT (DESIGN.md §4 "Adapters are untrusted code"): builds one bound adapter
 * from its source. The default, {@link instantiateInProcess}, imports the module in this process;
 * an isolated caller loads `spec.source` + `spec.options` inside its worker and returns an adapter
 * whose `lookup`/`planCompensation` post to that worker, with the declaration, coverage and
 * provenance the worker reported. `signal` bounds discovery (the convention adapter's `tools/list`).
 * @throws ReconciliationError (`adapter.package_not_found`, `adapter.export_missing`,
 *   `adapter.invalid_declaration`, `adapter.invalid_options`, `binding.tool_not_declared`).
 */
export type BindingInstantiator = (spec: BindingSpec, signal: AbortSignal) => Promise<InstantiatedBinding>;

/** The API's own `package.json`: adapter packages resolve from its dependencies. */
const API_PACKAGE_JSON = fileURLToPath(new URL("../../package.json", import.meta.url));

/** {@link BindingInstantiator} in this process: `loadAdapterModule` + `instantiateBinding`. */
export const instantiateInProcess: BindingInstantiator = async (spec, signal) =>
  instantiateBinding(await loadAdapterModule(spec.source, API_PACKAGE_JSON), spec.options, spec.tools, signal);

const VAR = "MOSOO_RECONCILIATION_BINDINGS_FILE";

/** How bindings are resolved: `registry` (adapters registered in code, looked up first) and `instantiate` (the swap point). */
export interface BindingsLoadOptions {
  registry?: AdapterRegistry;
  instantiate?: BindingInstantiator;
  /** Bound of each adapter's discovery (ms), default 5000. */
  discoveryTimeoutMs?: number;
}

/**
 * Reads and validates the bindings file and builds each bound adapter.
 * @throws ConfigError (one line `config.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: ...` naming the
 *   server and the code) when the file is unreadable, not JSON, fails {@link BindingsFileSchema},
 *   names an unknown built-in, a package that is not installed, an export that is not a factory, an
 *   invalid declaration, invalid options, or a tool the adapter does not declare.
 */
export async function loadBindings(file: string, opts: BindingsLoadOptions = {}): Promise<Map<string, BoundAdapterInfo>> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new ConfigError(`config.invalid: ${VAR}: cannot read JSON from ${file}: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`);
  }
  const parsed = BindingsFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    throw new ConfigError(`config.invalid: ${VAR}: ${where}${issue?.message ?? "invalid"}`);
  }
  const registry = opts.registry ?? createBuiltInAdapterRegistry();
  const instantiate = opts.instantiate ?? instantiateInProcess;
  const bindings = new Map<string, BoundAdapterInfo>();
  for (const [serverId, binding] of Object.entries(parsed.data.bindings)) {
    try {
      bindings.set(serverId, await bindOne(serverId, binding, registry, instantiate, opts.discoveryTimeoutMs ?? 5_000));
    } catch (err) {
      const detail = ReconciliationError.is(err) ? `${err.code}: ${err.message}` : String(err);
      throw new ConfigError(`config.invalid: ${VAR}: bindings.${serverId}: ${detail.split("\n")[0]}`);
    }
  }
  return bindings;
}

async function bindOne(serverId: string, binding: Binding, registry: AdapterRegistry, instantiate: BindingInstantiator, timeoutMs: number): Promise<BoundAdapterInfo> {
  const tools = binding.tools;
  if (binding.adapterId !== undefined && registry.list().some((d) => d.id === binding.adapterId)) {
    const narrowed = narrowAdapter(registry.instantiate(binding.adapterId, binding.options), tools);
    const source = { module: "(registered in code)", export: binding.adapterId };
    return { serverId, ...narrowed, provenance: { source, packageName: null, packageVersion: null, declarationHash: declarationHash(narrowed.adapter.declaration) } };
  }
  let source: AdapterSource;
  if (binding.package !== undefined) source = binding.package;
  else {
    const builtIn = BUILT_IN_ADAPTER_SOURCES[binding.adapterId!];
    if (!builtIn) {
      const known = [...registry.list().map((d) => d.id), ...Object.keys(BUILT_IN_ADAPTER_SOURCES)].join(", ");
      throw new ReconciliationError("adapter.unknown_id", `no built-in reconciliation adapter "${binding.adapterId}" (built-ins: ${known}); name an installed package with "package": {"module", "export"}`);
    }
    source = builtIn;
  }
  const built = await instantiate({ serverId, source, options: binding.options, tools }, AbortSignal.timeout(timeoutMs));
  return { serverId, ...built };
}

/**
 * Builds the runtime's reconciliation settings from the config: resolves the bindings (when a file
 * is named; validated even with the flag off, so a typo never waits until the flag is turned on)
 * and closes the registry for registration (the API is starting).
 * @throws ConfigError as {@link loadBindings}.
 */
export async function resolveReconciliationSettings(config: ApiConfig, opts: BindingsLoadOptions = {}): Promise<ReconciliationSettings> {
  const r = config.reconciliation;
  const infos = r.bindingsFile ? await loadBindings(r.bindingsFile, { discoveryTimeoutMs: r.lookupTimeoutMs, ...opts }) : new Map<string, BoundAdapterInfo>();
  opts.registry?.close();
  const bindings = new Map<string, ReconciliationAdapter>([...infos].map(([serverId, info]) => [serverId, info.adapter]));
  return {
    enabled: r.enabled,
    bindings,
    boundAdapters: infos,
    lookupTimeoutMs: r.lookupTimeoutMs,
    leaseMs: r.lookupTimeoutMs + 10_000,
    concurrency: r.concurrency,
    backoff: r.backoff,
    maxLookups: r.maxLookups,
  };
}
