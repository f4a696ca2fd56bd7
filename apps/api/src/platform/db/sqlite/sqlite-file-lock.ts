// An exclusive lock on a file that lasts as long as the process holding it, taken through SQLite's own file locking.
import { renameSync, rmSync } from "node:fs";
import Database from "better-sqlite3";

/** A held lock: `release()` gives it up (idempotent); the kernel also drops it when the holding process ends, however it ends. */
export interface HeldFileLock {
  release(): void;
}

/**
 * Makes `file` (which must not exist) as a tiny SQLite database and holds an exclusive lock on it
 * (`locking_mode = EXCLUSIVE`: on Unix a POSIX record lock, dropped by the kernel when the process dies, SIGKILL
 * included; it holds across PID namespaces, since it belongs to the file). The file is made under `<file>.pending`
 * and renamed once locked, so `file` never exists unlocked while its holder lives. Node has no `flock` of its own;
 * SQLite's locking is the one the project already ships (better-sqlite3).
 * @throws better-sqlite3's `SqliteError` (`SQLITE_CANTOPEN`, `SQLITE_BUSY`…) or the rename's error (ENOENT, EACCES)
 *   when the file cannot be made or locked; nothing is left locked then, and no `<file>.pending`.
 */
export function holdExclusiveFileLock(file: string): HeldFileLock {
  const pending = `${file}.pending`;
  const db = new Database(pending);
  try {
    db.pragma("journal_mode = MEMORY");
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec(`BEGIN EXCLUSIVE; CREATE TABLE holder (pid INTEGER NOT NULL); INSERT INTO holder VALUES (${process.pid}); COMMIT`);
    renameSync(pending, file);
  } catch (err) {
    db.close();
    rmSync(pending, { force: true });
    throw err;
  }
  return { release: () => db.close() };
}

/**
 * True when `file` exists and nobody holds its lock any more ({@link holdExclusiveFileLock}'s holder released it or
 * ended); false while it is held, when the file is missing, or when it cannot be opened as such a lock. Takes the lock
 * for an instant to find out, and gives it back at once.
 */
export function fileLockIsFree(file: string): boolean {
  let db: Database.Database;
  try {
    db = new Database(file, { fileMustExist: true, timeout: 0 });
  } catch {
    return false;
  }
  try {
    db.exec("BEGIN EXCLUSIVE");
    db.exec("ROLLBACK");
    return true;
  } catch {
    return false; // SQLITE_BUSY: its holder holds it
  } finally {
    db.close();
  }
}
