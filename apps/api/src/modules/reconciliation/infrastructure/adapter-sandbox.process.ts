// One sandboxed child process that runs an adapter's tasks, and how the host watches and kills it.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import type { Readable } from "node:stream";
import type { AdapterTerminationReason } from "@mosoo/effect-reconciliation";
import type { AdapterWorkerReply, AdapterWorkerTask } from "./adapter-sandbox.tasks.js";
import { MAX_ANSWER_UNITS, MAX_LOG_FIELDS_UNITS, MAX_LOGS_PER_CALL } from "./adapter-sandbox.tasks.js";

/**
 * Longest reply line read from a child (bytes): an answer and its log entries at their bounds, each
 * UTF-16 unit escaped to at most 6 bytes of JSON. A longer line kills the child (`crashed`).
 */
const MAX_REPLY_LINE_BYTES = 6 * (MAX_ANSWER_UNITS + MAX_LOGS_PER_CALL * (MAX_LOG_FIELDS_UNITS + 1_024));
/** Longest stdout/stderr line passed on (characters; the rest is cut) and most lines passed on per call. */
const MAX_OUTPUT_LINE_CHARS = 500;
const MAX_OUTPUT_LINES_PER_CALL = 50;
/** How often (ms) the host reads a busy child's CPU time and resident memory from `/proc`. */
const SAMPLE_EVERY_MS = 50;
/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`, 100 on Linux) and the page size (bytes). */
const CLOCK_TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;

/**
 * How to start a child: `bundleFile` (its program), `readable` (the only paths it may read),
 * `env` (its whole environment), `packageInfo` (name/version handed to it), `heapMb` (V8 old-space
 * limit, MB), `rssLimitBytes` (resident memory bound, bytes), `cpuLimitMs` (CPU time per call, ms),
 * `onIdleDeath(reason)`, and `onOutput(stream, line)`, called with each stdout/stderr line (cut to 500 characters, at most
 * 50 per call, the rest counted in one `[n lines dropped]` line).
 */
export interface SandboxProcessOptions {
  bundleFile: string;
  readable: readonly string[];
  env: Readonly<Record<string, string>>;
  packageInfo: { name: string | null; version: string | null };
  heapMb: number;
  rssLimitBytes: number;
  cpuLimitMs: number;
  onOutput: (stream: "stdout" | "stderr", line: string) => void;
  /** Called once when the process dies while no call is running (a throwing timer left behind, `process.exit` from a timer). */
  onIdleDeath: (reason: AdapterTerminationReason) => void;
}

/** A call's end when the child did not answer: how it ended and one line. */
export class SandboxCallFailed extends Error {
  /** @param reason the termination reason; @param message one line. */
  constructor(
    readonly reason: AdapterTerminationReason,
    message: string,
  ) {
    super(message);
  }
}

/** The node arguments of a sandboxed child (Node 20's permission model: reads only `readable`; no writes, child processes, workers, addons or WASI). */
export function sandboxNodeArgs(opts: Pick<SandboxProcessOptions, "readable" | "heapMb">): string[] {
  return [
    "--experimental-permission",
    ...opts.readable.map((path) => `--allow-fs-read=${path}`),
    `--max-old-space-size=${opts.heapMb}`,
    "--disable-warning=ExperimentalWarning",
    "--disable-proto=delete",
  ];
}

/**
 * One child process (docs/DESIGN.md §4 "The sandbox is the operating system's"): spawned with
 * exactly `env`, under {@link sandboxNodeArgs}, stdin/stdout/stderr and a reply pipe (fd 3) all held
 * by the host. {@link call} runs one task at a time; the host kills it (SIGKILL) on the call's signal
 * (`timeout`), past the CPU-time or memory bound (`cpu_limit`, `out_of_memory`), or on a reply line
 * over its bound; `dead` is then true and the pool replaces it.
 */
export class SandboxProcess {
  private readonly child: ChildProcess;
  private nextId = 1;
  private pending: { id: number; resolve: (reply: AdapterWorkerReply) => void; reject: (error: SandboxCallFailed) => void } | undefined;
  private outputLines = 0;
  private killedFor: AdapterTerminationReason | undefined;
  private exitInfo: string | undefined;
  private heapExhausted = false;
  /** True once the process exited or was killed. */
  dead = false;

  /** Spawns the child (it answers tasks once its bundle is loaded). */
  constructor(private readonly opts: SandboxProcessOptions) {
    this.child = spawn(process.execPath, [...sandboxNodeArgs(opts), opts.bundleFile, JSON.stringify(opts.packageInfo)], {
      env: { ...opts.env },
      stdio: ["pipe", "pipe", "pipe", "pipe"],
      cwd: "/",
    });
    this.child.on("error", () => this.end("crashed", "the adapter process could not be started"));
    this.child.on("exit", (code, signal) => this.end(code === 0 && signal === null ? "exited" : "crashed", `exit ${signal ?? code}`));
    this.child.stdin?.on("error", () => undefined);
    readLines(this.child.stdout!, MAX_OUTPUT_LINE_CHARS, (line) => this.output("stdout", line));
    readLines(this.child.stderr!, MAX_OUTPUT_LINE_CHARS, (line) => this.output("stderr", line));
    readLines(this.child.stdio[3] as Readable, MAX_REPLY_LINE_BYTES, (line, cut) => this.reply(line, cut));
  }

  /** The child's process id (for measurements). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Runs `task` in the child, at most `cpuLimitMs` of CPU time (ms, default the option's); resolves with its reply. Rejects with {@link SandboxCallFailed}
   * (`timeout` when `signal` aborted, `cpu_limit`, `out_of_memory`, `exited`, `crashed`); the child is
   * then dead. One call at a time.
   */
  call(task: AdapterWorkerTask, signal: AbortSignal, cpuLimitMs = this.opts.cpuLimitMs): Promise<AdapterWorkerReply> {
    if (this.dead) return Promise.reject(new SandboxCallFailed("crashed", "the adapter process is gone"));
    const id = this.nextId++;
    this.outputLines = 0;
    const startCpu = this.cpuMs();
    return new Promise<AdapterWorkerReply>((resolve, reject) => {
      const onAbort = (): void => this.kill("timeout");
      const sampler = setInterval(() => this.sample(startCpu, cpuLimitMs), SAMPLE_EVERY_MS);
      const done = (): void => {
        clearInterval(sampler);
        signal.removeEventListener("abort", onAbort);
        this.pending = undefined;
      };
      this.pending = {
        id,
        resolve: (reply) => (done(), resolve(reply)),
        reject: (error) => (done(), reject(error)),
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      this.child.stdin!.write(`${JSON.stringify({ id, task })}\n`);
    });
  }

  /** Kills the child (SIGKILL) for `reason`; a pending call rejects with it. Idempotent. */
  kill(reason: AdapterTerminationReason = "exited"): void {
    if (this.dead) return;
    this.killedFor ??= reason;
    this.child.kill("SIGKILL");
    this.end(reason, "killed");
  }

  private sample(startCpu: number | undefined, cpuLimitMs: number): void {
    const cpu = this.cpuMs();
    if (startCpu !== undefined && cpu !== undefined && cpu - startCpu > cpuLimitMs) return this.kill("cpu_limit");
    const rss = this.rssBytes();
    if (rss !== undefined && rss > this.opts.rssLimitBytes) this.kill("out_of_memory");
  }

  private end(reason: AdapterTerminationReason, info: string): void {
    this.exitInfo ??= info;
    if (this.dead && this.pending === undefined) return;
    this.dead = true;
    const why = this.killedFor ?? (this.heapExhausted ? "out_of_memory" : reason);
    const pending = this.pending;
    if (pending) pending.reject(new SandboxCallFailed(why, `adapter process ${why} (${this.exitInfo})`));
    else if (this.killedFor === undefined) this.opts.onIdleDeath(why);
  }

  private reply(line: string, cut: boolean): void {
    if (cut) return this.kill("crashed");
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return this.kill("crashed");
    }
    const { id, reply } = (parsed ?? {}) as { id?: unknown; reply?: unknown };
    // a line that is not the answer to the pending call (adapter code writing to fd 3) breaks the protocol
    if (this.pending === undefined || id !== this.pending.id || typeof reply !== "object" || reply === null) return this.kill("crashed");
    this.pending.resolve(reply as AdapterWorkerReply);
  }

  private output(stream: "stdout" | "stderr", line: string): void {
    // V8's own last words at the heap limit (only a label: it decides nothing but the reason's name)
    if (stream === "stderr" && line.includes("JavaScript heap out of memory")) this.heapExhausted = true;
    this.outputLines += 1;
    if (this.outputLines <= MAX_OUTPUT_LINES_PER_CALL) this.opts.onOutput(stream, line);
    else if (this.outputLines === MAX_OUTPUT_LINES_PER_CALL + 1) this.opts.onOutput(stream, "[further lines of this call dropped]");
  }

  /** CPU time (user + system, ms) of the child from `/proc/<pid>/stat`, or undefined where there is no `/proc`. */
  private cpuMs(): number | undefined {
    try {
      const stat = readFileSync(`/proc/${this.child.pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
    } catch {
      return undefined;
    }
  }

  /** Resident memory (bytes) of the child from `/proc/<pid>/statm`, or undefined. */
  rssBytes(): number | undefined {
    try {
      return Number(readFileSync(`/proc/${this.child.pid}/statm`, "utf8").split(" ")[1]) * PAGE_BYTES;
    } catch {
      return undefined;
    }
  }
}

/**
 * Calls `onLine(line, cut)` for each `\n`-terminated line of `stream`; a line longer than `max`
 * characters is passed cut to `max` with `cut = true`, and the rest of it is skipped (never buffered).
 */
function readLines(stream: Readable, max: number, onLine: (line: string, cut: boolean) => void): void {
  stream.setEncoding("utf8");
  let buffer = "";
  let skipping = false;
  stream.on("data", (chunk: string) => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf("\n", start);
      const piece = chunk.slice(start, nl < 0 ? undefined : nl);
      if (!skipping) {
        buffer += piece;
        if (buffer.length > max) {
          onLine(buffer.slice(0, max), true);
          buffer = "";
          skipping = true;
        }
      }
      if (nl < 0) break;
      if (!skipping) onLine(buffer, false);
      buffer = "";
      skipping = false;
      start = nl + 1;
    }
  });
  stream.on("error", () => undefined);
}
