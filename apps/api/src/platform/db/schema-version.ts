// Refuses a database migrated by a newer build, and compares a database's newest migration with this build's.
import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The database was migrated by a newer build than this one: its newest applied migration (drizzle's
 * `__drizzle_migrations.created_at`, the migration folder's timestamp in ms) is later than the newest
 * migration this build ships. drizzle's migrator would silently apply nothing, and this build would
 * then run against columns, constraints and triggers it does not know (a rollback, or an old instance
 * restarted beside upgraded ones on one PostgreSQL database). Code `store.schema_newer`; startup must
 * stop (the API maps it to `config.invalid`). Nothing was written.
 */
export class StoreSchemaNewerError extends Error {
  override readonly name = "StoreSchemaNewerError";
  readonly code = "store.schema_newer";
  constructor(
    /** Newest migration time (ms) recorded in the database. */
    readonly appliedMs: number,
    /** Newest migration time (ms) of this build's migration folder. */
    readonly knownMs: number,
  ) {
    super(
      `store.schema_newer: the database was migrated by a newer build (its newest migration is from ${new Date(appliedMs).toISOString()}, ` +
        `this build's newest from ${new Date(knownMs).toISOString()}); run that newer build, or restore a backup taken before the upgrade`,
    );
  }
}

/**
 * The database has not been migrated to this build's schema yet (its newest applied migration is older than this
 * build's newest, or it has none), and the caller must not migrate it: the operator CLI, which could otherwise
 * change the schema under an API of the previous build that still serves the same file. Code `store.schema_behind`;
 * start this build's API once (it migrates at startup), then run the command again. Nothing was written.
 */
export class StoreSchemaBehindError extends Error {
  override readonly name = "StoreSchemaBehindError";
  readonly code = "store.schema_behind";
  constructor() {
    super(
      "store.schema_behind: the store has not been migrated to this build's schema, and this command does not migrate; " +
        "start this build's API once (it migrates at startup), then run the command again",
    );
  }
}

/** Newest `when` (ms) of a drizzle-kit migration folder's `meta/_journal.json`. @throws Error when the journal is missing or has no entry. */
function newestJournalMs(migrationsFolder: string): number {
  const journal = JSON.parse(readFileSync(join(migrationsFolder, "meta", "_journal.json"), "utf8")) as { entries: Array<{ when: number }> };
  const newest = Math.max(...journal.entries.map((e) => e.when));
  if (!Number.isFinite(newest)) throw new Error(`no migration in ${migrationsFolder}`);
  return newest;
}

/**
 * Throws {@link StoreSchemaNewerError} when `appliedMs` (the database's newest recorded migration, null
 * when none) is later than the newest migration of `migrationsFolder`. Call it after migrating.
 */
export function assertSchemaNotNewer(appliedMs: number | null, migrationsFolder: string): void {
  if (appliedMs === null) return;
  const knownMs = newestJournalMs(migrationsFolder);
  if (appliedMs > knownMs) throw new StoreSchemaNewerError(appliedMs, knownMs);
}

/** How a database's schema compares with this build's migrations: the same newest migration, older (not migrated yet), or newer (another build migrated it). */
export type SchemaState = "current" | "behind" | "newer";

/** Compares `appliedMs` (the database's newest recorded migration, null when none) with the newest migration of `migrationsFolder`. Pure but for reading the journal. */
export function compareSchema(appliedMs: number | null, migrationsFolder: string): SchemaState {
  const knownMs = newestJournalMs(migrationsFolder);
  if (appliedMs === null || appliedMs < knownMs) return "behind";
  return appliedMs > knownMs ? "newer" : "current";
}
