// The main program of an adapter's sandboxed child process (bundled per binding with the adapter module).
import * as fs from "node:fs";
import { createInterface } from "node:readline";
import { ReconciliationError } from "@mosoo/effect-reconciliation/host";
import { installAdapterGuard } from "./adapter-sandbox.guard.js";
import { MAX_RAW_TEXT_CHARS, runAdapterTask, type AdapterWorkerTask, type SandboxedModule } from "./adapter-sandbox.tasks.js";

// Evaluated before the adapter module (the bundle imports this file first): the guard closes
// signals to other processes and the other routes it lists before any adapter code runs.
installAdapterGuard();

/** Fd of the reply channel (a pipe the host reads; stdout and stderr are the adapter's own). */
const REPLY_FD = 3;
/** Longest first line read from stdin (characters): the reply token and the list of inherited fds. */
const MAX_FIRST_LINE_CHARS = 1 << 20;

// Taken now, before adapter code can replace them: `fs`'s ES-module exports are live bindings that
// `syncBuiltinESMExports()` would repoint at a patched `fs.writeSync`.
const { closeSync, fstatSync, readSync, writeSync } = fs;

/**
 * Stdin's first line, `<token> <inherited fds as JSON>`, read byte by byte before any adapter code
 * runs (an unpooled buffer: a pooled one would leave the token in memory that `Buffer.allocUnsafe`
 * hands to adapter code).
 */
const firstLine = ((): string => {
  const byte = Buffer.alloc(1);
  let line = "";
  while (line.length < MAX_FIRST_LINE_CHARS && readSync(0, byte, 0, 1, null) === 1 && byte[0] !== 0x0a)
    line += String.fromCharCode(byte[0]!);
  return line;
})();

/**
 * The reply token: the first word of stdin's first line, kept only in this module's scope. Every
 * reply line starts with it; a line the adapter writes on fd 3 itself cannot (it never sees the
 * token), and the host kills a process that sends a line without it.
 */
const replyToken = firstLine.split(" ", 1)[0]!;

/**
 * Closes the file descriptors this process inherited besides its stdio (the rest of stdin's first
 * line: `[{"fd": n, "id": "<dev>:<ino>"}, ...]`, listed by the host when it spawned this process):
 * fds the API held without close-on-exec, which adapter code could otherwise read and write with
 * `fs.readSync`/`fs.writeSync` (the permission model does not check operations on an open fd). Each
 * is closed only when it is above the reply pipe and still refers to the file the host saw. Done
 * before any adapter code loads; throws nothing.
 */
((): void => {
  let listed: unknown;
  try {
    listed = JSON.parse(firstLine.slice(replyToken.length + 1) || "[]");
  } catch {
    return;
  }
  if (!Array.isArray(listed)) return;
  for (const entry of listed as Array<{ fd?: unknown; id?: unknown }>) {
    if (typeof entry.fd !== "number" || !Number.isInteger(entry.fd) || entry.fd <= REPLY_FD) continue;
    try {
      const stat = fstatSync(entry.fd, { bigint: true });
      if (`${stat.dev}:${stat.ino}` === entry.id) closeSync(entry.fd);
    } catch {
      // not open here: nothing to close
    }
  }
})();

/**
 * Writes `<token> <line>` to the reply channel: the string goes to `fs.writeSync` as it is (Node writes
 * it from native code), never through a Buffer, a stream or any method adapter code could have
 * replaced by then. The channel is a blocking pipe: the write is whole (a torn line is a protocol
 * break the host answers by killing the process).
 */
function writeReply(line: string): void {
  writeSync(REPLY_FD, `${replyToken} ${line}`);
}

/**
 * Serves the host (the sandbox: `SandboxProcess` in adapter-sandbox.process.ts): reads one task per
 * line from stdin (`{"id": n, "task": AdapterWorkerTask}`), runs it with {@link runAdapterTask}
 * against the adapter module (several at once, as they come), and writes `<token> {"id": n, "reply": AdapterWorkerReply}`
 * as one line to fd 3 (the token starts stdin's first line, read before the adapter module is imported).
 * Before the adapter module is imported it writes `<token> {"ready": true, "cpuMs": n}` (this process's CPU
 * time then, ms): the host counts a call's CPU time from there, since the process's own start-up is not the
 * adapter's. When stdin ends (the host closed it, or died) the process exits. `importAdapter` imports the
 * adapter module (bundled in); a throw there answers every task `refused` (`adapter.load_failed`);
 * `packageName` / `packageVersion` come from the host (it read the package before bundling).
 */
export function serveAdapterTasks(importAdapter: () => Promise<Record<string, unknown>>): void {
  // the process is up (Node, the bundle's parse, the guard): what follows is adapter code, and its CPU time counts
  // from this process's own CPU time now (ms), read before any adapter code runs (the host may read the line late)
  const { user, system } = process.cpuUsage();
  writeReply(`${JSON.stringify({ ready: true, cpuMs: (user + system) / 1000 })}\n`);
  const packageInfo = JSON.parse(process.argv[2] ?? "{}") as { name?: unknown; version?: unknown };
  const loading = importAdapter().then(
    (namespace): SandboxedModule => ({
      namespace,
      packageName: typeof packageInfo.name === "string" ? packageInfo.name : null,
      packageVersion: typeof packageInfo.version === "string" ? packageInfo.version : null,
    }),
    (error: unknown) => error,
  );
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    void (async () => {
      const { id, task } = JSON.parse(line) as { id: number; task: AdapterWorkerTask };
      const module = await loading;
      const reply =
        "namespace" in (module as object)
          ? await runAdapterTask(module as SandboxedModule, task)
          : ({ kind: "refused", code: "adapter.load_failed", message: loadFailure(task, module) } as const);
      writeReply(`${JSON.stringify({ id, reply })}\n`);
    })();
  });
  lines.on("close", () => process.exit(0));
}

/** Why an adapter module threw while it was imported, raw (at most {@link MAX_RAW_TEXT_CHARS} characters of the error: the host redacts, then flattens and cuts). */
function loadFailure(task: AdapterWorkerTask, error: unknown): string {
  let text: string;
  try {
    text = ReconciliationError.is(error) ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  } catch {
    text = "unprintable thrown value";
  }
  return `adapter package "${task.source.module}" failed to load: ${text.slice(0, MAX_RAW_TEXT_CHARS)}`;
}
