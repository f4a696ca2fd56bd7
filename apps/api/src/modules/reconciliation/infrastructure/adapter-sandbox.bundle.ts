// Builds the one-file program an adapter's sandboxed process runs, and what that process may read.
import { realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { nearestPackage, ReconciliationError, resolveAdapterModule, type AdapterSource } from "@mosoo/effect-reconciliation/host";
import { adapterPackageScope, confinementPlugin, refuseOutsideSymlinks } from "./adapter-sandbox.confine.js";

/** The API's own `package.json`: adapter packages resolve from its dependencies (see `loadAdapterModule` in adapter-loader.ts). */
const API_PACKAGE_JSON = fileURLToPath(new URL("../../../../package.json", import.meta.url));
/** The child's main program (TypeScript source; the bundler compiles it, compiled API or not). */
const CHILD_SOURCE = fileURLToPath(new URL("./adapter-sandbox.child.ts", import.meta.url));

/**
 * One adapter's sandbox program: `file`, the bundle the child runs; `readable`, every path the child
 * may read (the bundle alone: it is self-contained); `packageName` / `packageVersion` from the
 * nearest `package.json`.
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
 * inlined, no loader and no cache needed at run time; the file is made read-only). Bundling reads
 * only the adapter's package and the dependencies it declares (`adapter-sandbox.confine.ts`): a
 * symbolic link in the package pointing elsewhere, or an import (of any kind, glob imports included)
 * reaching a file elsewhere, or a file too large to bundle, refuses the binding before anything is written; no `tsconfig.json` is
 * read (TypeScript is compiled with esbuild's defaults). A dependency that is a native addon cannot
 * be bundled: the sandbox loads no addons.
 * @throws ReconciliationError `adapter.package_not_found` (not resolvable, not a regular file),
 *   `adapter.symlink_outside_package`, `adapter.bundle_outside_package`, `adapter.bundle_too_large` (a
 *   file over 16 MiB, or over 64 MiB in all, would be bundled), `adapter.load_failed` (the
 *   module or one of its imports does not compile or resolve; one line).
 */
export async function bundleAdapter(source: AdapterSource, dir: string, name: string): Promise<AdapterBundle> {
  const resolved = realpathSync(resolveAdapterModule(source, API_PACKAGE_JSON));
  const scope = adapterPackageScope(source, resolved, dirname(API_PACKAGE_JSON));
  refuseOutsideSymlinks(source, scope);
  const file = join(dir, `${name}.mjs`);
  const entry = [
    `import { serveAdapterTasks } from ${JSON.stringify(CHILD_SOURCE)};`,
    // imported lazily (esbuild inlines it): a throw or a hang at import is answered to `bind`, not a dead process
    `serveAdapterTasks(() => import(${JSON.stringify(resolved)}));`,
  ].join("\n");
  const confine = confinementPlugin({ contents: entry, resolveDir: dirname(CHILD_SOURCE) }, resolved, scope);
  let output: Uint8Array;
  try {
    const built = await esbuild.build({
      entryPoints: [confine.entryPoint],
      plugins: [confine.plugin],
      // never read a tsconfig.json (its `paths` and `extends` could name files anywhere)
      tsconfigRaw: {},
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      outfile: file,
      write: false,
      logLevel: "silent",
      legalComments: "none",
      // CommonJS dependencies inlined into an ES module still call require() for Node's built-ins
      banner: {
        js: 'import { createRequire as __mosooCreateRequire } from "node:module"; const require = __mosooCreateRequire(import.meta.url);',
      },
    });
    const js = built.outputFiles.find((out) => out.path === file);
    if (js === undefined || built.outputFiles.length !== 1) throw new Error("the bundle is not one JavaScript file");
    output = js.contents;
  } catch (error) {
    const refusal = confine.refusal();
    if (refusal !== undefined)
      throw new ReconciliationError(refusal.code, `adapter package "${source.module}": ${refusal.text}`, {
        details: { module: source.module },
      });
    const first =
      (error as { errors?: Array<{ text?: unknown }> }).errors?.[0]?.text ?? (error instanceof Error ? error.message : undefined);
    throw new ReconciliationError(
      "adapter.load_failed",
      `adapter package "${source.module}" failed to load: ${typeof first === "string" ? first.split("\n")[0] : "it does not compile"}`,
      { details: { module: source.module } },
    );
  }
  writeFileSync(file, output, { mode: 0o444 });
  const pkg = nearestPackage(resolved);
  return {
    file,
    readable: [file],
    packageName: pkg?.name ?? null,
    packageVersion: pkg?.version ?? null,
  };
}
