// The bench stopped by SIGTERM while a scenario child fills a history store: the child ends too, and no temp file is left.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../bench/run-benchmarks.main.ts", import.meta.url));
const temp = mkdtempSync(join(tmpdir(), "mosoo-bench-signal-"));

afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** Whether process `pid` still exists (signal 0 probes without signalling). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once `pid` no longer exists, polling every 50 ms; rejects after `limitMs` (a generous bound, not a timing assertion). */
async function gone(pid: number, limitMs: number): Promise<void> {
  for (const t0 = Date.now(); alive(pid);) {
    if (Date.now() - t0 > limitMs) throw new Error(`process ${pid} still running after ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("npm run bench stopped by a signal", () => {
  it("ends the scenario child mid-fill, removes its temp files and exits 143", async () => {
    // A history far too big to finish: the child is in its synchronous fill when the signal comes.
    const bench = spawn(
      process.execPath,
      ["--import", "tsx", MAIN, "--only", "history", "--store", "sqlite", "--history-effects", "50000000"],
      { env: { ...process.env, TMPDIR: temp, MOSOO_BENCH_QUICK: "" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    const childPid = await new Promise<number>((resolve, reject) => {
      bench.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        // the child says it begins filling: from here on it runs its synchronous fill loop
        const pid = /▶ history[^\n]*\(pid (\d+)\)/.exec(stderr);
        if (pid && /history: filling 50000000 effects/.test(stderr)) resolve(Number(pid[1]));
      });
      bench.on("exit", (code) => reject(new Error(`bench exited (${code}) before the fill began:\n${stderr}`)));
    });
    expect(alive(childPid)).toBe(true);
    const exited = new Promise<number | null>((resolve) => bench.on("exit", resolve));
    bench.kill("SIGTERM");
    expect(await exited).toBe(143);
    await gone(childPid, 30_000);
    expect(stderr).toMatch(/bench: stopped by SIGTERM/);
    // the history store (and every other temp file of the run) went with the run's temp folder
    const left = readdirSync(temp).filter((name) => name.startsWith("mosoo-bench-"));
    expect(left).toEqual([]);
    expect(existsSync(temp)).toBe(true);
  }, 120_000);
});
