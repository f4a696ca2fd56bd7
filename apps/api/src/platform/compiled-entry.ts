// Finds how to start a process or worker entry: the compiled file in `dist/`, or the TypeScript source through tsx.
import { fileURLToPath } from "node:url";

/** Defined (as its own folder's URL) by every file `scripts/build.mjs` emits; undeclared under tsx and vitest. */
declare const MOSOO_DIST_URL: string | undefined;

/**
 * The V8 heap flags the API's compiled process starts with (`npm start` runs `node <flags> dist/main.js`;
 * the bench's compiled scenario processes get the same through {@link entryFile}): a young generation of
 * 8 MB semi-spaces (V8 grows them to 16 MB) and an old-generation limit 30% above what was live after
 * each full collection (V8's default lets it grow to 4× that on a machine with memory to spare). Measured
 * on the 100k recovery (docs/performance-notes.md): peak RSS 238 MB with V8's defaults, 149 MB with these,
 * for a few percent more CPU in the collector.
 */
export const API_HEAP_FLAGS: readonly string[] = ["--max-semi-space-size=8", "--heap-growing-percent=30"];

/**
 * Where to start a process or worker entry: compiled (this code runs from `apps/<app>/dist/`, built
 * by `scripts/build.mjs`), the file `distFile` of the same `dist/`
 * folder with no loader arguments; otherwise the TypeScript `sourceUrl` (a `file:` URL, usually
 * `new URL("./x.main.ts", import.meta.url)`) run with `--import tsx`. Returns an absolute path and
 * the node arguments that must precede it (compiled: {@link API_HEAP_FLAGS}, as the API's own start).
 */
export function entryFile(sourceUrl: URL, distFile: string): { path: string; nodeArgs: string[] } {
  if (typeof MOSOO_DIST_URL === "string") return { path: fileURLToPath(new URL(distFile, MOSOO_DIST_URL)), nodeArgs: [...API_HEAP_FLAGS] };
  return { path: fileURLToPath(sourceUrl), nodeArgs: ["--import", "tsx"] };
}
