// Says why an effect's tool gets no lookup, and logs the startup report of each bound server's covered and uncovered tools.
import type { Logger } from "pino";
import type { Store } from "../../../platform/db/store.port.js";
import { reconciliationRepository } from "../infrastructure/effect-reconciliation.repository.js";
import type { ReconciliationSettings } from "./reconciliation-settings.config.js";

/**
 * Why an effect of `serverId`/`toolName` gets no lookup, in words an operator reads in `show` and
 * the startup report (see {@link bindingReport}), or null when it is eligible:
 * - `flag off` (`MOSOO_EFFECT_RECONCILIATION=off`);
 * - `no binding for server S`;
 * - `no lookup: tool X not declared by adapter Y` (or left out by the binding's `tools`: `not covered by the binding of S`).
 */
export function noLookupReason(settings: ReconciliationSettings, serverId: string, toolName: string): string | null {
  if (!settings.enabled) return "flag off";
  const adapter = settings.bindings.get(serverId);
  if (!adapter) return `no binding for server ${serverId}`;
  if (adapter.declaration.tools.includes(toolName)) return null;
  const info = settings.boundAdapters?.get(serverId);
  if (info?.coverage.notCovered.includes(toolName))
    return `no lookup: tool ${toolName} not covered by the binding of ${serverId} (its "tools" leave it out)`;
  return `no lookup: tool ${toolName} not declared by adapter ${adapter.declaration.id}`;
}

/** One line of the startup report per bound server (log `reconciliation.binding`). */
export interface BindingReportLine {
  serverId: string;
  adapterId: string;
  adapterVersion: string;
  packageName: string | null;
  packageVersion: string | null;
  declarationHash: string | null;
  /** Tools that get lookups. */
  covered: string[];
  /** Tools without lookups: declared but left out by the binding, or seen in the store for this server but not declared. */
  notCovered: Array<{ toolName: string; reason: string }>;
}

/**
 * The startup report (docs/DESIGN.md §4: "a bound server's tool that no adapter declares is reported at
 * startup"): per bound server, the covered tools and, with a reason each, the tools that are not
 * (the adapter's tools left out by the binding, and tools of effects in the store it does not declare).
 * @param seen distinct (server, tool) pairs of the store's effects.
 */
export function bindingReport(
  settings: ReconciliationSettings,
  seen: ReadonlyArray<{ serverId: string; toolName: string }>,
): BindingReportLine[] {
  const force = { ...settings, enabled: true };
  return [...settings.bindings].map(([serverId, adapter]) => {
    const info = settings.boundAdapters?.get(serverId);
    const candidates = new Set([
      ...(info?.coverage.notCovered ?? []),
      ...seen.filter((s) => s.serverId === serverId).map((s) => s.toolName),
    ]);
    const notCovered = [...candidates]
      .filter((t) => !adapter.declaration.tools.includes(t))
      .sort()
      .map((toolName) => ({ toolName, reason: noLookupReason(force, serverId, toolName) ?? "" }));
    return {
      serverId,
      adapterId: adapter.declaration.id,
      adapterVersion: adapter.declaration.version,
      packageName: info?.provenance.packageName ?? null,
      packageVersion: info?.provenance.packageVersion ?? null,
      declarationHash: info?.provenance.declarationHash ?? null,
      covered: [...adapter.declaration.tools],
      notCovered,
    };
  });
}

/**
 * Logs one `reconciliation.binding` line per bound server at startup ({@link bindingReport}): adapter
 * id and version, package name, version and declaration hash, `covered` tools and `notCovered` ones
 * with their reason. A server with uncovered tools logs at warn.
 */
export async function reportBindings(settings: ReconciliationSettings, store: Store, logger: Logger): Promise<void> {
  const seen = await store.read((tx) => reconciliationRepository.toolsSeenOn(tx, [...settings.bindings.keys()]));
  for (const line of bindingReport(settings, seen)) {
    if (line.notCovered.length > 0) logger.warn(line, "reconciliation.binding");
    else logger.info(line, "reconciliation.binding");
  }
}
