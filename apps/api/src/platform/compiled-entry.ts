// Finds how to start a process or worker entry: the compiled file in `dist/`, or the TypeScript source through tsx.
import { fileURLToPath } from "node:url";
import { API_HEAP_FLAGS } from "@mosoo/contracts";

/** Defined (as its own folder's URL) by every file `scripts/build.mjs` emits; undeclared under tsx and vitest. */
declare const MOSOO_DIST_URL: string | undefined;

/**
 * Where to start a process or worker entry: compiled (this code runs from `apps/<app>/dist/`, built
 * by `scripts/build.mjs`), the file `distFile` of the same `dist/`
 * folder with no loader arguments; otherwise the TypeScript `sourceUrl` (a `file:` URL, usually
 * `new URL("./x.main.ts", import.meta.url)`) run with `--import tsx`. Returns an absolute path and
 * the node arguments that must precede it (compiled: `API_HEAP_FLAGS` of `@mosoo/contracts`, as the API's own start).
 */
export function entryFile(sourceUrl: URL, distFile: string): { path: string; nodeArgs: string[] } {
  if (typeof MOSOO_DIST_URL === "string") return { path: fileURLToPath(new URL(distFile, MOSOO_DIST_URL)), nodeArgs: [...API_HEAP_FLAGS] };
  return { path: fileURLToPath(sourceUrl), nodeArgs: ["--import", "tsx"] };
}
