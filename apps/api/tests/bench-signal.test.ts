// The bench stopped by a signal: its scenario child ends too, no temp file is left, and no database on an operator's server.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { TEST_DATABASE_URL_ENV } from "@mosoo/test-postgres";

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

/** Polls `check` every 100 ms until it returns a value other than undefined; rejects after `limitMs` (a hang bound). */
async function until<T>(check: () => Promise<T | undefined>, limitMs: number, what: string): Promise<T> {
  for (const t0 = Date.now(); ;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() - t0 > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
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

  it("stopped in a PostgreSQL row on an operator's server (--database-url), drops every database it made there", async () => {
    const adminUrl = process.env[TEST_DATABASE_URL_ENV];
    if (!adminUrl) throw new Error(`${TEST_DATABASE_URL_ENV} is not set: the api project's global setup starts the test server`);
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    const benchDatabases = async () =>
      (await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'bench\\_ledger\\_%'")).rows.map(
        (r) => r.datname,
      );
    try {
      const bench = spawn(
        process.execPath,
        ["--import", "tsx", MAIN, "--only", "ledger", "--store", "postgres", "--database-url", adminUrl],
        { env: { ...process.env, TMPDIR: temp, MOSOO_BENCH_QUICK: "1" }, stdio: ["ignore", "pipe", "pipe"] },
      );
      let stderr = "";
      bench.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => bench.on("exit", resolve));
      // the scenario child made its database: stop the bench now
      const made = await until(
        async () => ((await benchDatabases()).length > 0 ? benchDatabases() : undefined),
        90_000,
        "the ledger database",
      );
      const childPid = Number(/▶ postgres ledger[^\n]*\(pid (\d+)\)/.exec(stderr)?.[1]);
      expect(made.length).toBe(1);
      bench.kill("SIGTERM");
      expect(await exited).toBe(143);
      await gone(childPid, 30_000);
      // the child dropped it before it exited
      expect(await benchDatabases(), `the bench said:\n${stderr}`).toEqual([]);
    } finally {
      await admin.end();
    }
  }, 180_000);
});
