// What bundling an adapter may read: its own package and the dependencies that package declares, nothing else.
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { isBuiltin } from "node:module";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import type { Plugin } from "esbuild";
import { ReconciliationError, type AdapterSource } from "@mosoo/effect-reconciliation/host";

/** Most entries (files, folders, links) walked under an adapter's package folder, `node_modules` left out. */
const MAX_PACKAGE_ENTRIES = 10_000;
/** Most dependency packages (transitively) an adapter's scope lists; past it the rest are not readable. */
const MAX_DEPENDENCY_PACKAGES = 5_000;
/**
 * Largest file an adapter may bring into its bundle (bytes, 16 MiB): esbuild reads each file whole
 * into the API's memory and a `with {type: "text"}` import copies it into the bundle, so a huge
 * (even sparse, 0 bytes on disk) file would cost the API that much memory and disk.
 */
const MAX_BUNDLED_FILE_BYTES = 16 * 1024 * 1024;
/** Most bytes all the files an adapter brings into its bundle may total (64 MiB; same reason). */
const MAX_BUNDLED_TOTAL_BYTES = 64 * 1024 * 1024;
/** The dependency fields of a `package.json` whose packages an adapter may import (not `devDependencies`). */
const DEPENDENCY_FIELDS = ["dependencies", "optionalDependencies", "peerDependencies"] as const;

/**
 * What bundling one adapter may read (docs/DESIGN.md §4 "The sandbox is the operating system's"):
 * `root`, the adapter's own package folder (real path): for a module named by package, the folder of
 * the `package.json` that bears the package's name; for a module named by path, that file's folder;
 * `readable`, `root` first, then the real folder of every package `root`'s manifest declares in
 * `dependencies`, `optionalDependencies` or `peerDependencies`, found as Node finds it (the nearest
 * `node_modules/<name>` upwards), and theirs in turn (at most 5 000). A module named by path takes its
 * dependencies from the nearest `package.json` above it. A dependency counts only when its folder
 * holds a `package.json` of that name AND its real path lies in a `node_modules` folder or is the
 * very folder the API itself loads that package from (a workspace package): a link the package ships
 * in its own `node_modules` (a folder or git install keeps links) to some other folder is not one.
 */
export interface AdapterPackageScope {
  root: string;
  readable: string[];
}

/** True when `path` is `dir` or lies under it (both real paths). */
function inside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/** True when `path` (a real path) lies in one of `scope.readable`. */
function withinScope(path: string, scope: AdapterPackageScope): boolean {
  return scope.readable.some((dir) => inside(path, dir));
}

function readManifest(dir: string): Record<string, unknown> | undefined {
  try {
    const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as unknown;
    return typeof json === "object" && json !== null ? (json as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The folder of the nearest `package.json` above `file` (for which `accept` holds), or undefined. */
function nearestManifestDir(file: string, accept: (manifest: Record<string, unknown>) => boolean = () => true): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) {
      const manifest = readManifest(dir);
      if (manifest !== undefined && accept(manifest)) return dir;
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** The package name a bare specifier names (`@scope/name/sub` → `@scope/name`). */
function packageNameOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier);
}

/** The real folder Node would load package `name` from for code in `dir` (nearest `node_modules/<name>` upwards), or undefined. */
function findDependency(dir: string, name: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const candidate = join(at, "node_modules", name);
    if (existsSync(candidate)) {
      try {
        return realpathSync(candidate);
      } catch {
        return undefined;
      }
    }
    if (dirname(at) === at) return undefined;
  }
}

/** Whether the real folder `dir` is package `name` installed as a dependency (see {@link AdapterPackageScope}). */
function isPackage(dir: string, name: string, hostDir: string): boolean {
  if (readManifest(dir)?.["name"] !== name) return false;
  return dir.includes(`${sep}node_modules${sep}`) || findDependency(hostDir, name) === dir;
}

/**
 * The {@link AdapterPackageScope} of `source`, whose module file is `resolved` (a real path);
 * `hostDir` is the API's own package folder (where it loads its dependencies from).
 * @throws ReconciliationError `adapter.bundle_outside_package` when the package folder would be the
 *   file system's root (everything would be inside it).
 */
