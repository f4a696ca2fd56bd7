// The piscina worker entry of the isolated adapter host: loads tsx in this worker thread (adapter
// modules and the worker itself are TypeScript), then hands every task to adapter-worker.ts.
//
// Defence in depth against adapter code (docs/DESIGN.md §4): a worker thread shares the API's
// process, so a signal sent to that process (`process.kill(process.pid, "SIGKILL")`) would end the
// API, not just the worker. Signals are not an adapter's business: `process.kill` throws here. This
// is not a sandbox (code that spawns a child process can still signal its parent); the README says so.
import { register } from "tsx/esm/api";

Object.defineProperty(process, "kill", {
  value: () => {
    throw new Error("process.kill is not available to adapter code");
  },
  writable: false,
  configurable: false,
});

register();
const { default: runAdapterTask } = await import("./adapter-worker.ts");

export default runAdapterTask;
