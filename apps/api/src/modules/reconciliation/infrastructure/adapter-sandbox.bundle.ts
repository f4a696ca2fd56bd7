// Builds the one-file program an adapter's sandboxed process runs, and what that process may read.
import { chmodSync, realpathSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { nearestPackage, ReconciliationError, resolveAdapterModule, type AdapterSource } from "@mosoo/effect-reconciliation/host";

/** The API's own `package.json`: adapter packages resolve from its dependencies (docs/DESIGN.md §4 "Adapters are installable"). */
const API_PACKAGE_JSON = fileURLToPath(new URL("../../../../package.json", import.meta.url));
/** The child's main program (TypeScript source; the bundler compiles it, compiled API or not). */
const CHILD_SOURCE = fileURLToPath(new URL("./adapter-sandbox.child.ts", import.meta.url));

/**
 * One adapter's sandbox program: `file`, the bundle the child runs; `readable`, every path the child
 * may read (the bundle, and the adapter's own package folder: an installed package's root, or the
 * folder of a module named by path); `packageName` / `packageVersion` from the nearest `package.json`.
 */
export interface AdapterBundle {
  file: string;
  readable: string[];
  packageName: string | null;
  packageVersion: string | null;
}

/**
 * Resolves `source` (package names from the API's dependencies, paths as given) and bundles it with
 * the child's main program into `<dir>/<name>.mjs` (esbuild: TypeScript compiled, every dependency
 * inlined, no loader and no cache needed at run time; the file is made read-only). A dependency that
 * is a native addon cannot be bundled: the sandbox loads no addons.
 * @throws ReconciliationError `adapter.package_not_found` (not resolvable, not a regular file),
 *   `adapter.load_failed` (the module or one of its imports does not compile or resolve; one line).
 */
export async function bundleAdapter(source: AdapterSource, dir: string, name: string): Promise<AdapterBundle> {
  const resolved = realpathSync(resolveAdapterModule(source, API_PACKAGE_JSON));
  const file = join(dir, `${name}.mjs`);
  const entry = [
    `import { serveAdapterTasks } from ${JSON.stringify(CHILD_SOURCE)};`,
    // imported lazily (esbuild inlines it): a throw or a hang at import is answered to `bind`, not a dead process
    `serveAdapterTasks(() => import(${JSON.stringify(resolved)}));`,
  ].join("\n");
  try {
    await esbuild.build({
      stdin: { contents: entry, resolveDir: dirname(resolved), loader: "ts", sourcefile: "adapter-sandbox-entry.ts" },
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      outfile: file,
      logLevel: "silent",
      legalComments: "none",
      // CommonJS dependencies inlined into an ES module still call require() for Node's built-ins
      banner: {
        js: 'import { createRequire as __mosooCreateRequire } from "node:module"; const require = __mosooCreateRequire(import.meta.url);',
      },
    });
  } catch (error) {
    const first = (error as { errors?: Array<{ text?: unknown }> }).errors?.[0]?.text;
    throw new ReconciliationError(
      "adapter.load_failed",
      `adapter package "${source.module}" failed to load: ${typeof first === "string" ? first.split("\n")[0] : "it does not compile"}`,
      { details: { module: source.module } },
    );
  }
  chmodSync(file, 0o444);
  const pkg = nearestPackage(resolved);
  return {
    file,
    readable: [file, ownFolder(resolved)],
    packageName: pkg?.name ?? null,
    packageVersion: pkg?.version ?? null,
  };
}

/** The folder an adapter may read: its installed package's root (under `node_modules`), else the module file's own folder. */
function ownFolder(resolved: string): string {
  const marker = `${sep}node_modules${sep}`;
  const at = resolved.lastIndexOf(marker);
  if (at < 0) return dirname(resolved);
  const rest = resolved.slice(at + marker.length).split(sep);
  const depth = rest[0]?.startsWith("@") ? 2 : 1;
  return join(resolved.slice(0, at + marker.length), ...rest.slice(0, depth));
}
