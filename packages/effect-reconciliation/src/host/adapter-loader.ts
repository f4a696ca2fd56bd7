// Loads an installable adapter factory from its source module and builds the bound, narrowed adapter of one binding.
import { existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { DiscoveringAdapterFactory, ReconciliationAdapter, ReconciliationAdapterFactory } from "../author/adapter.contract.js";
import { narrowAdapter, type ToolCoverage } from "./adapter-coverage.js";
import { createAdapterRegistry } from "./adapter-registry.js";
import { declarationHash, type AdapterProvenance, type AdapterSource } from "./adapter-source.contract.js";
import { summarizeError } from "./error-message.js";
import { ReconciliationError } from "./reconciliation-errors.js";

/** A module export loaded from an {@link AdapterSource}: a static or a discovering factory, with its package. */
export interface LoadedAdapterModule {
  source: AdapterSource;
  factory: ReconciliationAdapterFactory | DiscoveringAdapterFactory;
  packageName: string | null;
  packageVersion: string | null;
}

/** A bound, ready adapter: narrowed to the binding's tools, with what it covers and its provenance. */
export interface InstantiatedBinding {
  adapter: ReconciliationAdapter;
  coverage: ToolCoverage;
  provenance: AdapterProvenance;
}

/** Largest adapter module file loaded (bytes, 16 MiB): an adapter entry point is source code, not data. */
const MAX_ADAPTER_MODULE_BYTES = 16 * 1024 * 1024;

/**
 * The absolute path of the file `source.module` names: resolved from the dependencies of the package
 * that holds `resolveFrom` (an absolute `module` is used as is), checked to be a regular file of at
 * most 16 MiB (never a device, FIFO or directory).
 * @throws ReconciliationError `adapter.package_not_found` (cannot resolve, or not such a file).
 */
export function resolveAdapterModule(source: AdapterSource, resolveFrom: string): string {
  let resolved: string;
  try {
    resolved = isAbsolute(source.module) ? source.module : createRequire(resolveFrom).resolve(source.module);
    if (!existsSync(resolved)) throw new Error(`no file at ${resolved}`);
    // never import a device, FIFO or directory (`/dev/zero` would be read until memory runs out)
    const stat = statSync(resolved);
    if (!stat.isFile()) throw new Error(`${resolved} is not a regular file`);
    if (stat.size > MAX_ADAPTER_MODULE_BYTES) throw new Error(`${resolved} is ${stat.size} bytes, larger than ${MAX_ADAPTER_MODULE_BYTES}`);
  } catch (error) {
    throw new ReconciliationError(
      "adapter.package_not_found",
      `adapter package "${source.module}" is not installed: ${summarizeError(error)}`,
      {
        details: { module: source.module },
      },
    );
  }
  return resolved;
}

/**
 * Loads an adapter factory from `source` (docs/DESIGN.md §4, "Adapters are installable"): resolves
 * `source.module` from the dependencies of the package that holds `resolveFrom` (a file path, e.g.
 * the host's `package.json`; an absolute `module` is used as is), imports it and takes the named
 * export: a {@link ReconciliationAdapterFactory} (`declaration` validated per
 * `AdapterDeclarationSchema`, `create` function) or a {@link DiscoveringAdapterFactory}. Reads the
 * package name and version from the nearest `package.json` of the resolved file.
 * @throws ReconciliationError `adapter.package_not_found` (cannot resolve), `adapter.load_failed`
 *   (resolved, but importing it threw: a missing dependency of its own, a throw at import),
 *   `adapter.export_missing` (no such export, or not a factory), `adapter.invalid_declaration`.
 */
export async function loadAdapterModule(source: AdapterSource, resolveFrom: string): Promise<LoadedAdapterModule> {
  const resolved = resolveAdapterModule(source, resolveFrom);
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(pathToFileURL(resolved).href)) as Record<string, unknown>;
  } catch (error) {
    // it exists but importing it failed (its own dependency missing, a throw at import, ESM/CJS mix-up)
    throw new ReconciliationError("adapter.load_failed", `adapter package "${source.module}" failed to load: ${summarizeError(error)}`, {
      details: { module: source.module },
    });
  }
  return adapterModuleFromNamespace(namespace, source, nearestPackage(resolved));
}

