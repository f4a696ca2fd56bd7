// The reconciliation adapters the API ships, by built-in id, for a bindings file to name.
import { MCP_TASKS_ADAPTER_ID, type AdapterSource } from "@mosoo/effect-reconciliation/host";

/**
 * The adapters this API ships, by built-in id → {@link AdapterSource} (built-ins are
 * registered in code). A bindings file names one with `"adapterId"`; it is loaded from its source
 * exactly like a package, in the isolated adapter host's workers, never on the API's main thread:
 * - `mcp-convention`: the zero-code convention adapter (`@mosoo/effect-reconciliation/host`);
 * - `mcp-tasks`: the task-handle reconciler, which settles an effect from the provider's MCP task by its
 *   stored task id (`tasks/get`, `tasks/result`; docs/MCP-TASKS.md).
 * Provider-specific adapters are installed as packages (e.g. `@mosoo/fixture-adapter`) and bound by `"package"`.
 */
export const BUILT_IN_ADAPTER_SOURCES: Readonly<Record<string, AdapterSource>> = Object.freeze({
  "mcp-convention": Object.freeze({ module: "@mosoo/effect-reconciliation/host", export: "conventionAdapterFactory" }),
  [MCP_TASKS_ADAPTER_ID]: Object.freeze({ module: "@mosoo/effect-reconciliation/host", export: "mcpTasksAdapterFactory" }),
});