export function adapterPackageScope(source: AdapterSource, resolved: string, hostDir: string): AdapterPackageScope {
  const byPath = isAbsolute(source.module);
  const name = packageNameOf(source.module);
  const own = byPath ? undefined : nearestManifestDir(resolved, (manifest) => manifest["name"] === name);
  const root = own ?? dirname(resolved);
  if (dirname(root) === root)
    throw new ReconciliationError(
      "adapter.bundle_outside_package",
      `adapter package "${source.module}" lies in the file system's root folder: put it in a folder of its own`,
      { details: { module: source.module } },
    );
  const readable = [root];
  const manifests = [own ?? nearestManifestDir(resolved)].filter((dir): dir is string => dir !== undefined);
  const seen = new Set(manifests);
  while (manifests.length > 0 && readable.length < MAX_DEPENDENCY_PACKAGES) {
    const dir = manifests.shift()!;
    const manifest = readManifest(dir);
    for (const field of DEPENDENCY_FIELDS) {
      const deps = manifest?.[field];
      if (typeof deps !== "object" || deps === null) continue;
      for (const dep of Object.keys(deps)) {
        const found = findDependency(dir, dep);
        if (found === undefined || seen.has(found) || !isPackage(found, dep, hostDir)) continue;
        seen.add(found);
        manifests.push(found);
        if (!readable.some((known) => inside(found, known))) readable.push(found);
      }
    }
  }
  return { root, readable };
}

/**
 * Refuses a symbolic link (to a file or a folder) anywhere under `scope.root` whose target lies
 * outside the scope (`node_modules` folders are left out: what is imported from them is checked
 * where it resolves); links are not followed. A dangling link is judged by the path it names.
 * @throws ReconciliationError `adapter.symlink_outside_package` (naming the link, relative to the
 *   package folder), `adapter.load_failed` (more than 10 000 entries: not a package folder).
 */
export function refuseOutsideSymlinks(source: AdapterSource, scope: AdapterPackageScope): void {
  const details = { module: source.module };
  let entries = 0;
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (++entries > MAX_PACKAGE_ENTRIES)
        throw new ReconciliationError(
          "adapter.load_failed",
          `adapter package "${source.module}": its folder holds more than ${MAX_PACKAGE_ENTRIES} entries; bind a package, not a folder that holds other things`,
          { details },
        );
      const path = join(dir, entry.name);
      if (entry.isSymbolicLink()) {
        let target: string;
        try {
          target = realpathSync(path);
        } catch {
          target = resolve(dir, readlinkSync(path));
        }
        if (!withinScope(target, scope))
          throw new ReconciliationError(
            "adapter.symlink_outside_package",
            `adapter package "${source.module}": the link ${relative(scope.root, path)} points outside the package and its dependencies`,
            { details },
          );
      } else if (entry.isDirectory() && entry.name !== "node_modules") walk(path);
    }
  };
  walk(scope.root);
}

