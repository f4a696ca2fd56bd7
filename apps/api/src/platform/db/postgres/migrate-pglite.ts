// Starts and migrates PGlite (in-process PostgreSQL) with the real PostgreSQL migrations, for fast store-level tests.
import { PGlite } from "@electric-sql/pglite";
import { drizzle, type PgliteDatabase } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { PG_MIGRATIONS_FOLDER } from "./migrate-postgres.js";
import * as schema from "./postgres-schema.js";

/** A drizzle handle on PGlite (PostgreSQL in WASM, in-process) typed with the PostgreSQL schema. */
export type PgliteDb = PgliteDatabase<typeof schema>;

/** An open PGlite store: the drizzle handle, the PGlite instance, and `close()`. */
export interface PgliteHandle {
  db: PgliteDb;
  client: PGlite;
  close(): Promise<void>;
}

/**
 * Applies the PostgreSQL migrations ({@link PG_MIGRATIONS_FOLDER}, the same files as on a real server)
 * to a PGlite database through drizzle's PGlite migrator. Idempotent.
 * @throws Error (PGlite's `DatabaseError`) when a migration fails; nothing of that migration is kept.
 */
export async function migratePglite(db: PgliteDb): Promise<void> {
  await migrate(db, { migrationsFolder: PG_MIGRATIONS_FOLDER });
}

/**
 * Starts PGlite (in memory when `dataDir` is omitted, else persisted in that folder), migrates it
 * ({@link migratePglite}) and returns the handle. For fast store-level tests only: one connection,
 * one process; it never stands in for the real server in multi-instance tests.
 * PGlite parses `int8` to a JS `number` when it fits exactly (as `installPgTypeParsers` makes `pg` do).
 * @throws Error when PGlite cannot start or a migration fails (the instance is closed then).
 */
export async function openPglite(dataDir?: string): Promise<PgliteHandle> {
  const client = new PGlite(dataDir);
  try {
    await client.waitReady;
    const db = drizzle({ client, schema });
    await migratePglite(db);
    return { db, client, close: () => client.close() };
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
}
