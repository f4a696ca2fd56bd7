// A child process whose output lines are kept and parsed, so tests can wait for a log line and then kill it with a real signal.
import { execa, type ResultPromise } from "execa";
import { createInterface } from "node:readline";

/** One JSON log line of a child process (pino or the provider's ready line); `raw` keeps the text. */
export interface ProcessLine {
  raw: string;
  json: Record<string, unknown> | null;
}

/** Options of {@link startManagedProcess}: a display `name`, the command, its `cwd` and extra `env`. */
export interface ManagedProcessOptions {
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env?: Record<string, string>;
}

/**
 * A child process whose stdout/stderr lines are kept (and parsed as JSON where they are JSON),
 * so tests and the demo can wait for a log line, then kill it with a real signal.
 */
export class ManagedProcess {
  readonly lines: ProcessLine[] = [];
  private readonly child: ResultPromise;
  private waiters: Array<() => void> = [];
  /** Resolves with the exit code (or null) and signal once the process ended. */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;

  constructor(readonly opts: ManagedProcessOptions) {
    this.child = execa(opts.command, opts.args, { cwd: opts.cwd, env: opts.env ?? {}, reject: false, buffer: false, stdin: "ignore" });
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on("line", (raw) => {
        let json: Record<string, unknown> | null = null;
        try {
          const v: unknown = JSON.parse(raw);
          if (v && typeof v === "object") json = v as Record<string, unknown>;
        } catch {
          json = null;
        }
        this.lines.push({ raw, json });
        const ws = this.waiters;
        this.waiters = [];
        ws.forEach((w) => w());
      });
    }
    this.exited = this.child.then((r) => ({ code: r.exitCode ?? null, signal: r.signal ?? null }));
    void this.exited.then(() => {
      const ws = this.waiters;
      this.waiters = [];
      ws.forEach((w) => w());
    });
  }

  /** The OS process id. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Resolves with the first JSON line (already seen or to come) that matches `predicate`.
   * @throws Error `e2e.timeout` after `timeoutMs` (ms), or `e2e.process_exited` if the process ends first; both include the last lines seen.
   */
  async waitForLine(
    predicate: (json: Record<string, unknown>) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    let ended = false;
    void this.exited.then(() => (ended = true));
    for (;;) {
      const hit = this.lines.find((l) => l.json && predicate(l.json));
      if (hit?.json) return hit.json;
      if (ended) throw new Error(`e2e.process_exited: ${this.opts.name} ended before ${what}; last lines:\n${this.tail()}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`e2e.timeout: ${this.opts.name} did not log ${what} within ${timeoutMs} ms; last lines:\n${this.tail()}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 250));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** The last `n` output lines, for error messages. */
  tail(n = 15): string {
    return this.lines
      .slice(-n)
      .map((l) => `  [${this.opts.name}] ${l.raw}`)
      .join("\n");
  }

  /** Sends `signal` and waits until the process is gone. */
  async kill(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}
