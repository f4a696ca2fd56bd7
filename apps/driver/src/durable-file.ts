/** Durable small-file writes of the Driver's local state: atomic replace, fsync of the file and of its directory. */
import { randomBytes } from "node:crypto";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * Writes `text` (UTF-8) to `filePath` so that after a crash or power loss the file holds either its
 * old content or all of `text`, never a part: a temporary file in the same directory (mode `mode`,
 * set explicitly so the process umask does not matter) is written and fsynced, renamed over
 * `filePath`, then the directory is fsynced so the rename itself is on disk (POSIX `rename(2)` is
 * atomic but durable only once the directory is synced). The directory is created (mode 0700) if needed.
 * @throws Error (fs errors such as `ENOSPC`, `EACCES`) when it cannot be written; the temporary file is removed then.
 */
export async function writeFileDurably(filePath: string, text: string, mode: number): Promise<void> {
  const dir = dirname(filePath);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${basename(filePath)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(tmp, "wx", mode);
  try {
    await handle.chmod(mode);
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(tmp, { force: true });
    throw error;
  }
  await handle.close();
  await rename(tmp, filePath);
  await syncDirectory(dir);
}

/**
 * Deletes `filePath` (a missing file is fine) and fsyncs its directory, so the deletion survives a crash.
 * @throws Error (fs errors other than a missing file or directory).
 */
export async function removeFileDurably(filePath: string): Promise<void> {
  await rm(filePath, { force: true });
  await syncDirectory(dirname(filePath)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
}

/** fsync of a directory (its entries: creations, renames, deletions). */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
