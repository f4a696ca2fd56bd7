/**
 * The stale-server cleanup (`cleanStaleServers`, watchdog.mjs) reads owner files from the OS temp
 * folder, which anyone can write to. A planted owner file must never make it remove a folder that is
 * not its own `<tmp>/mosoo-pg-<id>` or signal a process that is not a postgres postmaster of that
 * folder. Each test runs with TMPDIR pointed at a private folder, so the real temp folder is untouched.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanStaleServers, isAlive } from "../src/server-folders.js";

const WATCHDOG = join(dirname(fileURLToPath(import.meta.url)), "..", "src", "watchdog.mjs");
const realTmp = tmpdir();
let fakeTmp: string;
let victimHome: string;
let victim: ChildProcess;
let savedTmpdir: string | undefined;

/** A pid that is certainly gone: a process that already exited. */
function deadPid(): number {
  const res = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(res.stdout);
}

function plant(name: string, dataDir: string, dir = fakeTmp): string {
  const ownerFile = join(dir, `${name}.owner.json`);
  writeFileSync(ownerFile, JSON.stringify({ ownerPid: deadPid(), dataDir, createdAtMs: 0 }));
  return ownerFile;
}

beforeEach(() => {
  fakeTmp = realpathSync(mkdtempSync(join(realTmp, "mosoo-hostile-tmp-")));
  victimHome = realpathSync(mkdtempSync(join(realTmp, "mosoo-hostile-victim-")));
  mkdirSync(join(victimHome, "docs"));
  writeFileSync(join(victimHome, "docs", "thesis.txt"), "precious");
  victim = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" }); // an unrelated process of the same user
  writeFileSync(join(victimHome, "postmaster.pid"), `${victim.pid}\n`);
  savedTmpdir = process.env["TMPDIR"];
  process.env["TMPDIR"] = fakeTmp;
});

afterEach(() => {
  if (savedTmpdir === undefined) delete process.env["TMPDIR"];
  else process.env["TMPDIR"] = savedTmpdir;
  if (victim.pid !== undefined && isAlive(victim.pid)) process.kill(victim.pid, "SIGKILL");
  rmSync(fakeTmp, { recursive: true, force: true });
  rmSync(victimHome, { recursive: true, force: true });
});

describe("stale-server cleanup against planted owner files", () => {
  it("an owner file naming a folder outside the temp folder: neither the folder nor the process is touched", () => {
    expect(tmpdir()).toBe(fakeTmp);
    const ownerFile = plant("mosoo-pg-evil", victimHome);
    expect(cleanStaleServers()).toBe(0);
    expect(readFileSync(join(victimHome, "docs", "thesis.txt"), "utf8")).toBe("precious");
    expect(isAlive(victim.pid!)).toBe(true);
    expect(existsSync(ownerFile)).toBe(true); // refused, only reported
  });

  it("a mosoo-pg folder that is a symlink to another folder: nothing behind it is touched", () => {
    const link = join(fakeTmp, "mosoo-pg-link");
    symlinkSync(victimHome, link);
    plant("mosoo-pg-link", link);
    expect(cleanStaleServers()).toBe(0);
    expect(readFileSync(join(victimHome, "docs", "thesis.txt"), "utf8")).toBe("precious");
    expect(isAlive(victim.pid!)).toBe(true);
  });

  it("an owner file whose dataDir is another mosoo-pg folder than its own: refused", () => {
    const other = join(fakeTmp, "mosoo-pg-other");
    mkdirSync(other);
    writeFileSync(join(other, "postmaster.pid"), `${victim.pid}\n`);
    plant("mosoo-pg-evil", other);
    expect(cleanStaleServers()).toBe(0);
    expect(existsSync(join(other, "postmaster.pid"))).toBe(true);
    expect(isAlive(victim.pid!)).toBe(true);
  });

  it("its own folder whose postmaster.pid names a process that is not its postmaster: the folder goes, the process is only reported", () => {
    const own = join(fakeTmp, "mosoo-pg-own");
    mkdirSync(own);
    writeFileSync(join(own, "postmaster.pid"), `${victim.pid}\n`);
    const ownerFile = plant("mosoo-pg-own", own);
    const res = spawnSync(process.execPath, [WATCHDOG, ownerFile, "0"], { encoding: "utf8", env: { ...process.env, TMPDIR: fakeTmp } });
    expect(res.status).toBe(0);
    expect(res.stderr).toContain(`pid ${victim.pid}`);
    expect(res.stderr).toContain("left alone");
    expect(isAlive(victim.pid!)).toBe(true);
    expect(existsSync(own)).toBe(false);
    expect(existsSync(ownerFile)).toBe(false);
  });

  it("the reviewer's repro: the watchdog run on an owner file outside the temp folder exits 2 and touches nothing", () => {
    const ownerFile = plant("mosoo-pg-evil", victimHome, victimHome);
    const res = spawnSync(process.execPath, [WATCHDOG, ownerFile, "0"], { encoding: "utf8", env: { ...process.env, TMPDIR: fakeTmp } });
    expect(res.status).toBe(2);
    expect(res.stderr).toContain("refused");
    expect(readFileSync(join(victimHome, "docs", "thesis.txt"), "utf8")).toBe("precious");
    expect(isAlive(victim.pid!)).toBe(true);
  });
});