/**
 * The factory that `source.export` names in an already imported module `namespace` (the adapter
 * sandbox imports the module itself, bundled), with the package `pkg` it came from (name and
 * version, or `undefined` when unknown). The declaration is validated as a built-in's.
 * @throws ReconciliationError `adapter.export_missing` (no factory under that export),
 *   `adapter.invalid_declaration` (the factory's declaration fails the contract).
 */
export function adapterModuleFromNamespace(
  namespace: Record<string, unknown>,
  source: AdapterSource,
  pkg: { name: string | null; version: string | null } | undefined,
): LoadedAdapterModule {
  const candidate = Object.hasOwn(namespace, source.export) ? namespace[source.export] : undefined;
  const loaded = (factory: LoadedAdapterModule["factory"]): LoadedAdapterModule => ({
    source: { ...source },
    factory,
    packageName: pkg?.name ?? null,
    packageVersion: pkg?.version ?? null,
  });
  if (isDiscovering(candidate)) return loaded(candidate);
  if (
    typeof candidate !== "object" ||
    candidate === null ||
    !("declaration" in candidate) ||
    typeof (candidate as { create?: unknown }).create !== "function"
  ) {
    throw new ReconciliationError(
      "adapter.export_missing",
      `"${source.module}" has no adapter factory export "${source.export}" (an object with declaration and create(options))`,
      { details: { module: source.module, export: source.export } },
    );
  }
  // The registry validates the declaration exactly as for a built-in and freezes a copy.
  const registry = createAdapterRegistry();
  const declaration = registry.register(candidate as ReconciliationAdapterFactory);
  return loaded(registry.resolve(declaration.id));
}

/**
 * Builds the adapter of one binding from a loaded module: `create(options)` (or `discover`, bounded
 * by `signal`), the declaration validated, then narrowed to `tools` when given.
 * @throws ReconciliationError `adapter.invalid_options`, `adapter.invalid_declaration`,
 *   `binding.tool_not_declared`; a discovery failure as `adapter.invalid_options` with its message.
 */
export async function instantiateBinding(
  loaded: LoadedAdapterModule,
  options: unknown,
  tools: readonly string[] | undefined,
  signal: AbortSignal,
): Promise<InstantiatedBinding> {
  let adapter: ReconciliationAdapter;
  if ("kind" in loaded.factory && loaded.factory.kind === "discovering") {
    const f = loaded.factory;
    let discovered: ReconciliationAdapter;
    try {
      discovered = await f.discover(options, { signal });
    } catch (error) {
      throw new ReconciliationError(
        "adapter.invalid_options",
        `adapter "${f.id}" could not discover its provider: ${summarizeError(error)}`,
        { details: { adapterId: f.id }, cause: error },
      );
    }
    const registry = createAdapterRegistry();
    registry.register({ declaration: discovered.declaration, create: () => discovered });
    adapter = registry.instantiate(discovered.declaration.id);
    if (adapter.declaration.id !== f.id)
      throw new ReconciliationError(
        "adapter.invalid_declaration",
        `adapter "${f.id}" discovered a declaration with id "${adapter.declaration.id}"`,
        { details: { adapterId: f.id } },
      );
  } else {
    const registry = createAdapterRegistry();
    const factory = loaded.factory as ReconciliationAdapterFactory;
    registry.register(factory);
    adapter = registry.instantiate(factory.declaration.id, options);
  }
  const narrowed = narrowAdapter(adapter, tools);
  return {
    adapter: narrowed.adapter,
    coverage: narrowed.coverage,
    provenance: {
      source: loaded.source,
      packageName: loaded.packageName,
      packageVersion: loaded.packageVersion,
      declarationHash: declarationHash(narrowed.adapter.declaration),
    },
  };
}

function isDiscovering(value: unknown): value is DiscoveringAdapterFactory {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { kind?: unknown }).kind === "discovering" &&
    typeof (value as { discover?: unknown }).discover === "function" &&
    typeof (value as { id?: unknown }).id === "string"
  );
}
/**
 * The `name` and `version` of the nearest `package.json` above `file` (each `null` when absent or
 * not a string), or `undefined` when there is none or it is not JSON.
 */
export function nearestPackage(file: string): { name: string | null; version: string | null } | undefined {
  let dir = dirname(file);
  for (;;) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate)) {
      try {
        const json = JSON.parse(readFileSync(candidate, "utf8")) as { name?: unknown; version?: unknown };
        return { name: typeof json.name === "string" ? json.name : null, version: typeof json.version === "string" ? json.version : null };
      } catch {
        return undefined;
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}
