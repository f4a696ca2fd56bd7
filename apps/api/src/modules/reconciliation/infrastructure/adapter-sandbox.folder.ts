// The adapter host's bundle folder, named for the process that owns it, and the removal of the folders whose owner died without closing its host.
import { lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";

/** Every bundle folder is `<root>/mosoo-adapters-<host>-<pid>-<6 random characters>` (see {@link makeBundleFolder}). */
export const BUNDLE_FOLDER_PREFIX = "mosoo-adapters-";

/**
 * This machine's name as a folder-name part: characters other than letters, digits and `.` become `_`, at most 64.
 * Part of the name so that a process never judges the folder of a process on another machine (or in another PID
 * namespace) sharing the temp folder, whose pid means nothing here.
 */
function hostTag(name: string): string {
  return name.replace(/[^A-Za-z0-9.]/g, "_").slice(0, 64) || "_";
}

/**
 * Makes the bundle folder of an adapter host: `<root>/mosoo-adapters-<host>-<pid>-XXXXXX` (mode 0700, `mkdtemp`),
 * so that {@link removeStaleBundleFolders} can tell, after a crash, that its owner is gone. `root` defaults to the
 * OS temp folder.
 * @throws the `mkdtemp` error (ENOENT, EACCES, ENOSPC) when the folder cannot be made.
 */
export function makeBundleFolder(root: string = tmpdir()): string {
  return mkdtempSync(join(root, `${BUNDLE_FOLDER_PREFIX}${hostTag(hostname())}-${process.pid}-`));
}

/** True when a process with this pid exists (EPERM: it exists but belongs to another user). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes the bundle folders that hosts of processes which ended without `close()` (SIGKILL, a crash, power loss)
 * left in `root` (default: the OS temp folder; each holds a copy of every bundled adapter, about 1 MB apiece). A folder is
 * removed only when all of these hold: its name is {@link makeBundleFolder}'s with this machine's name, it is a real
 * directory (not a symlink) owned by this process's user, and the pid in its name is not this process and names no
 * live process. Everything else is left alone: a live host's folder, another machine's, another user's, a name of
 * another shape. A folder that cannot be read or removed is skipped. Returns the removed folders' paths.
 */
export function removeStaleBundleFolders(root: string = tmpdir(), machine: string = hostname()): string[] {
  const pattern = new RegExp(`^${BUNDLE_FOLDER_PREFIX}(.+)-(\\d+)-[A-Za-z0-9]{6}$`);
  const ownTag = hostTag(machine);
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = pattern.exec(name);
    if (!m || m[1] !== ownTag) continue;
    const pid = Number(m[2]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || isAlive(pid)) continue;
    const path = join(root, name);
    try {
      const st = lstatSync(path);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // removed meanwhile by another host's sweep, or not removable: left as it is
    }
  }
  return removed;
}
