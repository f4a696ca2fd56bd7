// One sandboxed child process that runs an adapter's tasks, and how the host watches and kills it.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fstatSync, readdirSync, readFileSync } from "node:fs";
import type { Readable } from "node:stream";
import type { AdapterTerminationReason } from "@mosoo/effect-reconciliation/host";
import { ReadyLineSchema } from "./adapter-sandbox.replies.js";
import type { AdapterWorkerReply, AdapterWorkerTask } from "./adapter-sandbox.tasks.js";
import { MAX_ANSWER_UNITS, MAX_LOG_FIELDS_UNITS, MAX_LOGS_PER_CALL } from "./adapter-sandbox.tasks.js";

/**
 * Longest reply line read from a child (bytes): an answer and its log entries at their bounds, each
 * UTF-16 unit escaped to at most 6 bytes of JSON. A longer line kills the child (`crashed`).
 */
const MAX_REPLY_LINE_BYTES = 6 * (MAX_ANSWER_UNITS + MAX_LOGS_PER_CALL * (MAX_LOG_FIELDS_UNITS + 1_024));
/** Longest stdout/stderr line passed on (characters; the rest is cut) and most lines passed on per busy period (calls in flight without a pause). */
const MAX_OUTPUT_LINE_CHARS = 500;
const MAX_OUTPUT_LINES_PER_CALL = 50;
/** How often (ms) the host reads a busy child's CPU time and resident memory from `/proc`. */
const SAMPLE_EVERY_MS = 50;
/**
 * How long (ms) a reading of a child's CPU time is reused: one `/proc` clock tick (the counter moves in
 * 10 ms steps anyway). A reused reading is never later than the true one, so a call's start reads at
 * most the true CPU time (its measured use can only grow) and the CPU-time bound stays as strict.
 */
