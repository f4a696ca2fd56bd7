// The pool of sandboxed processes of one adapter binding: the least-loaded live process serves the next call.
import type { SandboxProcess } from "./adapter-sandbox.process.js";

/**
 * The processes of one binding: at most `max`, each serving up to `perProcess` calls at once.
 * `pick()` answers the least-loaded live process, starting a new one (with `spawn`) while all are at
 * capacity and fewer than `max` run; dead processes are dropped as they are found. `killAll()` kills
 * every process (their calls in flight reject).
 */
export class ProcessPool {
  private readonly processes: SandboxProcess[] = [];
  constructor(
    private readonly spawn: () => SandboxProcess,
    private readonly max: number,
    private readonly perProcess: number,
  ) {}

  pick(): SandboxProcess {
    for (let i = this.processes.length - 1; i >= 0; i--) if (this.processes[i]!.dead) this.processes.splice(i, 1);
    let best: SandboxProcess | undefined;
    for (const p of this.processes) if (best === undefined || p.load < best.load) best = p;
    if (best !== undefined && (best.load < this.perProcess || this.processes.length >= this.max)) return best;
    const fresh = this.spawn();
    this.processes.push(fresh);
    return fresh;
  }

  killAll(): void {
    for (const p of this.processes.splice(0)) p.kill("exited");
  }
}
