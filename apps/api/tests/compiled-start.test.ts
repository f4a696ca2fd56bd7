/**
 * The compiled start: `scripts/build.mjs` compiles the API (esbuild) and `node <heap flags> dist/main.js`
 * runs with no TypeScript loader: bad config still ends with one line and exit 2, and a served API
 * migrates its store, binds a TypeScript adapter package (the API bundles it for its sandboxed
 * process, no loader anywhere) and answers `/health`.
 * No timing is asserted.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_HEAP_FLAGS } from "@mosoo/contracts";

const API_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");
const ROOT = join(API_DIR, "..", "..");
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-compiled-"));
  execFileSync(process.execPath, [join(ROOT, "scripts", "build.mjs"), "api"], { cwd: ROOT, stdio: "pipe" });
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `node dist/main.js` (no loader) with `env` until it exits, or until stdout matches `until` (then it asks `/health` and stops it). */
function runCompiledApi(
  env: Record<string, string>,
  until?: RegExp,
): Promise<{ code: number | null; stdout: string; stderr: string; health?: number }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...API_HEAP_FLAGS, "dist/main.js"], {
      cwd: API_DIR,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/", MOSOO_PORT: "0", ...env },
    });
    let stdout = "";
    let stderr = "";
    let health: number | undefined;
    let asked = false;
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      const url = /"url":"(http:[^"]+)"/.exec(stdout)?.[1];
      if (until?.test(stdout) && url && !asked) {
        asked = true;
        void fetch(`${url}/health`)
          .then((r) => (health = r.status))
          .finally(() => child.kill("SIGTERM"));
      }
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 50_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, health });
    });
  });
}

describe("compiled start (node dist/main.js, no TypeScript loader)", () => {
  it("builds the API's entries and the bench's", () => {
    for (const f of ["main.js", "run-benchmarks.main.js", "scenario.main.js", "seed-unknown.main.js"])
      expect(existsSync(join(API_DIR, "dist", f)), f).toBe(true);
  });

  it("npm start runs dist/main.js with the API's heap flags (the bench's scenario processes get the same)", () => {
    const pkg = JSON.parse(readFileSync(join(API_DIR, "package.json"), "utf8")) as { scripts: { start: string } };
    expect(pkg.scripts.start).toContain(`node ${API_HEAP_FLAGS.join(" ")} dist/main.js`);
  });

  it("refuses a bad variable with one line and exit code 2", async () => {
    const r = await runCompiledApi({ MOSOO_PORT: "70000" });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^config\.invalid: MOSOO_PORT: /)]);
  });

  it("migrates, binds a TypeScript adapter package in a sandboxed process, and serves", async () => {
    const bindings = join(dir, "bindings.json");
    writeFileSync(
      bindings,
      JSON.stringify({
        bindings: {
          tracker: {
            package: { module: "@mosoo/fixture-adapter", export: "fixtureIssueTrackerAdapterFactory" },
            options: { url: "http://127.0.0.1:2/mcp" },
            tools: ["createIssue"],
          },
        },
      }),
    );
    const r = await runCompiledApi(
      {
        MOSOO_DB_FILE: join(dir, "api.db"),
        MOSOO_EFFECT_RECONCILIATION: "on",
        MOSOO_RECONCILIATION_BINDINGS_FILE: bindings,
        MOSOO_LOG_LEVEL: "info",
      },
      /api\.listening/,
    );
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/"boundServers":\["tracker"\]/);
    expect(r.stdout).toMatch(/"packageName":"@mosoo\/fixture-adapter"/);
    expect(r.health).toBe(200);
    expect(r.code).toBe(0);
  });
});
