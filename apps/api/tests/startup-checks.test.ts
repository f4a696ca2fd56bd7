/**
 * Startup never hangs. An unusable store path (under `/proc`, a directory, a
 * FIFO, a path whose folder cannot be created, a file that is not a SQLite database) or a bindings
 * file that is not a regular file or is huge ends the real API process with ONE line
 * `config.invalid: ...` and exit code 2 (the target is within 2 s; the wall time, tsx start-up
 * included, is printed and only a generous bound is asserted). Also: a misspelt `MOSOO_*` name is
 * reported on one warning line and the API starts anyway.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const API_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-startup-"));
  execFileSync("mkfifo", [join(dir, "db.fifo")]);
  execFileSync("mkfifo", [join(dir, "bindings.fifo")]);
  mkdirSync(join(dir, "a-directory"));
  writeFileSync(join(dir, "plain-file"), "x");
  writeFileSync(join(dir, "not-a-db"), "this is not a SQLite database, just text long enough to have a header".repeat(20));
  writeFileSync(join(dir, "huge.json"), "");
  truncateSync(join(dir, "huge.json"), 2 * 1024 * 1024); // sparse: 2 MiB of NULs, over the 1 MiB bound
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the API entry point with `env` until it exits (or `killAfterMs`, or stdout matches `until`); stdout, stderr, exit code, wall time in ms. */
function runApi(
  env: Record<string, string>,
  killAfterMs = 20_000,
  until?: RegExp,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: API_DIR,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/", MOSOO_PORT: "0", MOSOO_LOG_LEVEL: "warn", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (until?.test(stdout)) child.kill("SIGTERM");
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - t0 });
    });
  });
}

const db = (name: string) => join(dir, name);
const CASES: Array<[string, () => Record<string, string>, RegExp]> = [
  [
    "MOSOO_DB_FILE under /proc (a new file)",
    () => ({ MOSOO_DB_FILE: "/proc/self/mosoo.db" }),
    /^config\.invalid: MOSOO_DB_FILE: a store cannot live under \/proc/,
  ],
  [
    "MOSOO_DB_FILE an existing /proc file",
    () => ({ MOSOO_DB_FILE: "/proc/self/status" }),
    /^config\.invalid: MOSOO_DB_FILE: a store cannot live under \/proc/,
  ],
  ["MOSOO_DB_FILE under /dev", () => ({ MOSOO_DB_FILE: "/dev/null" }), /^config\.invalid: MOSOO_DB_FILE: a store cannot live under \/dev/],
  ["MOSOO_DB_FILE a directory", () => ({ MOSOO_DB_FILE: db("a-directory") }), /^config\.invalid: MOSOO_DB_FILE: is a directory/],
  ["MOSOO_DB_FILE a FIFO", () => ({ MOSOO_DB_FILE: db("db.fifo") }), /^config\.invalid: MOSOO_DB_FILE: is not a regular file/],
  [
    "MOSOO_DB_FILE whose folder cannot be created",
    () => ({ MOSOO_DB_FILE: join(db("plain-file"), "sub", "api.db") }),
    /^config\.invalid: MOSOO_DB_FILE: its folder cannot be created or written/,
  ],
  [
    "MOSOO_DB_FILE a file that is not a SQLite database",
    () => ({ MOSOO_DB_FILE: db("not-a-db") }),
    /^config\.invalid: MOSOO_DB_FILE: is not a SQLite database/,
  ],
  [
    "bindings file a FIFO",
    () => ({ MOSOO_DB_FILE: db("ok-1.db"), MOSOO_RECONCILIATION_BINDINGS_FILE: db("bindings.fifo") }),
    /^config\.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: is not a regular file/,
  ],
  [
    "bindings file a directory",
    () => ({ MOSOO_DB_FILE: db("ok-2.db"), MOSOO_RECONCILIATION_BINDINGS_FILE: db("a-directory") }),
    /^config\.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: is a directory/,
  ],
  [
    "bindings file a character device",
    () => ({ MOSOO_DB_FILE: db("ok-3.db"), MOSOO_RECONCILIATION_BINDINGS_FILE: "/dev/zero" }),
    /^config\.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: is not a regular file/,
  ],
  [
    "bindings file of 2 MiB",
    () => ({ MOSOO_DB_FILE: db("ok-4.db"), MOSOO_RECONCILIATION_BINDINGS_FILE: db("huge.json") }),
    /^config\.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: is 2097152 bytes, larger than 1048576/,
  ],
  [
    "bindings file missing",
    () => ({ MOSOO_DB_FILE: db("ok-5.db"), MOSOO_RECONCILIATION_BINDINGS_FILE: db("missing.json") }),
    /^config\.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: cannot open/,
  ],
  ["MOSOO_PORT in hexadecimal", () => ({ MOSOO_PORT: "0x50" }), /^config\.invalid: MOSOO_PORT: must be a decimal integer/],
];

describe("startup refuses an unusable path with one line and exit 2, never a hang", () => {
  it.each(CASES)(
    "%s",
    async (name, env, line) => {
      const r = await runApi(env());
      console.log(`startup: ${name}: exit ${r.code} after ${Math.round(r.ms)} ms: ${r.stderr.trim()}`);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr.trim()).toMatch(line);
      expect(r.ms).toBeLessThan(15_000); // target 2 s; generous here (a loaded 2-core machine, tsx start-up)
    },
    60_000,
  );
});

describe("unknown MOSOO_* names", () => {
  it("are named on one warning line and the API starts anyway", async () => {
    const r = await runApi(
      { MOSOO_DB_FILE: db("warn.db"), MOSOO_PORTT: "1", MOSOO_SWEEP_INTERVALMS: "5", MOSOO_LOG_LEVEL: "info" },
      40_000,
      /api\.listening/,
    );
    const warnings = r.stdout.split("\n").filter((l) => l.includes("config.unknown_variables"));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, names: ["MOSOO_PORTT", "MOSOO_SWEEP_INTERVALMS"] });
    expect(r.stdout).toContain("api.listening");
  }, 60_000);
});
