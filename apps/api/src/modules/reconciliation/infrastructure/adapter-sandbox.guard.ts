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
 * - Unix-domain sockets (the permission model checks neither connecting to one nor creating one; a
 *   socket of the API's OS user, PostgreSQL's with peer authentication say, would accept the adapter
 *   as that user): `net.Socket.prototype.connect` with a `path` (every client route goes through it:
 *   `net.connect`/`createConnection`, `tls.connect`, `http.request({socketPath})`, fetch dispatchers)
 *   and `net.Server.prototype.listen` on a path (it would create a socket file);
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

/** `net` as the guard uses it: its exported argument normalizer (`[options, callback]`) included. */
type NetModule = typeof import("node:net") & { _normalizeArgs: (args: unknown[]) => [Record<string, unknown>, unknown] };
/** The options `net.Server.prototype.listen` reads, copied one read each (a getter cannot answer twice). */
const LISTEN_KEYS = ["port", "host", "path", "backlog", "exclusive", "readableAll", "writableAll", "ipv6Only", "signal", "fd"] as const;

/**
 * Refuses Unix-domain sockets (see the module's comment): `Socket.prototype.connect` and
 * `Server.prototype.listen` are replaced by versions that read the caller's options ONCE into a
 * plain copy, refuse it when it names a `path`, and hand the copy (never the caller's object) to
 * the original; a listen on a handle object is passed on without its handle (not an adapter's use).
 */
function refuseUnixSockets(net: NetModule): void {
  const normalize = net._normalizeArgs;
  const connect = net.Socket.prototype.connect as (...args: unknown[]) => unknown;
  const listen = net.Server.prototype.listen as (...args: unknown[]) => unknown;
  const name = "a Unix-domain socket";
  Object.defineProperty(net.Socket.prototype, "connect", {
    value: function connectNoUnixSocket(this: unknown, ...args: unknown[]): unknown {
      const [given, callback] = Array.isArray(args[0]) ? (args[0] as [Record<string, unknown>, unknown]) : normalize(args);
      const options = { ...given };
      if (options["path"]) throw refusal(name);
      return connect.call(this, options, callback);
    },
    writable: false,
    configurable: false,
  });
  Object.defineProperty(net.Server.prototype, "listen", {
    value: function listenNoUnixSocket(this: unknown, ...args: unknown[]): unknown {
      const [given, callback] = normalize(args);
      const options: Record<string, unknown> = {};
      for (const key of LISTEN_KEYS) options[key] = given[key];
      if (options["path"]) throw refusal(name);
      return listen.call(this, options, ...(typeof callback === "function" ? [callback] : []));
    },
    writable: false,
    configurable: false,
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
  refuseUnixSockets(require("node:net") as NetModule);
  syncBuiltinESMExports();
}
