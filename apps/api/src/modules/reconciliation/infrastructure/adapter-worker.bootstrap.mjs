// The piscina worker entry of the isolated adapter host under a TypeScript loader (tsx, vitest):
// loads tsx in this worker thread (adapter modules and the worker itself are TypeScript), then
// hands every task to adapter-worker.ts. The compiled API uses adapter-worker.entry.ts instead.
// adapter-worker.guard.ts installs the deny-list in this thread (docs/DESIGN.md §4): after the loader
// (it refuses module.register), before any adapter module loads.
import { register } from "tsx/esm/api";

register();
const { installAdapterGuard } = await import("./adapter-worker.guard.ts");
installAdapterGuard();
const { default: runAdapterTask } = await import("./adapter-worker.ts");

export default runAdapterTask;