/** Files esbuild parses as JavaScript or TypeScript (the ones whose imports it may expand as globs). */
const SCRIPT_FILE = /\.(?:[cm]?[jt]sx?)$/;
/** An `import(` or `require(` call, then blanks and comments, then a template literal or a quoted string. */
const DYNAMIC_IMPORT =
  /\b(?:import|require)\s*\((?:\s|\/\*[\s\S]*?\*\/|\/\/[^\n]*\n)*(`(?:[^`\\$]|\\.|\$(?!\{))*(?:\$\{|`)|"(?:[^"\\]|\\.)*"\s*\+|'(?:[^'\\]|\\.)*'\s*\+)/g;

/**
 * The fixed folders of the glob imports in `source` (``import(`../x/${n}`)``, `require("./x/" + n)`):
 * for each such call whose path is relative or absolute, the path up to the last `/` before the first
 * substitution. esbuild lists every folder under it while bundling, before any file it finds reaches
 * `onLoad`; checking the folder first keeps a glob climbing to `/` from listing the whole file system.
 * A call this scan misses is still refused file by file when it loads.
 */
function globPrefixes(source: string): string[] {
  const prefixes: string[] = [];
  for (const match of source.matchAll(DYNAMIC_IMPORT)) {
    const literal = match[1]!;
    const quoted = literal.startsWith("`")
      ? literal.slice(1).replace(/(?:\$\{|`)$/, "")
      : literal.slice(1, literal.lastIndexOf(literal[0]!));
    // a template literal with no substitution, or a package path, is not a glob
    if (literal.startsWith("`") && literal.endsWith("`")) continue;
    if (!/^(?:\.{1,2}\/|\/)/.test(quoted)) continue;
    prefixes.push(quoted.slice(0, quoted.lastIndexOf("/") + 1) || "./");
  }
  return prefixes;
}

/** Why bundling an adapter was refused: the error's `code` and one line (`text`, naming the file). */
export interface ConfinementRefusal {
  code: "adapter.bundle_outside_package" | "adapter.bundle_too_large";
  text: string;
}

/** The namespace of the bundle's entry (the host's own program: what it imports is trusted). */
const ENTRY_NAMESPACE = "mosoo-sandbox-entry";
/** The `pluginData` marking a resolution the plugin asked esbuild for itself. */
const OWN_RESOLVE = Symbol("adapter-sandbox.confine");

/**
 * An esbuild plugin that bundles `entry` (the host's program, TypeScript, importing the adapter module
 * `adapterModule` by its real path) and confines every file the ADAPTER brings in to `scope`:
 * - each import the adapter's code makes (any kind: `import`, `require`, `import()`, `with {type}`)
 *   must resolve, after the real path is taken, to a regular file within the scope; a Node built-in
 *   stays a run-time import (the sandboxed process's permission model and guard judge it);
 * - each file loaded, however esbuild came to it (glob imports `import(\`./x/${n}\`)` never reach
 *   `onResolve`), must be within the scope or be a file the host's own program imports; an adapter
 *   script whose glob import's fixed folder lies outside the scope is refused before esbuild lists it.
 * - each such file is at most 16 MiB, and all of them together at most 64 MiB (checked from the file's
 *   size before esbuild reads it).
 * What the host's program imports (the child program and its dependencies) is trusted and marked so.
 * The first refusal is kept in `refusal()` (its code and one line): the build fails and the caller
 * throws a `ReconciliationError` with it (`adapter.bundle_outside_package`, or
 * `adapter.bundle_too_large` past a size bound). esbuild reads no `tsconfig.json` (the caller passes its own).
 */
export function confinementPlugin(
  entry: { contents: string; resolveDir: string },
  adapterModule: string,
  scope: AdapterPackageScope,
): { plugin: Plugin; entryPoint: string; refusal: () => ConfinementRefusal | undefined } {
  const trusted = new Set<string>();
  let first: ConfinementRefusal | undefined;
  let totalBytes = 0;
  const refuse = (text: string, code: ConfinementRefusal["code"] = "adapter.bundle_outside_package") => {
    first ??= { code, text };
    return { errors: [{ text }] };
  };
  const regularInScope = (path: string): boolean => {
    try {
      return withinScope(realpathSync(path), scope) && statSync(path).isFile();
    } catch {
      return false;
    }
  };
  const where = (importer: string) => (importer.startsWith(scope.root) ? relative(scope.root, importer) : importer);
  const plugin: Plugin = {
    name: "adapter-sandbox-confine",
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === "entry-point") return { path: ENTRY_NAMESPACE, namespace: ENTRY_NAMESPACE };
        if (args.pluginData === OWN_RESOLVE) return undefined;
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        const fromHost = args.namespace === ENTRY_NAMESPACE ? args.path !== adapterModule : trusted.has(args.importer);
        const found = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.namespace === ENTRY_NAMESPACE ? undefined : args.importer,
          resolveDir: args.resolveDir,
          with: args.with,
          pluginData: OWN_RESOLVE,
        });
        if (found.errors.length > 0) return { errors: found.errors };
        if (found.external || found.namespace !== "file" || found.path === "") return found;
        if (fromHost) {
          trusted.add(found.path);
          return found;
        }
        if (!regularInScope(found.path))
          return refuse(
            `"${args.path}" imported by ${where(args.importer)} is not a file of the adapter's package or of a dependency it declares`,
          );
        return found;
      });
      build.onLoad({ filter: /.*/, namespace: ENTRY_NAMESPACE }, () => ({
        contents: entry.contents,
        resolveDir: entry.resolveDir,
        loader: "ts",
      }));
      build.onLoad({ filter: /.*/, namespace: "file" }, (args) => {
        if (trusted.has(args.path)) return undefined;
        if (!regularInScope(args.path))
          return refuse(
            `${where(args.path)} would be bundled, but it is not a file of the adapter's package or of a dependency it declares`,
          );
        const bytes = statSync(args.path).size;
        totalBytes += bytes;
        if (bytes > MAX_BUNDLED_FILE_BYTES)
          return refuse(
            `${where(args.path)} is ${bytes} bytes, more than the ${MAX_BUNDLED_FILE_BYTES} bytes one file may bring into an adapter's bundle`,
            "adapter.bundle_too_large",
          );
        if (totalBytes > MAX_BUNDLED_TOTAL_BYTES)
          return refuse(
            `the files it brings into its bundle total more than ${MAX_BUNDLED_TOTAL_BYTES} bytes (reached at ${where(args.path)})`,
            "adapter.bundle_too_large",
          );
        if (!SCRIPT_FILE.test(args.path)) return undefined;
        const outside = globPrefixes(readFileSync(args.path, "utf8")).find(
          (prefix) => !withinScope(resolve(dirname(args.path), prefix), scope),
        );
        if (outside !== undefined)
          return refuse(`${where(args.path)} has a glob import of "${outside}…", which reaches outside the adapter's package`);
        return undefined;
      });
    },
  };
  return { plugin, entryPoint: ENTRY_NAMESPACE, refusal: () => first };
}
