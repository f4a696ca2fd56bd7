// The three stores the constraint tests run on, behind one tiny raw-SQL interface: SQLite (the
// default store, migrated by openStore), PGlite (in-process PostgreSQL in WASM) and a real
// PostgreSQL server (the run's throwaway server from @mosoo/test-postgres; one database per file).
// Each is migrated by its own migrator from its own migrations folder.
import pg from "pg";
import { useTestDatabase } from "@mosoo/test-postgres";
import { openSqliteStore } from "../../src/platform/db/sqlite/sqlite-store.js";
import { openPglite } from "../../src/platform/db/postgres/migrate-pglite.js";
import { migratePostgres } from "../../src/platform/db/postgres/migrate-postgres.js";
import { classifyPgError } from "../../src/platform/db/postgres/pg-errors.js";

/** What a statement came to, the same shape on every store: `ok`, or the kind of refusal and (for CHECKs and PostgreSQL indexes) its name. */
export type SqlOutcome = "ok" | { kind: string; constraint?: string | undefined };

/** One migrated store, driven by raw SQL text that all three dialects accept. */
export interface SqlTarget {
  name: "sqlite" | "pglite" | "postgres";
  /** Runs one or more statements; rejects with the driver's error. */
  exec(sql: string): Promise<void>;
  /** Runs one query and returns its rows. */
  rows(sql: string): Promise<Record<string, unknown>[]>;
  /** The refusal an error stands for on this store (how the SQLite code reads SQLite errors today; `classifyPgError` on PostgreSQL). */
  outcomeOf(err: unknown): SqlOutcome;
  close(): Promise<void>;
}

/** How SQLite errors are read today (`SQLITE_CONSTRAINT_*` codes; the fence trigger's RAISE message), as a {@link SqlOutcome}. */
function sqliteOutcome(err: unknown): SqlOutcome {
  const { code, message } = err as { code?: string; message?: string };
  switch (code) {
    case "SQLITE_CONSTRAINT_UNIQUE":
    case "SQLITE_CONSTRAINT_PRIMARYKEY":
      return { kind: "unique_violation" };
    case "SQLITE_CONSTRAINT_CHECK":
      return { kind: "check_violation", constraint: /CHECK constraint failed: (\w+)/.exec(message ?? "")?.[1] };
    case "SQLITE_CONSTRAINT_FOREIGNKEY":
      return { kind: "foreign_key_violation" };
    case "SQLITE_CONSTRAINT_NOTNULL":
      return { kind: "not_null_violation" };
    case "SQLITE_CONSTRAINT_TRIGGER":
      if (message === "effect.fence_retained") return { kind: "fence_retained" };
  }
  throw err;
}

function pgOutcome(err: unknown): SqlOutcome {
  const f = classifyPgError(err);
  if (!f) throw err;
  if (f.kind === "check_violation" || f.kind === "unique_violation") return { kind: f.kind, constraint: f.constraint };
  return { kind: f.kind };
}

/** A fresh in-memory SQLite store (the production migrations, foreign keys on). */
export async function openSqliteTarget(): Promise<SqlTarget> {
  const store = openSqliteStore(":memory:");
  return {
    name: "sqlite",
    exec: async (sql) => void store.sqlite.exec(sql),
    rows: async (sql) => store.sqlite.prepare(sql).all() as Record<string, unknown>[],
    outcomeOf: sqliteOutcome,
    close: async () => store.close(),
  };
}

/** A fresh in-memory PGlite database with the PostgreSQL migrations. */
export async function openPgliteTarget(): Promise<SqlTarget> {
  const h = await openPglite();
  return {
    name: "pglite",
    exec: async (sql) => void (await h.client.exec(sql)),
    rows: async (sql) => (await h.client.query<Record<string, unknown>>(sql)).rows,
    outcomeOf: pgOutcome,
    close: () => h.close(),
  };
}

/** A fresh database on the run's real PostgreSQL server, migrated, on one connection (so BEGIN … ROLLBACK spans statements). */
export async function openPostgresTarget(prefix: string): Promise<SqlTarget & { url: string }> {
  const db = await useTestDatabase(prefix);
  await migratePostgres(db.url);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  return {
    name: "postgres",
    url: db.url,
    exec: async (sql) => void (await client.query(sql)),
    rows: async (sql) => (await client.query<Record<string, unknown>>(sql)).rows,
    outcomeOf: pgOutcome,
    close: async () => {
      await client.end();
      await db.drop();
    },
  };
}
