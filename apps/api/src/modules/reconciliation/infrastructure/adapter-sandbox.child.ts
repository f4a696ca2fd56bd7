// The main program of an adapter's sandboxed child process (bundled per binding with the adapter module).
import { createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import { ReconciliationError } from "@mosoo/effect-reconciliation/host";
import { installAdapterGuard } from "./adapter-sandbox.guard.js";
import { runAdapterTask, type AdapterWorkerTask, type SandboxedModule } from "./adapter-sandbox.tasks.js";

// Evaluated before the adapter module (the bundle imports this file first): the guard closes
// signals to other processes and the other routes it lists before any adapter code runs.
installAdapterGuard();

/** Fd of the reply channel (a pipe the host reads; stdout and stderr are the adapter's own). */
const REPLY_FD = 3;

/**
 * Serves the host (docs/DESIGN.md §4 "The sandbox is the operating system's"): reads one task per
 * line from stdin (`{"id": n, "task": AdapterWorkerTask}`), runs it with {@link runAdapterTask}
 * against the adapter module (several at once, as they come), and writes `{"id": n, "reply": AdapterWorkerReply}` as one line to
 * fd 3. When stdin ends (the host closed it, or died) the process exits. `importAdapter` imports the
 * adapter module (bundled in); a throw there answers every task `refused` (`adapter.load_failed`);
 * `packageName` / `packageVersion` come from the host (it read the package before bundling).
 */
export function serveAdapterTasks(importAdapter: () => Promise<Record<string, unknown>>): void {
  const packageInfo = JSON.parse(process.argv[2] ?? "{}") as { name?: unknown; version?: unknown };
  const loading = importAdapter().then(
    (namespace): SandboxedModule => ({
      namespace,
      packageName: typeof packageInfo.name === "string" ? packageInfo.name : null,
      packageVersion: typeof packageInfo.version === "string" ? packageInfo.version : null,
    }),
    (error: unknown) => error,
  );
  const replies = createWriteStream("", { fd: REPLY_FD });
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    void (async () => {
      const { id, task } = JSON.parse(line) as { id: number; task: AdapterWorkerTask };
      const module = await loading;
      const reply =
        "namespace" in (module as object)
          ? await runAdapterTask(module as SandboxedModule, task)
          : ({ kind: "refused", code: "adapter.load_failed", message: loadFailure(task, module) } as const);
      replies.write(`${JSON.stringify({ id, reply })}\n`);
    })();
  });
  lines.on("close", () => process.exit(0));
}

/** The one line of an adapter module that threw while it was imported (at most 500 characters). */
function loadFailure(task: AdapterWorkerTask, error: unknown): string {
  let text: string;
  try {
    text = ReconciliationError.is(error) ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  } catch {
    text = "unprintable thrown value";
  }
  const line = `adapter package "${task.source.module}" failed to load: ${text.slice(0, 2_000).replace(/\s+/g, " ").trim()}`;
  return line.length > 500 ? `${line.slice(0, 499)}…` : line;
}
