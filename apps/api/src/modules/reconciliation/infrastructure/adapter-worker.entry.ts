/**
 * The compiled piscina worker entry of the isolated adapter host (`dist/adapter-worker-<hash>.js`, content-hashed, built by
 * `scripts/build.mjs`; under tsx the host uses `adapter-worker.bootstrap.mjs` instead). The worker
 * itself is compiled JavaScript; tsx is registered in this worker thread only, so that an adapter
 * module that is TypeScript (a workspace package such as `@mosoo/fixture-adapter`, or a `.ts` file
 * named in the bindings file) loads as it does under tsx. The API's main thread runs no loader.
 */
import { register } from "tsx/esm/api";
import { installAdapterGuard } from "./adapter-worker.guard.js";
import runAdapterTask from "./adapter-worker.js";

register();
// after the loader (the guard refuses module.register), before any adapter module loads (docs/DESIGN.md §4)
installAdapterGuard();

export default runAdapterTask;
