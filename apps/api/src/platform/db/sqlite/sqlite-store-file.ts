// Tells, read-only, whether a file is an existing Mosoo SQLite store, so a wrong `--db` file is never turned into one.
import Database from "better-sqlite3";

/**
 * True when `file` is an existing SQLite file that holds a Mosoo store (applied drizzle migrations
 * and the effect table), read through a read-only connection that is closed at once; false for
 * anything else (missing, not SQLite, another application's database). Never creates or changes
 * the file, so `--db` pointed at the wrong SQLite file (e.g. the provider's) never turns it into a store.
 */
export function isMosooSqliteStoreFile(file: string): boolean {
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('__drizzle_migrations', 'external_tool_effects')")
        .all();
      return tables.length === 2;
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
}
