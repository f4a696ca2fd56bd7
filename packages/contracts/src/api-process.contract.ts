// How the API's compiled process is started: the node flags every starter (npm start, the bench, the e2e harness) passes.

/**
 * The V8 heap flags the API's compiled process starts with (`npm start` runs `node <flags> dist/main.js`;
 * the bench's compiled scenario processes and the e2e harness's `compiled` mode pass the same): a young
 * generation of 8 MB semi-spaces (V8 grows them to 16 MB) and an old-generation limit 30% above what was
 * live after each full collection (V8's default lets it grow to 4× that on a machine with memory to spare).
 * Measured on the 100k recovery (docs/performance-notes.md): peak RSS 238 MB with V8's defaults, 149 MB
 * with these, for a few percent more CPU in the collector.
 */
export const API_HEAP_FLAGS: readonly string[] = ["--max-semi-space-size=8", "--heap-growing-percent=30"];
