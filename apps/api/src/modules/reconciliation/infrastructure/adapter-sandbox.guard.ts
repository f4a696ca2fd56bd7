/**
 * The guard in an adapter's sandboxed process (docs/DESIGN.md §4 "The sandbox is the operating
 * system's"), installed by the child program (`adapter-sandbox.child.ts`) BEFORE any adapter code
 * loads. The permission model the process runs under already refuses file writes, reads outside the
 * adapter's package, child processes, workers and native addons; it does not cover signals, so this
 * guard closes those and a few other process-wide routes (defence in depth):
 * - signals: `process.kill`, `process._kill` (the binding `process.kill` calls), `process._debugProcess`
 *   (it sends SIGUSR1, which opens another process's inspector), `os.setPriority`;
 * - native writes the permission model does not see: `trace_events.createTracing` (its log file is
 *   written by native code);
 * - threads and processes: `worker_threads.Worker`, `child_process`'s `spawn`/`exec`/`execFile`/`fork`
 *   (and `*Sync`) and its `ChildProcess` class, `module.register` (loader hooks run in a thread of
 *   their own), `inspector.Session`/`inspector.open`;
 * - native access: `process.binding`, `process._linkedBinding`, `process.dlopen`;
 * - process-wide V8 flags: `v8.setFlagsFromString`;
 * - reading the process's own heap: `v8.getHeapSnapshot`, `v8.setHeapSnapshotNearHeapLimit` (a
 *   snapshot holds every string of the process, the reply token of the child program included).
 * Each refused call throws `Error("<name> is not available to adapter code")`, which the adapter sees
 * as any error. Module exports are replaced on the CJS export objects and `syncBuiltinESMExports()`
 * makes later ESM imports see the same.
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
 * Installs the guard above in the calling process (idempotent). Call it in the adapter's sandboxed
 * process only, before any adapter module is imported. Throws nothing.
 */
export function installAdapterGuard(): void {
  if (installed) return;
  installed = true;
  const require = createRequire(import.meta.url);
  for (const key of ["kill", "_kill", "_debugProcess", "_debugEnd", "binding", "_linkedBinding", "dlopen"])
    if (key in process) lockFunction(process, key, `process.${key}`);
  lockFunction(require("node:os") as object, "setPriority", "os.setPriority");
  lockFunction(require("node:trace_events") as object, "createTracing", "trace_events.createTracing");
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
  const v8 = require("node:v8") as object;
  for (const key of ["setFlagsFromString", "getHeapSnapshot", "setHeapSnapshotNearHeapLimit"]) lockFunction(v8, key, `v8.${key}`);
  syncBuiltinESMExports();
}
