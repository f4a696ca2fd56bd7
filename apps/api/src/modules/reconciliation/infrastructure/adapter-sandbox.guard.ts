/**
 * The adapter worker's deny-list (docs/DESIGN.md §4 "Adapters are untrusted code"), installed by the
 * worker's entries (`adapter-worker.bootstrap.mjs` under tsx, `adapter-worker.entry.ts` compiled)
 * after tsx is registered and BEFORE any adapter code loads. A worker thread shares the API's process,
 * so each of these would let adapter code end the API (or run code where no guard runs):
 * - signals: `process.kill`, `process._kill` (the binding `process.kill` calls);
 * - threads and processes the guard never runs in: `worker_threads.Worker`, `child_process`'s
 *   `spawn`/`exec`/`execFile`/`fork` (and `*Sync`) and its `ChildProcess` class, `module.register`
 *   (loader hooks run in a thread of their own), `inspector.Session`/`inspector.open` (a session
 *   connected to the main thread evaluates code there);
 * - native access: `process.binding`, `process._linkedBinding`, `process.dlopen` (native addons);
 * - process-wide V8 flags: `v8.setFlagsFromString`.
 * Each refused call throws `Error("<name> is not available to adapter code")`, which the host answers
 * as the call's error (recorded fail-closed: `still_unknown`). Module exports are replaced on the CJS
 * export objects and `syncBuiltinESMExports()` makes later ESM imports (`import { Worker } from
 * "node:worker_threads"`) see the same. This is a deny-list, not a sandbox: it closes the routes
 * above in this thread; it cannot confine native code or what the filesystem allows, and only OS-level
 * isolation (a separate user, a container) confines deliberately malicious code (README "Isolation").
 */
import { createRequire, syncBuiltinESMExports } from "node:module";

/** The message of every refusal: `"<name> is not available to adapter code"`. */
function refusal(name: string): Error {
  return new Error(`${name} is not available to adapter code`);
}

function lockFunction(target: object, key: string, name: string): void {
  Object.defineProperty(target, key, {
    value: function refused(): never {
      throw refusal(name);
    },
    writable: false,
    configurable: false,
    enumerable: Object.getOwnPropertyDescriptor(target, key)?.enumerable ?? false,
  });
}

function lockClass(target: object, key: string, name: string): void {
  Object.defineProperty(target, key, {
    value: class Refused {
      constructor() {
        throw refusal(name);
      }
    },
    writable: false,
    configurable: false,
    enumerable: Object.getOwnPropertyDescriptor(target, key)?.enumerable ?? true,
  });
}

let installed = false;

/**
 * Installs the deny-list above in the calling thread (idempotent). Call it in the adapter worker only,
 * after the TypeScript loader is registered (it refuses `module.register` afterwards) and before any
 * adapter module is imported. Throws nothing.
 */
export function installAdapterGuard(): void {
  if (installed) return;
  installed = true;
  const require = createRequire(import.meta.url);
  for (const key of ["kill", "_kill", "binding", "_linkedBinding", "dlopen"]) lockFunction(process, key, `process.${key}`);
  lockClass(require("node:worker_threads") as object, "Worker", "worker_threads.Worker");
  const childProcess = require("node:child_process") as object;
  for (const key of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"])
    lockFunction(childProcess, key, `child_process.${key}`);
  lockClass(childProcess, "ChildProcess", "child_process.ChildProcess");
  lockFunction(require("node:module") as object, "register", "module.register");
  // both loaded before either is patched (inspector/promises builds on inspector's Session)
  for (const inspector of [require("node:inspector") as object, require("node:inspector/promises") as object]) {
    lockClass(inspector, "Session", "inspector.Session");
    lockFunction(inspector, "open", "inspector.open");
  }
  lockFunction(require("node:v8") as object, "setFlagsFromString", "v8.setFlagsFromString");
  syncBuiltinESMExports();
}
