// `npm run pg:start` (src/pg-start.main.ts): prints a URL that answers, stops the server and removes its
// folder on Ctrl-C (SIGINT), and refuses bad options with one line and exit 2.
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it } from "vitest";

const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
const MAIN = join(PACKAGE_DIR, "src", "pg-start.main.ts");

describe("pg-start CLI", () => {
  it("prints the URL of a running server (with --database, a fresh database) and stops it on SIGINT", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, "--database", "cli_check"], {
      cwd: PACKAGE_DIR,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (b: Buffer) => {
        out += b.toString();
        if (out.includes("\n")) resolve(out.trim());
      });
      child.on("exit", (code) => reject(new Error(`pg-start exited ${code}: ${stderr}`)));
    });
    expect(url).toMatch(/^postgres:\/\/postgres:[0-9a-f]+@127\.0\.0\.1:\d+\/cli_check_[a-z0-9]+_[a-z0-9]+$/);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    expect((await client.query("SELECT current_database() AS d")).rows[0]?.d).toBe(new URL(url).pathname.slice(1));
    await client.end();
    const folder = /folder (\S+)\)/.exec(stderr)?.[1];
    expect(folder).toBeDefined();
    expect(existsSync(folder ?? "")).toBe(true);
    const exitCode = await new Promise<number | null>((resolve) => {
      child.on("exit", (code) => resolve(code));
      child.kill("SIGINT");
    });
    expect(exitCode).toBe(130);
    expect(existsSync(folder ?? "")).toBe(false);
  });

  it("refuses a bad port with one line on stderr and exit 2, printing no URL", () => {
    const res = spawnSync(process.execPath, ["--import", "tsx", MAIN, "--port", "99999"], { cwd: PACKAGE_DIR, encoding: "utf8" });
    expect(res.status).toBe(2);
    expect(res.stderr.trim().split("\n")).toHaveLength(1);
    expect(res.stderr).toContain("--port");
    expect(res.stdout).toBe("");
  });
});
