// Startup checks on operator-given files: refuses an unusable SQLite store path, reads the bindings file without blocking.
import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync, realpathSync, statSync, accessSync } from "node:fs";
import { dirname, resolve, sep } from "node:path";
import { ConfigError } from "./api-config.js";

/** Largest bindings file read at startup, in bytes (1 MiB); a larger one is refused, never read. */
const MAX_BINDINGS_FILE_BYTES = 1024 * 1024;

/** Pseudo file systems a store can never live on (SQLite spins or fails there). */
const PSEUDO_FS_ROOTS = ["/proc", "/sys", "/dev"];

function underPseudoFs(path: string): string | undefined {
  return PSEUDO_FS_ROOTS.find((root) => path === root || path.startsWith(`${root}${sep}`));
}

/** The real path of `path`'s nearest existing ancestor (or of `path` itself when it exists). */
function nearestExisting(path: string): { real: string; exists: boolean } {
  let p = resolve(path);
  let exists = true;
  for (;;) {
    try {
      return { real: realpathSync(p), exists };
    } catch {
      const parent = dirname(p);
      if (parent === p) return { real: p, exists: false };
      p = parent;
      exists = false;
    }
  }
}

const SQLITE_HEADER = Buffer.from("SQLite format 3\u0000", "latin1");

/** True when the regular file `path` starts with SQLite's 16-byte header ("SQLite format 3\0"). */
function startsWithSqliteHeader(path: string): boolean {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const head = Buffer.alloc(SQLITE_HEADER.length);
    return readSync(fd, head, 0, head.length, 0) === head.length && head.equals(SQLITE_HEADER);
  } finally {
    closeSync(fd);
  }
}

const firstLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "";

/**
 * Refuses, before SQLite ever opens it, a store path the API could hang on or fail later with
 * (`MOSOO_DB_FILE` under `/proc` spun at 100% CPU): a path under `/proc`, `/sys` or `/dev`
 * (symlinks resolved), an existing path that is not a regular file (a directory, a FIFO, a device),
 * a file that cannot be read and written, a non-empty file without SQLite's header, or a folder that cannot be created or written. `:memory:`
 * is always fine. Synchronous and bounded (a few `stat`s; nothing that can block on a FIFO).
 * @throws ConfigError `config.invalid: MOSOO_DB_FILE: ...` (one line).
 */
export function checkDbFilePath(file: string): void {
  if (file === ":memory:") return;
  const fail = (why: string) => new ConfigError(`config.invalid: MOSOO_DB_FILE: ${why} (${file})`);
  const { real, exists } = nearestExisting(file);
  const pseudo = underPseudoFs(real) ?? underPseudoFs(resolve(file));
  if (pseudo) throw fail(`a store cannot live under ${pseudo}`);
  if (exists) {
    const st = statSync(real);
    if (!st.isFile()) throw fail(st.isDirectory() ? "is a directory, not a file" : "is not a regular file");
    try {
      accessSync(real, constants.R_OK | constants.W_OK);
    } catch (err) {
      throw fail(`cannot be read and written: ${firstLine(err)}`);
    }
    if (st.size > 0 && !startsWithSqliteHeader(real)) throw fail("is not a SQLite database (no SQLite header)");
    return;
  }
  const folder = dirname(resolve(file));
  try {
    mkdirSync(folder, { recursive: true });
    if (!statSync(folder).isDirectory()) throw new Error(`${folder} is not a directory`);
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw fail(`its folder cannot be created or written: ${firstLine(err)}`);
  }
}

/**
 * Reads the bindings file named by `MOSOO_RECONCILIATION_BINDINGS_FILE` safely: opened
 * non-blocking (a FIFO never blocks startup), refused unless it is a regular file of at most
 * {@link MAX_BINDINGS_FILE_BYTES}; then read whole as UTF-8.
 * @throws ConfigError `config.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: ...` (one line).
 */
export function readBindingsFileText(file: string): string {
  const fail = (why: string) => new ConfigError(`config.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: ${why} (${file})`);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw fail(`cannot open: ${firstLine(err)}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw fail(st.isDirectory() ? "is a directory, not a file" : "is not a regular file");
    if (st.size > MAX_BINDINGS_FILE_BYTES) throw fail(`is ${st.size} bytes, larger than ${MAX_BINDINGS_FILE_BYTES}`);
    const buf = Buffer.alloc(st.size);
    let read = 0;
    while (read < st.size) {
      const n = readSync(fd, buf, read, st.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buf.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
