/**
 * Imported first by the adapter worker's entries (`adapter-worker.bootstrap.mjs` under tsx,
 * `adapter-worker.entry.ts` compiled). Defence in depth against adapter code (docs/DESIGN.md §4): a
 * worker thread shares the API's process, so a signal sent to that process
 * (`process.kill(process.pid, "SIGKILL")`) would end the API, not just the worker. Signals are not an
 * adapter's business: `process.kill` throws `Error("process.kill is not available to adapter code")`
 * in this thread. This is not a sandbox (code that spawns a child process can still signal its
 * parent); the README says so.
 */
Object.defineProperty(process, "kill", {
  value: () => {
    throw new Error("process.kill is not available to adapter code");
  },
  writable: false,
  configurable: false,
});

export {};
