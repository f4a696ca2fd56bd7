// The adapter host's bundle folder, locked by the process that owns it, and the removal of the folders whose owner died without closing its host.
import { lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileLockIsFree, holdExclusiveFileLock } from "../../../platform/db/sqlite/sqlite-file-lock.js";

/** Every bundle folder is `<root>/mosoo-adapters-<machine>-<6 random characters>` (see {@link makeBundleFolder}). */
export const BUNDLE_FOLDER_PREFIX = "mosoo-adapters-";

/** The owner's lock in each bundle folder: a file its host holds an exclusive lock on while it lives (sqlite-file-lock.ts). */
const OWNER_LOCK_FILE = "owner.lock";

/**
 * The machine's name as a folder-name part: characters other than letters, digits and `.` become `_`, at most 64.
 * A process judges only the folders of its own machine's name: a lock on a file shared over a network file system
 * does not prove an owner on another machine alive. Default: this machine.
 */
export function machineTag(machine: string = hostname()): string {
  return machine.replace(/[^A-Za-z0-9.]/g, "_").slice(0, 64) || "_";
}

/**
 * An adapter host's bundle folder: its `path`; `release()`, which gives up the owner's lock (call it before removing
 * the folder); and `unlocked`, the lock's error when the folder's file system refused the lock (then the folder has no
 * `owner.lock`, so no sweep ever removes it: not while its host lives, nor after a crash), else null.
 */
export interface BundleFolder {
  readonly path: string;
  readonly unlocked: string | null;
  release(): void;
}

/**
 * Makes the bundle folder of an adapter host, `<root>/mosoo-adapters-<machine>-XXXXXX` (mode 0700, `mkdtemp`;
 * `<machine>` is {@link machineTag}), and takes its owner's lock on `owner.lock` inside it (`holdExclusiveFileLock`),
 * held until `release()` or until the process ends, however it ends: the kernel drops the lock of a dead process.
 * The adapter processes cannot read it (they may read their bundle file only). `root` defaults to the OS temp folder.
 * The lock is a POSIX record lock: the owning process drops it too if it ever opens and closes `owner.lock` in any
 * other way, which nothing in the API does. When the file system refuses the lock, the folder is still made, without
 * `owner.lock` (see {@link BundleFolder.unlocked}).
 * @throws the `mkdtemp` error (ENOENT, EACCES, ENOSPC) when the folder cannot be made.
 */
export function makeBundleFolder(root: string = tmpdir()): BundleFolder {
  const path = mkdtempSync(join(root, `${BUNDLE_FOLDER_PREFIX}${machineTag()}-`));
  try {
    const lock = holdExclusiveFileLock(join(path, OWNER_LOCK_FILE));
    return { path, unlocked: null, release: () => lock.release() };
  } catch (err) {
    // a file system without working record locks (some network and FUSE ones): the folder serves unlocked
    return { path, unlocked: err instanceof Error ? err.message : String(err), release: () => undefined };
  }
}

/**
 * Removes the bundle folders that hosts of processes which ended without `close()` (SIGKILL, a crash, power loss)
 * left in `root` (default: the OS temp folder; each holds a copy of every bundled adapter, about 1 MB apiece). A folder
 * is removed only when all of these hold: its name is {@link makeBundleFolder}'s with machine tag `machine` (default
 * this machine's), it is a real directory (not a symlink) owned by this process's user, and its `owner.lock` exists
 * and nobody holds its lock. The lock, not a pid, says whether the owner lives, so this holds in containers too (a
 * restarted container's process often has the pid its previous run had; another container sharing the temp folder
 * has pids of its own). Everything else is left alone: a live host's folder, another machine's, another user's, a
 * folder without a lock file, a name of another shape. A folder that cannot be read or removed is skipped. Returns
 * the removed folders' paths.
 */
export function removeStaleBundleFolders(root: string = tmpdir(), machine: string = machineTag()): string[] {
  const pattern = new RegExp(`^${BUNDLE_FOLDER_PREFIX}(.+)-[A-Za-z0-9]{6}$`);
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (pattern.exec(name)?.[1] !== machine) continue;
    const path = join(root, name);
    try {
      const st = lstatSync(path);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      if (!fileLockIsFree(join(path, OWNER_LOCK_FILE))) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // removed meanwhile by another host's sweep, or not removable: left as it is
    }
  }
  return removed;
}
