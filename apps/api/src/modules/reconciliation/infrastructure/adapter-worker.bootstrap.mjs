// The piscina worker entry of the isolated adapter host under a TypeScript loader (tsx, vitest):
// loads tsx in this worker thread (adapter modules and the worker itself are TypeScript), then
// hands every task to adapter-worker.ts. The compiled API uses adapter-worker.entry.ts instead.
// adapter-worker.guard.ts makes `process.kill` throw in this thread (docs/DESIGN.md §4).
import { register } from "tsx/esm/api";

register();
await import("./adapter-worker.guard.ts");
const { default: runAdapterTask } = await import("./adapter-worker.ts");

export default runAdapterTask;
