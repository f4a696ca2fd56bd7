// Runs one bench scenario in a child process (`scenario.main.ts`), optionally under `node --cpu-prof`, and reads its result file.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { entryFile } from "../src/platform/compiled-entry.js";
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

/** Runs one scenario in a child process and returns its parsed result; a non-zero exit throws `<label>: child exited with <code>`. */
export async function child<T>(label: string, scenario: string, options: object): Promise<T> {
  tmp ??= mkdtempSync(join(tmpdir(), "mosoo-bench-results-"));
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
  console.error(`▶ ${label}`);
  const t0 = performance.now();
  const code = await new Promise<number | null>((resolve, reject) => {
    const p = spawn(process.execPath, args, { stdio: ["ignore", "inherit", "inherit"] });
    p.on("error", reject);
    p.on("exit", resolve);
  });
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

/** Removes the children's result files (their temp folder, if a child ran). */
export function removeChildResults(): void {
  if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
}
