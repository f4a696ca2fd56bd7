// The adapter host port, apart from adapter-source.contract.ts so that the loader (which reads
// sources) and the port (which answers the loader's bindings) form no import cycle.
import type { InstantiatedBinding } from "./adapter-loader.js";
import type { AdapterCrashedError, AdapterSource } from "./adapter-source.contract.js";

/**
 * Options of {@link AdapterHost.bind}: `tools`, the binding's tool list; `discoveryTimeoutMs`, the
 * bound (ms) of a discovering factory's discovery; `env`, the whole environment of the adapter's
 * process (names to values, e.g. the provider credential an operator assigned to the binding): the
 * sandboxing host starts adapter processes with exactly these variables and nothing of its own.
 */
export interface AdapterBindOptions {
  tools?: readonly string[];
  discoveryTimeoutMs?: number;
  env?: Readonly<Record<string, string>>;
}

/**
 * The port through which a host runs adapter code (the API's production one: `createIsolatedAdapterHost` in adapter-sandbox.host.ts).
 * `bind(source, options, {tools?, discoveryTimeoutMs?})` loads the factory named by `source` (package
 * names resolve from the host's installed dependencies), builds the adapter with `options` (validated
 * by the factory; a discovering factory discovers, bounded by `discoveryTimeoutMs` ms and the host's
 * bind bound), narrows it to `tools` when given, and answers an {@link InstantiatedBinding}: `adapter`, a handle
 * whose validated, frozen `declaration` lives on the host side and whose `lookup` / `planCompensation`
 * run the adapter where the host decides; `coverage` (covered / not covered tools) and `provenance`
 * (source, package name and version, declaration hash). The production host (the API's `createIsolatedAdapterHost`) runs
 * every call, instantiation included, in a sandboxed child process (an environment of `env` only,
 * Node's permission model, heap, memory and CPU-time limits) and kills it on the call's signal; a
 * handle's calls then reject with {@link AdapterCrashedError} when the process dies or is killed
 * past a limit. An in-process host (`createInProcessAdapterHost` from `./testing`) is for tests only.
 * `bind` rejects with a `ReconciliationError` (`adapter.package_not_found`, `adapter.export_missing`,
 * `adapter.load_failed` (the building code crashed or timed out), `binding.tool_not_declared`, `adapter.invalid_options`, `adapter.invalid_declaration`, as `AdapterRegistry.instantiate`;
 * a sandboxing host also `adapter.bundle_outside_package`, `adapter.symlink_outside_package` and `adapter.bundle_too_large`).
 * `close()` ends the host (idempotent); calls afterwards reject.
 */
export interface AdapterHost {
  bind(source: AdapterSource, options: unknown, opts?: AdapterBindOptions): Promise<InstantiatedBinding>;
  close(): Promise<void>;
}
