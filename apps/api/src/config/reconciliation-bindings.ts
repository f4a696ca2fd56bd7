import { dirname, resolve } from "node:path";
import { z } from "zod";
import { ServerIdSchema } from "@mosoo/contracts";
import { AdapterSourceSchema, ReconciliationError, type AdapterHost, type AdapterSource, type ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import { ConfigError, type ApiConfig } from "./api-config.js";
import { readBindingsFileText } from "./startup-checks.js";
import type { ReconciliationSettings } from "../modules/reconciliation/application/reconciliation-settings.js";
import { BUILT_IN_ADAPTER_SOURCES } from "../adapters/reconciliation/builtin-adapters.js";

/**
 * One binding: the adapter that reconciles an MCP server's effects, named EITHER by `adapterId`
 * (a built-in adapter, see `BUILT_IN_ADAPTER_SOURCES`) OR by `source` (an adapter source
 * `{module, export}`, DESIGN.md §4 "Adapters are installable": a package name, an absolute path, or a
 * path starting with `./` / `../` relative to the bindings file), plus the adapter's `options`.
 */
export const BindingSchema = z
  .strictObject({ adapterId: z.string().min(1).optional(), source: AdapterSourceSchema.optional(), options: z.unknown().optional() })
  .refine((b) => (b.adapterId === undefined) !== (b.source === undefined), "a binding names exactly one of adapterId (built-in) or source ({module, export})");

/**
 * The bindings file named by `MOSOO_RECONCILIATION_BINDINGS_FILE`: which MCP server's effects are
 * reconciled by which adapter, with that adapter's options. Example:
 * `{"bindings": {"tracker": {"adapterId": "fixture-issue-tracker", "options": {"url": "http://127.0.0.1:4000/mcp"}}}}`
 * or, for an adapter module of one's own,
 * `{"bindings": {"pay": {"source": {"module": "./adapters/pay.adapter.ts", "export": "payAdapterFactory"}, "options": {...}}}}`.
 * A server without a binding keeps the baseline fence.
 */
export const BindingsFileSchema = z.strictObject({ bindings: z.record(ServerIdSchema, BindingSchema) });
/** See {@link BindingsFileSchema}. */
export type BindingsFile = z.infer<typeof BindingsFileSchema>;

const VAR = "MOSOO_RECONCILIATION_BINDINGS_FILE";

/**
 * Reads and validates the bindings file and binds each adapter through `host` (in production the
 * isolated worker host: the adapter is built in a worker, never on the caller's thread).
 * `builtIns` maps adapter ids to their sources (default {@link BUILT_IN_ADAPTER_SOURCES}).
 * @throws ConfigError (one line naming the variable) when the file is unreadable, not a regular file,
 *   larger than 1 MiB (`readBindingsFileText`), not JSON, fails
 *   {@link BindingsFileSchema}, names an unknown adapter id, an adapter that cannot be loaded
 *   (`adapter.load_failed`), or gives it invalid options (`adapter.invalid_options`).
 */
export async function loadBindings(file: string, host: AdapterHost, builtIns: Readonly<Record<string, AdapterSource>> = BUILT_IN_ADAPTER_SOURCES): Promise<Map<string, ReconciliationAdapter>> {
  const text = readBindingsFileText(file);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config.invalid: ${VAR}: cannot read JSON from ${file}: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`);
  }
  const parsed = BindingsFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    throw new ConfigError(`config.invalid: ${VAR}: ${where}${issue?.message ?? "invalid"}`);
  }
  const bindings = new Map<string, ReconciliationAdapter>();
  for (const [serverId, binding] of Object.entries(parsed.data.bindings)) {
    try {
      bindings.set(serverId, await host.bind(sourceOf(binding, file, builtIns), binding.options));
    } catch (err) {
      const detail = err instanceof ReconciliationError ? `${err.code}: ${err.message}` : String(err);
      throw new ConfigError(`config.invalid: ${VAR}: bindings.${serverId}: ${detail.split("\n")[0]}`);
    }
  }
  return bindings;
}

function sourceOf(binding: z.infer<typeof BindingSchema>, file: string, builtIns: Readonly<Record<string, AdapterSource>>): AdapterSource {
  if (binding.source) {
    const m = binding.source.module;
    return m.startsWith("./") || m.startsWith("../") ? { module: resolve(dirname(file), m), export: binding.source.export } : binding.source;
  }
  const id = binding.adapterId!;
  const source = Object.hasOwn(builtIns, id) ? builtIns[id] : undefined;
  if (!source) throw new ReconciliationError("adapter.unknown_id", `no built-in reconciliation adapter has id "${id}"`, { details: { adapterId: id } });
  return source;
}

/**
 * Builds the runtime's reconciliation settings from the config: binds the adapters of the bindings
 * file through `host` (when a file is named; validated even with the flag off, so a typo never
 * waits until the flag is turned on).
 * @throws ConfigError as {@link loadBindings}.
 */
export async function resolveReconciliationSettings(config: ApiConfig, host: AdapterHost, builtIns?: Readonly<Record<string, AdapterSource>>): Promise<ReconciliationSettings> {
  const r = config.reconciliation;
  const bindings = r.bindingsFile ? await loadBindings(r.bindingsFile, host, builtIns) : new Map<string, ReconciliationAdapter>();
  return {
    enabled: r.enabled,
    bindings,
    lookupTimeoutMs: r.lookupTimeoutMs,
    leaseMs: r.lookupTimeoutMs + 10_000,
    concurrency: r.concurrency,
    backoff: r.backoff,
    maxLookups: r.maxLookups,
  };
}
