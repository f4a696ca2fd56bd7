// The piscina worker entry of the isolated adapter host: loads tsx in this worker thread (adapter
// modules and the worker itself are TypeScript), then hands every task to adapter-worker.ts.
import { register } from "tsx/esm/api";

register();
const { default: runAdapterTask } = await import("./adapter-worker.ts");

export default runAdapterTask;
