// The watchdog of one throwaway PostgreSQL server (see server-folders.ts `startWatchdog`).
// Usage: node watchdog.mjs <owner file> <poll ms>
//   poll ms > 0: wait while the owner process lives; exit quietly once the owner file is gone (a clean stop).
//   poll ms = 0: the owner is already gone (the stale-folder cleanup): clean up now.
// Cleaning up: SIGQUIT to the postmaster (its pid is the first line of <data dir>/postmaster.pid), SIGKILL
// after 10 s, then remove the data folder and the owner file. Exit 0 when cleaned up or nothing to do.
// Plain JavaScript with no dependencies, so it starts in milliseconds and outlives the owner.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const [ownerFile, pollArg] = process.argv.slice(2);
const pollMs = Number(pollArg ?? "1000");

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

function readOwner() {
  try {
    return JSON.parse(readFileSync(ownerFile, "utf8"));
  } catch {
    return undefined;
  }
}

function postmasterPid(dataDir) {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function cleanUp(owner) {
  const pid = postmasterPid(owner.dataDir);
  if (pid !== undefined && alive(pid)) {
    try {
      process.kill(pid, "SIGQUIT"); // immediate shutdown: the folder is thrown away anyway
    } catch {}
    for (let i = 0; i < 100 && alive(pid); i += 1) await sleep(100);
    if (alive(pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
      for (let i = 0; i < 50 && alive(pid); i += 1) await sleep(100);
    }
  }
  rmSync(owner.dataDir, { recursive: true, force: true });
  rmSync(ownerFile, { force: true });
}

const owner = readOwner();
if (!owner || typeof owner.ownerPid !== "number" || typeof owner.dataDir !== "string") process.exit(0);
if (pollMs > 0) {
  while (existsSync(ownerFile) && alive(owner.ownerPid)) await sleep(pollMs);
  if (!existsSync(ownerFile)) process.exit(0);
}
await cleanUp(owner);
process.exit(0);
