// The two PostgreSQL stores the store-level tests run on: PGlite (in-process) and the real server of
// the test run (@mosoo/test-postgres: one fresh database per file), behind the port's `Store`, plus
// the raw SQL the tests need (a DO block, a count) through the unit of work's own connection.
import { asc, eq, like, sql, type SQL } from "drizzle-orm";
import { useTestDatabase } from "@mosoo/test-postgres";
import type { Store, StoreTx } from "../../src/platform/db/store.port.js";
import { openPgliteStore } from "../../src/platform/db/postgres/pglite-store.js";
import { openStore } from "../../src/platform/db/store-factory.js";
import { openPostgresStore, type PostgresStoreOptions } from "../../src/platform/db/postgres/postgres-store.js";

/** An open store and how to end it (the real server's database is dropped too). */
export interface PgStoreTarget {
  name: "sqlite" | "pglite" | "postgres";
  store: Store;
  close(): Promise<void>;
}

/** Opens the embedded SQLite store (in memory) through the store factory, to hold the PostgreSQL stores to its behaviour. */
export async function openSqliteTarget(): Promise<PgStoreTarget> {
  const store = await openStore({ kind: "sqlite", file: ":memory:" });
  return { name: "sqlite", store, close: () => store.close() };
}

/** Opens the PGlite store (migrated, in memory). */
export async function openPgliteTarget(): Promise<PgStoreTarget> {
  const store = await openPgliteStore();
  return { name: "pglite", store, close: () => store.close() };
}

/** Opens the PostgreSQL store on a fresh database of the run's real server (migrated at open). */
export async function openPostgresTarget(prefix: string, opts: PostgresStoreOptions = {}): Promise<PgStoreTarget & { url: string }> {
  const database = await useTestDatabase(prefix);
  const store = await openPostgresStore(database.url, opts);
  return {
    name: "postgres",
    store,
    url: database.url,
    close: async () => {
      await store.close();
      await database.drop();
    },
  };
}

/** Runs raw SQL on the unit of work's connection (both PostgreSQL drivers' drizzle builders have `execute`). */
export async function execSql(tx: StoreTx, query: SQL): Promise<Record<string, unknown>[]> {
  const db = tx.db as unknown as { execute(q: SQL): Promise<{ rows: Record<string, unknown>[] }> };
  return (await db.execute(query)).rows;
}

/** Inserts a `sessions` row (the smallest table of the schema) through the port's query builder. */
export async function insertSession(tx: StoreTx, id: string, createdAtMs = 1): Promise<void> {
  await tx.db.insert(tx.tables.sessions).values({ id, createdAtMs });
}

/** The ids of the `sessions` rows whose id starts with `prefix`, sorted, as a committed read sees them (query builder: every store). */
export async function sessionIds(store: Store, prefix: string): Promise<string[]> {
  return store.read(async (tx) => {
    const s = tx.tables.sessions;
    const rows = await tx.db
      .select({ id: s.id })
      .from(s)
      .where(like(s.id, `${prefix}%`))
      .orderBy(asc(s.id));
    return rows.map((r) => r.id);
  });
}

/** The `created_at_ms` of one session, read through the port's query builder. */
export async function sessionCreatedAt(store: Store, id: string): Promise<unknown> {
  return store.read(async (tx) => {
    const s = tx.tables.sessions;
    return (await tx.db.select({ t: s.createdAtMs }).from(s).where(eq(s.id, id)))[0]?.t;
  });
}

/** Raises SQLSTATE `code` from a plpgsql DO block (what PostgreSQL sends for a lost serialization or a deadlock). */
export function raiseSqlState(tx: StoreTx, code: "40001" | "40P01"): Promise<unknown> {
  return execSql(tx, sql.raw(`DO $$ BEGIN RAISE EXCEPTION 'provoked %', '${code}' USING ERRCODE = '${code}'; END $$`));
}

/** A promise with its resolver, to order two units of work by events instead of timers. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
