// An adapter host that loads and runs adapters in the test's own process, for tests only.
import type { AdapterBindOptions, AdapterHost } from "../host/adapter-host.contract.js";
import type { AdapterSource } from "../host/adapter-source.contract.js";
import { instantiateBinding, loadAdapterModule, type InstantiatedBinding } from "../host/adapter-loader.js";

/**
 * An {@link AdapterHost} that loads and runs adapters IN THIS PROCESS (tests only:
 * production runs every adapter call in the API's isolated worker
 * host). `bind` = `loadAdapterModule(source, resolveFrom)` + `instantiateBinding(options, tools)`,
 * discovery bounded by `discoveryTimeoutMs` (ms, default 5000). `resolveFrom`: a file (e.g. a
 * `package.json`) whose package's dependencies resolve package names. Errors as `AdapterHost.bind`.
 */
export function createInProcessAdapterHost(resolveFrom: string): AdapterHost {
  let closed = false;
  return {
    async bind(source: AdapterSource, options: unknown, opts: AdapterBindOptions = {}): Promise<InstantiatedBinding> {
      if (closed) throw new Error("the adapter host is closed");
      const loaded = await loadAdapterModule(source, resolveFrom);
      return instantiateBinding(loaded, options, opts.tools, AbortSignal.timeout(opts.discoveryTimeoutMs ?? 5_000));
    },
    async close(): Promise<void> {
      closed = true;
    },
  };
}
