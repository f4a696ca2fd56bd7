// The throwaway server: it starts from the registry package's binaries, answers on its URL, honours
// the fsync option, and leaves no process and no folder behind: after stop(), after its owner is
// SIGKILLed (the watchdog), and when an earlier run left a folder behind (the stale-folder cleanup).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { cleanStaleServers, createTestDatabase, isAlive, SERVER_FOLDER_PREFIX, startPostgres, withDatabase } from "../src/index.js";

const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));

async function query<T extends Record<string, unknown>>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

function postmasterPid(dataDir: string): number {
  return Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
}

/** Polls `check` every 100 ms until it is true or `ms` passed (a deadline for a hang, not a timing assertion). */
async function until(check: () => boolean, ms = 30_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await sleep(100);
  }
  return check();
}

describe("startPostgres", () => {
  it("starts a server on a free loopback port, creates per-test databases, and stop() removes process and folder", async () => {
    const server = await startPostgres();
    const pid = postmasterPid(server.dataDir);
    try {
      expect(server.url).toMatch(/^postgres:\/\/postgres:[0-9a-f]+@127\.0\.0\.1:\d+\/postgres$/);
      expect(server.startMs).toBeGreaterThan(0);
      const [row] = await query<{ v: string; fsync: string }>(
        server.url,
        "SELECT current_setting('server_version_num') AS v, current_setting('fsync') AS fsync",
      );
      expect(Number(row?.v)).toBeGreaterThanOrEqual(180000);
      expect(row?.fsync).toBe("off");
      const db = await createTestDatabase(server.url, "Some-Test");
      expect(db.name).toMatch(/^some_test_[a-z0-9]+_[a-z0-9]+$/);
      expect(db.url).toBe(withDatabase(server.url, db.name));
      expect(await query(db.url, "SELECT current_database() AS d")).toEqual([{ d: db.name }]);
      await db.drop();
      await db.drop(); // idempotent
      expect(await query(server.url, `SELECT 1 FROM pg_database WHERE datname = '${db.name}'`)).toEqual([]);
    } finally {
      await server.stop();
    }
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(server.dataDir)).toBe(false);
    expect(existsSync(`${server.dataDir}.owner.json`)).toBe(false);
    await server.stop(); // idempotent
  });

  it("runs with durable writes when asked (fsync on, for the bench and the soak)", async () => {
    const server = await startPostgres({ fsync: true });
    try {
      const [row] = await query<{ fsync: string; sc: string }>(
        server.url,
        "SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc",
      );
      expect(row).toEqual({ fsync: "on", sc: "on" });
    } finally {
      await server.stop();
    }
  });

  it("a server whose owner process is SIGKILLed is stopped and removed by its watchdog", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join(PACKAGE_DIR, "tests", "fixtures", "start-and-wait.fixture.ts")], {
      cwd: PACKAGE_DIR,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (b: Buffer) => {
        out += b.toString();
        if (out.includes("\n")) resolve(out.split("\n")[0] ?? "");
      });
      child.on("exit", (code) => reject(new Error(`fixture exited ${code} before printing`)));
    });
    const { dataDir, url } = JSON.parse(line) as { dataDir: string; url: string };
    const pid = postmasterPid(dataDir);
    expect(await query(url, "SELECT 1 AS one")).toEqual([{ one: 1 }]);
    child.kill("SIGKILL");
    expect(await until(() => !isAlive(pid) && !existsSync(dataDir) && !existsSync(`${dataDir}.owner.json`))).toBe(true);
  });

  it("removes a folder left behind by an owner that is gone, and leaves a live owner's folder alone", async () => {
    const gone = spawn(process.execPath, ["-e", ""]);
    const gonePid = await new Promise<number>((resolve) => gone.on("exit", () => resolve(gone.pid ?? 0)));
    const stale = join(tmpdir(), `${SERVER_FOLDER_PREFIX}stale-test-${gonePid}`);
    const live = join(tmpdir(), `${SERVER_FOLDER_PREFIX}live-test-${process.pid}`);
    for (const [dir, ownerPid] of [
      [stale, gonePid],
      [live, process.pid],
    ] as const) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "PG_VERSION"), "18\n");
      writeFileSync(`${dir}.owner.json`, JSON.stringify({ ownerPid, dataDir: dir, createdAtMs: Date.now() }));
    }
    try {
      expect(cleanStaleServers()).toBeGreaterThanOrEqual(1);
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(`${stale}.owner.json`)).toBe(false);
      expect(existsSync(live)).toBe(true);
    } finally {
      rmSync(live, { recursive: true, force: true });
      rmSync(`${live}.owner.json`, { force: true });
    }
  });
});
