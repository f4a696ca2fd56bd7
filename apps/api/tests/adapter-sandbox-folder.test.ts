// The adapter host's bundle folders: named for their owner, and only the folders of dead owners on this machine removed.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";
import {
  BUNDLE_FOLDER_PREFIX,
  makeBundleFolder,
  removeStaleBundleFolders,
} from "../src/modules/reconciliation/infrastructure/adapter-sandbox.folder.js";

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** The pid of a process that has ended (a child that exited before this returns). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

/** A folder named as a host of `pid` on `machine` would name it, with one bundle-like read-only file in it. */
function folder(dir: string, machine: string, pid: number, suffix = "AbC123"): string {
  const path = join(dir, `${BUNDLE_FOLDER_PREFIX}${machine}-${pid}-${suffix}`);
  mkdirSync(path);
  writeFileSync(join(path, "adapter-1.mjs"), "export {}", { mode: 0o444 });
  return path;
}

/** A bundle folder in the OS temp folder as a host of process `pid` on this machine would make it. */
function makeBundleFolderOf(pid: number): string {
  const tag =
    hostname()
      .replace(/[^A-Za-z0-9.]/g, "_")
      .slice(0, 64) || "_";
  return folder(tmpdir(), tag, pid, Math.random().toString(36).slice(2, 8).padEnd(6, "0"));
}

/** The bundle folders in the OS temp folder whose name carries `pid`. */
function tmpdirFoldersOf(pid: number): string[] {
  return readdirSync(tmpdir())
    .filter((n) => n.startsWith(BUNDLE_FOLDER_PREFIX) && n.includes(`-${pid}-`))
    .map((n) => join(tmpdir(), n));
}

describe("adapter host bundle folders", () => {
  it("names the folder for this machine and this process", () => {
    root = mkdtempSync(join(tmpdir(), "mosoo-folder-test-"));
    const made = makeBundleFolder(root);
    expect(basename(made)).toMatch(new RegExp(`^${BUNDLE_FOLDER_PREFIX}.+-${process.pid}-[A-Za-z0-9]{6}$`));
    // a live owner (this process): the sweep leaves it
    expect(removeStaleBundleFolders(root)).toEqual([]);
    expect(existsSync(made)).toBe(true);
  });

  it("removes the folders of dead owners on this machine and nothing else", () => {
    root = mkdtempSync(join(tmpdir(), "mosoo-folder-test-"));
    // the folder names carry the machine's name with `-` as `_` (a `-` separates the name's parts)
    const machine = "api_host.example";
    const dead = deadPid();
    const stale = [folder(root, machine, dead), folder(root, machine, dead, "XyZ789")];
    const kept = [
      folder(root, machine, process.pid), // this process
      folder(root, machine, process.ppid), // a live process
      folder(root, "other-machine", dead), // another machine's: its pid means nothing here
      join(root, `${BUNDLE_FOLDER_PREFIX}AbC123`), // a name of another shape
    ];
    mkdirSync(kept[3]!);
    // a symlink named like a stale folder: neither it nor what it points to is removed
    const target = mkdtempSync(join(root, "target-"));
    const link = join(root, `${BUNDLE_FOLDER_PREFIX}${machine}-${dead}-LnK000`);
    symlinkSync(target, link);

    expect(removeStaleBundleFolders(root, "api-host.example").sort()).toEqual([...stale].sort());
    for (const path of stale) expect(existsSync(path), path).toBe(false);
    for (const path of [...kept, link, target]) expect(existsSync(path), path).toBe(true);
    // the machine's name is matched as the folder names it, so a name with other characters still matches itself
    const odd = folder(root, "host_with_odd_chars", dead);
    expect(removeStaleBundleFolders(root, "host with/odd:chars")).toEqual([odd]);
  });

  it("a new adapter host removes what a host of a killed process left, says so, and removes its own folder on close", async () => {
    const leftover = makeBundleFolderOf(deadPid());
    const logged: Array<{ fields: Record<string, unknown>; message: string }> = [];
    const log = (fields: Record<string, unknown>, message: string) => logged.push({ fields, message });
    const before = tmpdirFoldersOf(process.pid);
    const host = createIsolatedAdapterHost({
      heapMb: 32,
      cpuLimitMs: 10_000,
      maxProcesses: 1,
      bindTimeoutMs: 60_000,
      logger: { debug: log, info: log, warn: log, error: log },
    });
    const mine = tmpdirFoldersOf(process.pid).filter((f) => !before.includes(f));
    await host.close();
    expect(existsSync(leftover)).toBe(false);
    expect(logged).toContainEqual({
      fields: { folders: expect.arrayContaining([leftover]) },
      message: "adapter_host.stale_bundles_removed",
    });
    expect(mine).toHaveLength(1);
    expect(existsSync(mine[0]!)).toBe(false);
  });

  it("answers an unreadable root with nothing removed", () => {
    expect(removeStaleBundleFolders(join(tmpdir(), "mosoo-no-such-folder-" + process.pid), hostname())).toEqual([]);
  });
});
