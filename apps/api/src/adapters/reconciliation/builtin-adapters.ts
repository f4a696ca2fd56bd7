import { createAdapterRegistry, type AdapterRegistry, type AdapterSource } from "@mosoo/effect-reconciliation";

/**
 * The adapters this API ships, by built-in id → {@link AdapterSource} (DESIGN.md §4: "Built-ins are
 * registered in code"). A bindings file names one with `"adapterId"`; it is loaded from its source
 * exactly like a package (so an isolated caller loads it the same way):
 * - `mcp-convention`: the zero-code convention adapter (`@mosoo/effect-reconciliation/mcp`).
 * Provider-specific adapters are installed as packages (e.g. `@mosoo/fixture-adapter`) and bound by `"package"`.
 */
export const BUILT_IN_ADAPTER_SOURCES: Readonly<Record<string, AdapterSource>> = Object.freeze({
  "mcp-convention": { module: "@mosoo/effect-reconciliation/mcp", export: "conventionAdapterFactory" },
});

/**
 * An empty, open registry for adapters a host registers in code (tests, embedders); a bindings
 * `adapterId` is looked up there first, then in {@link BUILT_IN_ADAPTER_SOURCES}. `startApi` closes it.
 */
export function createBuiltInAdapterRegistry(): AdapterRegistry {
  return createAdapterRegistry();
}
