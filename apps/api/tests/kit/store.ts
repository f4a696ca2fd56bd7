/**
 * Stores for tests: in memory, or a SQLite file in a temp folder copied from a migrated template
 * (so a test that restarts the "API process" on the same file pays for the migrations once per
 * test file, not once per world).
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getTableName, is, sql, type SQL } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { useTestDatabase } from "@mosoo/test-postgres";
import { openSqliteStore, type SqliteStore } from "../../src/platform/db/sqlite/sqlite-store.js";
import { openPgliteStore } from "../../src/platform/db/postgres/pglite-store.js";
import { openPostgresStore } from "../../src/platform/db/postgres/postgres-store.js";
import * as pgSchema from "../../src/platform/db/postgres/postgres-schema.js";
import type { Store as PortStore } from "../../src/platform/db/store.port.js";

export type { PortStore };

/** The store the SQLite-only tests use: the SQLite implementation of the store port (its raw `sqlite` handle for fixtures and checks). */
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

/**
 * A migrated, checkpointed store file, made once per test file (process); copy it, do not open it. It stays in
 * WAL mode (closing its only connection checkpoints the log into the file and deletes it), so a copy opens as
 * the API opens any store of its own: no journal-mode change, which would rewrite and sync the file per copy.
 */
function migratedTemplate(): string {
  if (!templateDir) {
    templateDir = mkdtempSync(join(tmpdir(), "ledger-model-template-"));
    const s = openSqliteStore(join(templateDir, "template.db"));
    s.closeNow();
    if (existsSync(join(templateDir, "template.db-wal")))
      throw new Error("the migrated template kept its WAL file: the copy would miss it");
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

/** The store implementations a test world can run on: embedded SQLite (default), PGlite (in-process PostgreSQL), the run's real PostgreSQL server. */
export type StoreKind = "sqlite" | "pglite" | "postgres";

/** Every {@link StoreKind}, in the order the shared suites run them. */
export const STORE_KINDS: readonly StoreKind[] = ["sqlite", "pglite", "postgres"];

/** An open store of any kind behind the port, and how to end it (a real server's database is dropped too). */
export interface OpenedStore {
  kind: StoreKind;
  store: PortStore;
  close(): Promise<void>;
}

/**
 * Opens a migrated, empty store of `kind`: SQLite in memory, PGlite in memory, or a fresh database
 * (named `<prefix>_…`) on the test run's real PostgreSQL server (MOSOO_TEST_DATABASE_URL, set by
 * the api project's globalSetup; a server is started for the caller alone when it is unset).
 * @throws Error when the store cannot be opened or migrated.
 */
export async function openStoreOfKind(kind: StoreKind, prefix = "kit"): Promise<OpenedStore> {
  if (kind === "sqlite") {
    const store = openSqliteStore(":memory:");
    return { kind, store, close: () => store.close() };
  }
  if (kind === "pglite") {
    const store = await openPgliteStore();
    return { kind, store, close: () => store.close() };
  }
  const database = await useTestDatabase(prefix);
  const store = await openPostgresStore(database.url);
  return {
    kind,
    store,
    close: async () => {
      await store.close();
      await database.drop();
    },
  };
}

/**
 * Empties every table of a PostgreSQL store (PGlite or the real server) in one TRUNCATE, so a suite
 * can reuse one migrated store between tests instead of paying for a new one (PGlite starts in
 * seconds). It bypasses the fence on purpose (a test reset, not a delete of the ledger): TRUNCATE
 * fires no row DELETE trigger, and the statement trigger against TRUNCATE (drizzle-pg 0004) is
 * switched off for this transaction alone by `SET LOCAL session_replication_role = replica` (needs a
 * superuser, which the test server's and PGlite's roles are). @throws Error on a SQLite store (open a
 * new one instead), or when the role may not set `session_replication_role`.
 */
export async function truncatePgStore(store: PortStore): Promise<void> {
  if (store.dialect !== "postgres") throw new Error("truncatePgStore: only a PostgreSQL store can be truncated; open a new SQLite store");
  const names = Object.values(pgSchema as Record<string, unknown>)
    .filter((t) => is(t, PgTable))
    .map((t) => `"${getTableName(t as PgTable)}"`);
  await store.transaction(async (tx) => {
    const db = tx.db as unknown as { execute(q: SQL): Promise<unknown> };
    await db.execute(sql.raw("SET LOCAL session_replication_role = replica"));
    await db.execute(sql.raw(`TRUNCATE ${names.join(", ")} RESTART IDENTITY CASCADE`));
  });
}
