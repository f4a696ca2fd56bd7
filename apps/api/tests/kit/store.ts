/**
 * Stores for tests: in memory, or a SQLite file in a temp folder copied from a migrated template
 * (so a test that restarts the "API process" on the same file pays for the migrations once per
 * test file, not once per world).
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore, type SqliteStore } from "../../src/platform/db/sqlite/sqlite-store.js";

/** The store the tests use: the SQLite implementation of the store port (its raw `sqlite` handle for fixtures and checks). */
export type Store = SqliteStore;

/** Opens and migrates a store on `file` (default `:memory:`), as the API does at startup. */
export function openTestStore(file = ":memory:"): Store {
  return openSqliteStore(file);
}

/** A temp folder the test owns; `remove()` deletes it with everything in it. */
export interface TempDir {
  dir: string;
  remove(): void;
}

/** Creates a temp folder named `<prefix>XXXXXX` under the OS temp folder. */
export function createTempDir(prefix = "mosoo-test-"): TempDir {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

let templateDir: string | null = null;

/** A migrated, checkpointed store file, made once per test file (process); copy it, do not open it. */
function migratedTemplate(): string {
  if (!templateDir) {
    templateDir = mkdtempSync(join(tmpdir(), "ledger-model-template-"));
    const s = openSqliteStore(join(templateDir, "template.db"));
    s.sqlite.pragma("journal_mode = DELETE");
    s.closeNow();
  }
  return join(templateDir, "template.db");
}

/** Removes the migrated template (call in `afterAll`, or at the end of a script). */
export function removeMigratedTemplate(): void {
  if (templateDir) rmSync(templateDir, { recursive: true, force: true });
  templateDir = null;
}

/** A fresh store file in a new temp folder (`<prefix>XXXXXX/<name>`), copied from {@link migratedTemplate}; not opened. */
export function copyMigratedStoreFile(prefix: string, name: string): TempDir & { file: string } {
  const temp = createTempDir(prefix);
  const file = join(temp.dir, name);
  copyFileSync(migratedTemplate(), file);
  return { ...temp, file };
}
