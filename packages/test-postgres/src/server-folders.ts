// The throwaway servers' data folders and owner files, the watchdog that stops a server whose owner died, and stale cleanup.
import { spawn, spawnSync } from "node:child_process";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";

/** Every server's data folder is `<os temp folder>/mosoo-pg-<id>`, next to its owner file `mosoo-pg-<id>.owner.json`. */
export const SERVER_FOLDER_PREFIX = "mosoo-pg-";

/** The watchdog script (plain JavaScript, so it starts in milliseconds without a TypeScript loader). */
const WATCHDOG_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "watchdog.mjs");

/** The owner file: which process owns a server folder. Written before `initdb` runs, removed after the folder. */
const OwnerFileSchema = z.object({
  ownerPid: z.number().int().positive(),
  dataDir: z.string().min(1),
  createdAtMs: z.number().int().nonnegative(),
});
/** The parsed owner file. */
export type OwnerFile = z.infer<typeof OwnerFileSchema>;

/** A fresh server folder name: `<tmp>/mosoo-pg-<pid>-<random>` (not created: `initdb` creates it). */
export function newServerPaths(): { dataDir: string; ownerFile: string } {
  const id = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const dataDir = join(tmpdir(), `${SERVER_FOLDER_PREFIX}${id}`);
  return { dataDir, ownerFile: `${dataDir}.owner.json` };
}

/**
 * Starts the detached watchdog of one server: a tiny `node` process (its own process group, so a
 * Ctrl-C or a SIGKILL of the owner does not reach it) that checks every `pollMs` whether the
 * owner process still lives. When the owner is gone and the owner file still exists (no clean
 * `stop()` ran), it shuts the server down (SIGQUIT to the postmaster, SIGKILL after 10 s) and removes
 * the data folder and the owner file. It exits by itself once the owner file is gone.
 */
export function startWatchdog(ownerFile: string, pollMs = 1_000): void {
  const child = spawn(process.execPath, [WATCHDOG_SCRIPT, ownerFile, String(pollMs)], { detached: true, stdio: "ignore" });
  child.unref();
}

/**
 * Removes the servers that crashed test runs left behind (a stale-folder cleanup, run by every
 * `startPostgres`): for each owner file in the OS temp folder whose owner process is gone, runs the
 * watchdog once, synchronously (stop the server if it still runs, remove its folder). Folders of
 * live owners (another test run, another user) are left alone. The temp folder is world-writable, so
 * an owner file of another user is skipped here, and the watchdog refuses any owner file whose dataDir
 * is not exactly its own `<tmp>/mosoo-pg-<id>` folder (no symlink) and signals a pid only when it is a
 * postgres postmaster of that folder (watchdog.mjs header). Returns how many it removed.
 */
export function cleanStaleServers(): number {
  let removed = 0;
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(SERVER_FOLDER_PREFIX) || !name.endsWith(".owner.json")) continue;
    const ownerFile = join(tmpdir(), name);
    let owner: OwnerFile;
    try {
      const st = lstatSync(ownerFile);
      if (!st.isFile() || (typeof process.getuid === "function" && st.uid !== process.getuid())) continue; // not ours
      owner = OwnerFileSchema.parse(JSON.parse(readFileSync(ownerFile, "utf8")));
    } catch {
      continue; // being written right now, or not ours
    }
    if (isAlive(owner.ownerPid)) continue;
    const res = spawnSync(process.execPath, [WATCHDOG_SCRIPT, ownerFile, "0"], { stdio: "ignore", timeout: 30_000 });
    if (res.status === 0) removed += 1;
  }
  return removed;
}

/** True when a process with this pid exists (EPERM: it exists but belongs to another user). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
