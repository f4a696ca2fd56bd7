import { z } from "zod";
import { ServerIdSchema } from "@mosoo/contracts";
import { ReconciliationError, type AdapterRegistry, type ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import { ConfigError, type ApiConfig } from "./api-config.js";
import { readBindingsFileText } from "./startup-checks.js";
import type { ReconciliationSettings } from "../modules/reconciliation/application/reconciliation-settings.js";

/**
 * The bindings file named by `MOSOO_RECONCILIATION_BINDINGS_FILE`: which MCP server's effects are
 * reconciled by which registered adapter, with that adapter's options. Example:
 * `{"bindings": {"tracker": {"adapterId": "fixture-issue-tracker", "options": {"url": "http://127.0.0.1:4000/mcp"}}}}`.
 * A server without a binding keeps the baseline fence.
 */
export const BindingsFileSchema = z.strictObject({
  bindings: z.record(ServerIdSchema, z.strictObject({ adapterId: z.string().min(1), options: z.unknown().optional() })),
});
/** See {@link BindingsFileSchema}. */
export type BindingsFile = z.infer<typeof BindingsFileSchema>;

const VAR = "MOSOO_RECONCILIATION_BINDINGS_FILE";

/**
 * Reads and validates the bindings file and instantiates each bound adapter from `registry`.
 * @throws ConfigError (one line naming the variable) when the file is unreadable, not a regular file,
 *   larger than 1 MiB (`readBindingsFileText`), not JSON, fails
 *   {@link BindingsFileSchema}, names an unknown adapter, or gives it invalid options.
 */
export function loadBindings(file: string, registry: AdapterRegistry): Map<string, ReconciliationAdapter> {
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
      bindings.set(serverId, registry.instantiate(binding.adapterId, binding.options));
    } catch (err) {
      const detail = err instanceof ReconciliationError ? `${err.code}: ${err.message}` : String(err);
      throw new ConfigError(`config.invalid: ${VAR}: bindings.${serverId}: ${detail.split("\n")[0]}`);
    }
  }
  return bindings;
}

/**
 * Builds the runtime's reconciliation settings from the config: resolves the bindings (when a
 * file is named; validated even with the flag off, so a typo never waits until the flag is turned
 * on) and closes the registry for registration (the API is starting).
 * @throws ConfigError as {@link loadBindings}.
 */
export function resolveReconciliationSettings(config: ApiConfig, registry: AdapterRegistry): ReconciliationSettings {
  const r = config.reconciliation;
  const bindings = r.bindingsFile ? loadBindings(r.bindingsFile, registry) : new Map<string, ReconciliationAdapter>();
  registry.close();
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
