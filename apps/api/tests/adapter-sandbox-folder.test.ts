// The adapter host's bundle folders: each locked by its owner, and only the folders whose owner's lock is free removed.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";
import {
  BUNDLE_FOLDER_PREFIX,
  machineTag,
  makeBundleFolder,
  removeStaleBundleFolders,
} from "../src/modules/reconciliation/infrastructure/adapter-sandbox.folder.js";

const MISBEHAVING = fileURLToPath(new URL("./fixtures/adapters/misbehaving.adapter.ts", import.meta.url));
const FOLDER_MODULE = fileURLToPath(new URL("../src/modules/reconciliation/infrastructure/adapter-sandbox.folder.ts", import.meta.url));

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/**
 * Starts another process that makes a bundle folder in `dir` and then lives on (until killed): resolves with the
 * process and the folder's path, once made.
 */
async function folderOfAnotherProcess(dir: string) {
  const code = `const m = await import(${JSON.stringify(FOLDER_MODULE)}); console.log(m.makeBundleFolder(${JSON.stringify(dir)}).path); setInterval(() => {}, 60000);`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  const path = await new Promise<string>((done, fail) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) done(out.trim());
    });
    child.once("exit", (code) => fail(new Error(`the folder's process exited (${code}) before making it`)));
  });
  return { child, path };
}

describe("adapter host bundle folders", () => {
  it("names the folder for this machine, and leaves it while its owner holds it", () => {
    root = mkdtempSync(join(tmpdir(), "mosoo-folder-test-"));
    const folder = makeBundleFolder(root);
    expect(basename(folder.path)).toMatch(new RegExp(`^${BUNDLE_FOLDER_PREFIX}${machineTag()}-[A-Za-z0-9]{6}$`));
    expect(machineTag("api-host/1.example")).toBe("api_host_1.example");
    expect(removeStaleBundleFolders(root)).toEqual([]);
    expect(existsSync(folder.path)).toBe(true);
    // released (what close() does before it removes the folder): nothing owns it any more
    folder.release();
    expect(removeStaleBundleFolders(root)).toEqual([folder.path]);
    expect(existsSync(folder.path)).toBe(false);
  });

  it("removes the folder of a process killed with SIGKILL, never while that process lives", async () => {
    root = mkdtempSync(join(tmpdir(), "mosoo-folder-test-"));
    const { child, path } = await folderOfAnotherProcess(root);
    try {
      expect(removeStaleBundleFolders(root)).toEqual([]);
      expect(existsSync(path)).toBe(true);
    } finally {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGKILL");
      await exited;
    }
    expect(removeStaleBundleFolders(root)).toEqual([path]);
    expect(existsSync(path)).toBe(false);
  }, 60_000);

  it("leaves everything that is not a folder of this machine whose owner's lock is free", () => {
    root = mkdtempSync(join(tmpdir(), "mosoo-folder-test-"));
    const stale = makeBundleFolder(root);
    stale.release();
    const live = makeBundleFolder(root);
    const kept = [
      live.path, // its owner (this process) holds the lock
      join(root, `${BUNDLE_FOLDER_PREFIX}other_machine-AbC123`), // another machine's
      join(root, `${BUNDLE_FOLDER_PREFIX}${machineTag()}-NoLck1`), // no lock file: being made, or not a host's
      join(root, `${BUNDLE_FOLDER_PREFIX}AbC123`), // a name of another shape
    ];
    for (const path of kept.slice(1)) mkdirSync(path);
    writeFileSync(join(kept[2]!, "adapter-1.mjs"), "export {}");
    // a symlink named like a folder of this machine, pointing at a released one: neither is removed through it
    const target = makeBundleFolder(mkdtempSync(join(root, "elsewhere-")));
    target.release();
    const link = join(root, `${BUNDLE_FOLDER_PREFIX}${machineTag()}-LnK000`);
    symlinkSync(target.path, link);

    expect(removeStaleBundleFolders(root)).toEqual([stale.path]);
    for (const path of [...kept, link, target.path]) expect(existsSync(path), path).toBe(true);
    live.release();
  });

  it("a new adapter host removes what a killed process's host left and says so; its own folder is made by its first bind, removed on close", async () => {
    // a temp folder of this test's own (os.tmpdir() reads TMPDIR), so that other tests' hosts are not in the counts
    root = mkdtempSync(join(tmpdir(), "mosoo-folder-test-"));
    const savedTmpdir = process.env.TMPDIR;
    process.env.TMPDIR = root;
    try {
      const { child, path: leftover } = await folderOfAnotherProcess(root);
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGKILL");
      await exited;
      const logged: Array<{ fields: Record<string, unknown>; message: string }> = [];
      const log = (fields: Record<string, unknown>, message: string) => logged.push({ fields, message });
      const host = createIsolatedAdapterHost({
        heapMb: 32,
        cpuLimitMs: 10_000,
        maxProcesses: 1,
        bindTimeoutMs: 60_000,
        logger: { debug: log, info: log, warn: log, error: log },
      });
      expect(existsSync(leftover)).toBe(false);
      expect(logged).toEqual([{ fields: { folders: [leftover] }, message: "adapter_host.stale_bundles_removed" }]);
      const folders = () => readdirSync(root!).filter((n) => n.startsWith(BUNDLE_FOLDER_PREFIX));
      // nothing bound yet: no folder of its own
      expect(folders()).toEqual([]);
      await host.bind({ module: MISBEHAVING, export: "hugeAnswerAdapterFactory" }, undefined);
      // bound: its folder, held, so that another host starting now leaves it
      expect(folders()).toHaveLength(1);
      expect(removeStaleBundleFolders(root)).toEqual([]);
      await host.close();
      expect(folders()).toEqual([]);
    } finally {
      if (savedTmpdir === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmpdir;
    }
  }, 60_000);

  it("answers an unreadable root with nothing removed", () => {
    expect(removeStaleBundleFolders(join(tmpdir(), `mosoo-no-such-folder-${process.pid}`))).toEqual([]);
  });
});