const CPU_READING_REUSE_MS = 10;
/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`, 100 on Linux), the page size (bytes), random bytes of a reply token. */
const CLOCK_TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;
const REPLY_TOKEN_BYTES = 24;
/** The child's stdio: stdin, stdout, stderr and the reply pipe (fds 0 to 3, set by the spawn itself). */
const CHILD_STDIO = ["pipe", "pipe", "pipe", "pipe"] as const;
/** `O_CLOEXEC` in the `flags:` line of `/proc/<pid>/fdinfo/<fd>` (octal 02000000 on Linux). */
const O_CLOEXEC = 0o2000000;

/**
 * One file descriptor this process holds that a child it spawns inherits: `fd` (its number, the same
 * in the child) and `id` (`"<dev>:<ino>"` of what it refers to, so the child closes it only when it
 * still is that file).
 */
interface InheritedFd {
  fd: number;
  id: string;
}

/**
 * The file descriptors a child spawned now inherits besides its stdio: every fd of this process from
 * `CHILD_STDIO.length` up that lacks close-on-exec (Node opens its own with it; these came from
 * whoever started the API, a shell's `200<secret.env` say), read from `/proc/self/fd` and
 * `/proc/self/fdinfo`. Empty where there is no `/proc` (not Linux). Throws nothing.
 */
function inheritedFds(): InheritedFd[] {
  let names: string[];
  try {
    names = readdirSync("/proc/self/fd");
  } catch {
    return [];
  }
  const found: InheritedFd[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd < CHILD_STDIO.length) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1];
      if (flags === undefined || (parseInt(flags, 8) & O_CLOEXEC) !== 0) continue;
      const stat = fstatSync(fd, { bigint: true });
      found.push({ fd, id: `${stat.dev}:${stat.ino}` });
    } catch {
      // closed meanwhile (the listing's own fd, say): nothing to inherit
    }
  }
  return found;
}

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
 * One call in flight in a child: how to settle it, the process's CPU time at its start (ms; undefined until
 * the process reported ready, or where there is no `/proc`), its CPU bound (ms) and the most calls the
 * process served at once while it ran (its bound is shared).
 */
interface PendingCall {
  resolve: (reply: AdapterWorkerReply) => void;
  reject: (error: SandboxCallFailed) => void;
  startCpuMs: number | undefined;
  cpuLimitMs: number;
  sharedBy: number;
}

/**
 * One child process (docs/DESIGN.md §4 "The sandbox is the operating system's"): spawned with
 * exactly `env`, under {@link sandboxNodeArgs}, stdin/stdout/stderr and a reply pipe (fd 3) all held
 * by the host. Its stdin's first line is a reply token (random, this process's own) and the
 * {@link inheritedFds} as JSON (`<token> [{"fd", "id"}, ...]`), which the child program reads, and
 * closes those fds, before any adapter code runs. Its first reply line, `<token> {"ready": true, "cpuMs": n}`,
 * comes before the adapter module is imported: a call's CPU time counts from there (the start-up of Node
 * and the bundle is the host's cost, not the adapter's; the call's signal bounds it). A reply line that
 * does not start with the token (adapter code
 * writing on fd 3 itself), that answers no call in flight or that is not JSON kills the process
 * (`crashed`), and so does the reply pipe closing. {@link call} runs tasks, several at once (calls of ONE binding's adapter only); the
 * host kills the process (SIGKILL) on a call's signal (that call: `timeout`), past a call's CPU-time
 * bound (`cpu_limit`: sampled while the call runs, and judged again when its answer arrives, so an answer
 * that came after the bound was passed is refused whatever the sampler saw) or the memory bound
 * (`out_of_memory`), or on a reply that breaks the protocol.
 * The bounds hold while the process is idle too (sampled all its life): past the memory bound, or
 * past one call's CPU bound of CPU time spent since its last call ended (work left running in a timer
 * after it answered), an idle process is killed and reported through `onIdleDeath`;
 * every call in flight then rejects (the others as `crashed`, unless the cause was the whole
 * process's), `dead` is true and the host replaces the process.
 */
export class SandboxProcess {
  private readonly child: ChildProcess;
  private readonly replyPrefix = `${randomBytes(REPLY_TOKEN_BYTES).toString("hex")} `;
  private nextId = 1;
  private readonly pending = new Map<number, PendingCall>();
  private sampler: ReturnType<typeof setInterval> | undefined;
  /** The process's CPU time (ms) when its last call ended; undefined before its first call. */
  private idleSinceCpuMs: number | undefined;
  private outputLines = 0;
  /** True while the task lines written this tick wait in stdin's buffer (see {@link send}). */
  private corked = false;
  /** The child's CPU time (ms) as last read, and when it was read (`performance.now()`, ms); see {@link cpuMs}. */
  private lastCpu: { atMs: number; cpuMs: number | undefined } | undefined;
  private exitInfo: string | undefined;
  /** True once the child wrote its ready line (start-up done, adapter module not yet imported). */
  private ready = false;
  private heapExhausted = false;
  private replyClosed = false; // the reply pipe ended: no call can be answered any more
  /** True once the process exited or was killed. */
  dead = false;

  /** Spawns the child (it answers tasks once its bundle is loaded). */
  constructor(private readonly opts: SandboxProcessOptions) {
    // listed in the same tick as the spawn: what the child inherits (Node opens its own fds close-on-exec)
    const inherited = inheritedFds();
    this.child = spawn(process.execPath, [...sandboxNodeArgs(opts), opts.bundleFile, JSON.stringify(opts.packageInfo)], {
      env: { ...opts.env },
      stdio: [...CHILD_STDIO],
      cwd: "/",
    });
    this.child.on("error", () => this.end("crashed", "the adapter process could not be started"));
    this.child.on("exit", (code, signal) => this.end(code === 0 && signal === null ? "exited" : "crashed", `exit ${signal ?? code}`));
    this.child.stdin?.on("error", () => undefined);
    this.child.stdin?.write(`${this.replyPrefix}${JSON.stringify(inherited)}\n`);
    readLines(this.child.stdout!, MAX_OUTPUT_LINE_CHARS, (line) => this.output("stdout", line));
    readLines(this.child.stderr!, MAX_OUTPUT_LINE_CHARS, (line) => this.output("stderr", line));
    const replies = this.child.stdio[3] as Readable;
    readLines(replies, this.replyPrefix.length + MAX_REPLY_LINE_BYTES, (line, cut) => this.reply(line, cut));
    // the child's end closed (it exits, or adapter code closed fd 3): no reply can come any more
    replies.on("end", () => ((this.replyClosed = true), this.pending.size > 0 && this.kill("crashed")));
    this.sampler = setInterval(() => this.sample(), SAMPLE_EVERY_MS);
    this.sampler.unref();
  }

  /** Calls in flight. */
  get load(): number {
    return this.pending.size;
  }

  /**
   * Runs `task` in the child, at most `cpuLimitMs` of CPU time (ms, default the option's): the
   * process's CPU time while the call runs, divided by the most calls it served at once meanwhile;
   * resolves with its reply. Rejects with {@link SandboxCallFailed}
   * (`timeout` when `signal` aborted, `cpu_limit`, `out_of_memory`, `exited`, `crashed`); the child
   * is then dead.
   */
  call(task: AdapterWorkerTask, signal: AbortSignal, cpuLimitMs = this.opts.cpuLimitMs): Promise<AdapterWorkerReply> {
    if (this.replyClosed) this.kill("crashed");
    if (this.dead) return Promise.reject(new SandboxCallFailed("crashed", "the adapter process is gone"));
    const id = this.nextId++;
    if (this.pending.size === 0) this.outputLines = 0;
    return new Promise<AdapterWorkerReply>((resolve, reject) => {
      const onAbort = (): void => {
        if (signal.aborted) this.kill("timeout", id);
      };
      const settle = (): void => {
        signal.removeEventListener("abort", onAbort);
        this.pending.delete(id);
        if (this.pending.size === 0) this.idleSinceCpuMs = this.cpuMs();
      };
      this.pending.set(id, {
        resolve: (reply) => (settle(), resolve(reply)),
        reject: (error) => (settle(), reject(error)),
        // before the ready line the CPU time is the process's start-up, not this call's: counted from ready on
        startCpuMs: this.ready ? this.cpuMs() : undefined,
        cpuLimitMs,
        sharedBy: this.pending.size + 1,
      });
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort);
      this.send(`${JSON.stringify({ id, task })}\n`);
    });
  }

  /**
   * Writes one task line to the child's stdin. The lines of the calls started in one turn of the event
   * loop (a burst of lookups) go out together, in one write (`cork` here, `uncork` on the next tick),
   * rather than one pipe write, and one wake-up of the child, per call.
   */
  private send(line: string): void {
    const stdin = this.child.stdin!;
    if (!this.corked) {
      this.corked = true;
      stdin.cork();
      process.nextTick(() => {
        this.corked = false;
        stdin.uncork();
      });
    }
    stdin.write(line);
  }

  /**
   * Kills the child (SIGKILL) for `reason`; the call `callId` (when given) rejects with it, every
   * other call in flight with `crashed` (or with `reason` when no call is named). Idempotent.
   */
  kill(reason: AdapterTerminationReason = "exited", callId?: number): void {
    if (this.dead) return;
    this.child.kill("SIGKILL");
    this.fail(reason, "killed", callId);
  }

  private sample(): void {
    if (this.dead) return;
    // a fresh reading: the bounds are judged on the CPU time as it is now, never on a reused one
    const cpu = this.cpuMs(true);
    if (this.pending.size === 0) return this.sampleIdle(cpu);
    // the process's CPU time while a call ran, shared by the calls it served at once (a spinning call
    // blocks the others, so its share grows at a core's speed; the wall-time bound ends it anyway)
    if (cpu !== undefined)
      for (const [id, call] of this.pending) {
        call.sharedBy = Math.max(call.sharedBy, this.pending.size);
        if (pastCpuBound(call, cpu)) return this.kill("cpu_limit", id);
      }
    const rss = this.rssBytes();
    if (rss !== undefined && rss > this.opts.rssLimitBytes) this.kill("out_of_memory");
  }

  /** The bounds of an idle process: memory, and CPU time since its last call ended (see the class). */
  private sampleIdle(cpu: number | undefined): void {
    const rss = this.rssBytes();
    if (rss !== undefined && rss > this.opts.rssLimitBytes) return this.killIdle("out_of_memory");
    if (cpu !== undefined && this.idleSinceCpuMs !== undefined && cpu - this.idleSinceCpuMs > this.opts.cpuLimitMs)
      this.killIdle("cpu_limit");
  }

  private killIdle(reason: AdapterTerminationReason): void {
    this.child.kill("SIGKILL");
    this.end(reason, "killed while idle");
  }

  private end(reason: AdapterTerminationReason, info: string): void {
    if (this.dead) return;
    if (this.pending.size === 0) {
      this.dead = true;
      this.exitInfo = info;
      if (this.sampler) clearInterval(this.sampler);
      this.sampler = undefined;
      return this.opts.onIdleDeath(this.heapExhausted ? "out_of_memory" : reason);
    }
    this.fail(reason, info, undefined);
  }

  private fail(reason: AdapterTerminationReason, info: string, callId: number | undefined): void {
    this.dead = true;
    this.exitInfo ??= info;
    const why = this.heapExhausted ? "out_of_memory" : reason;
    for (const [id, call] of [...this.pending]) {
      const own = callId === undefined || id === callId;
      const failed = own ? why : "crashed";
      call.reject(
        new SandboxCallFailed(
          failed,
          own ? `adapter process ${why} (${this.exitInfo})` : `adapter process killed with another call (${why})`,
        ),
      );
    }
    if (this.sampler) clearInterval(this.sampler);
    this.sampler = undefined;
  }

  private reply(line: string, cut: boolean): void {
    // a line without this process's token was not written by the child program (adapter code forged it)
    if (cut || !line.startsWith(this.replyPrefix)) return this.kill("crashed");
    let parsed: unknown;
    try {
      parsed = JSON.parse(line.slice(this.replyPrefix.length));
    } catch {
      return this.kill("crashed");
    }
    if (typeof parsed === "object" && parsed !== null && "ready" in parsed) return this.onReady(parsed);
    const { id, reply } = (parsed ?? {}) as { id?: unknown; reply?: unknown };
    const call = typeof id === "number" ? this.pending.get(id) : undefined;
    // a line that answers no call in flight (adapter code writing to fd 3) breaks the protocol
    if (call === undefined || typeof reply !== "object" || reply === null) return this.kill("crashed");
    // the bound is judged at the answer too, not only by the sampler: a call that used more than its CPU time
    // is refused whether or not a sample fell inside it (a reading at most CPU_READING_REUSE_MS old)
    const cpu = this.cpuMs();
    if (cpu !== undefined && pastCpuBound(call, cpu)) return this.kill("cpu_limit", id as number);
    call.resolve(reply as AdapterWorkerReply);
  }

  /**
   * The child's ready line ({@link ReadyLineSchema}; once, and a second or a malformed one breaks the protocol):
   * the calls waiting count their CPU time from the child's CPU time when it wrote the line, or from the host's
   * reading now if that is lower. The child's figure is read before any adapter code runs; the host's alone
   * would miss what the adapter's import used while this event loop was busy and the line waited in the pipe.
   */
  private onReady(parsed: object): void {
    const line = ReadyLineSchema.safeParse(parsed);
    if (this.ready || !line.success) return this.kill("crashed");
    this.ready = true;
    const read = this.cpuMs(true);
    const cpu = read === undefined ? undefined : Math.min(read, line.data.cpuMs);
    for (const call of this.pending.values()) call.startCpuMs ??= cpu;
  }

  private output(stream: "stdout" | "stderr", line: string): void {
    // V8's own last words at the heap limit (only a label: it decides nothing but the reason's name)
    if (stream === "stderr" && line.includes("JavaScript heap out of memory")) this.heapExhausted = true;
    this.outputLines += 1;
    if (this.outputLines <= MAX_OUTPUT_LINES_PER_CALL) this.opts.onOutput(stream, line);
    else if (this.outputLines === MAX_OUTPUT_LINES_PER_CALL + 1)
      this.opts.onOutput(stream, "[further lines dropped until the process is idle]");
  }

  /**
   * CPU time (user + system, ms) of the child from `/proc/<pid>/stat`, or undefined where there is no
   * `/proc`. Unless `fresh`, a reading less than {@link CPU_READING_REUSE_MS} old is reused (the calls
   * of a burst start and end within one `/proc` tick; used only where an earlier reading makes the
   * bound stricter: a call's start, the start of an idle period).
   */
  private cpuMs(fresh = false): number | undefined {
    const nowMs = performance.now();
    if (!fresh && this.lastCpu !== undefined && nowMs - this.lastCpu.atMs < CPU_READING_REUSE_MS) return this.lastCpu.cpuMs;
    const cpuMs = this.readCpuMs();
    this.lastCpu = { atMs: nowMs, cpuMs };
    return cpuMs;
  }

  private readCpuMs(): number | undefined {
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

/**
 * Whether `call` has used more than its CPU-time bound by the child's CPU time `cpuMs` (ms): the time since
 * its start (none before the ready line) over `cpuLimitMs` times the most calls the process served at once.
 */
function pastCpuBound(call: { startCpuMs: number | undefined; cpuLimitMs: number; sharedBy: number }, cpuMs: number): boolean {
  return call.startCpuMs !== undefined && cpuMs - call.startCpuMs > call.cpuLimitMs * call.sharedBy;
}
