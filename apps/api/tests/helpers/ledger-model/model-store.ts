/**
 * Where the ledger model's worlds live (docs/DESIGN.md §11: the same proofs on every store of the port):
 * - `sqlite` (the default): a file copied from a migrated template per world, read with raw SQL on
 *   the file; the audit trigger stamps each change with the model clock through a JS SQL function
 *   (ledger-model-world.ts). Unchanged from before the PostgreSQL stores.
 * - `pglite`: ONE migrated in-memory PGlite store per process, emptied (TRUNCATE) before each world;
 *   an "API process" restart is a new runtime on it (PGlite has one connection and starts in seconds).
 * - `postgres`: ONE database on a real server per process, emptied before each world; each "API
 *   process" is a new `PostgresStore` (its own pool), so a restart really drops its connections.
 * On both PostgreSQL stores the test-only audit is a plpgsql trigger (deferred to COMMIT) into the same
 * audit tables, and the rows are read through the port's unit of work ({@link ModelRows}).
 */
import { getTableName, is, sql, type SQL } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { createTestDatabase, useTestDatabase } from "@mosoo/test-postgres";
import type { Store as PortStore, StoreTx } from "../../../src/platform/db/store.port.js";
import { PgliteStore, openPgliteStore } from "../../../src/platform/db/postgres/pglite-store.js";
import { openPostgresStore } from "../../../src/platform/db/postgres/postgres-store.js";
import * as pgSchema from "../../../src/platform/db/postgres/postgres-schema.js";
import type { Store as SqliteTestStore } from "../../kit/index.js";

/** The stores the model runs on (`npm run verify:model -- --store <kind>`). */
export const MODEL_STORE_KINDS = ["sqlite", "pglite", "postgres"] as const;
export type ModelStoreKind = (typeof MODEL_STORE_KINDS)[number];

/**
 * Where the worlds of one process live, opened once by {@link openModelTarget} and shared by the runs
 * one after the other (never two worlds at once on a PostgreSQL target: each world empties it).
 */
export type ModelStoreTarget = { kind: "sqlite" } | { kind: "pglite"; store: PgliteStore } | { kind: "postgres"; url: string };

/** An opened target and how to end it (PGlite closed; the real server's database dropped, a server this started stopped). */
export interface OpenedModelTarget {
  target: ModelStoreTarget;
  /** What runs the worlds, for a progress line: `sqlite`, `pglite`, or `postgres (database <name>)`. */
  label: string;
  close(): Promise<void>;
}

/**
 * Opens the target of `kind`. `postgres`: a fresh database named `ledger_model_…` on the server at
 * `serverUrl` (a role that may CREATE DATABASE and owns what it creates), else on the test run's
 * server (`MOSOO_TEST_DATABASE_URL`, set by the api project's vitest globalSetup), else on a throwaway
 * server started here (@mosoo/test-postgres, stopped by `close()`); migrated, audit installed.
 * @throws Error when PGlite cannot start, or no server can be reached or started.
 */
export async function openModelTarget(kind: ModelStoreKind, opts: { serverUrl?: string | undefined } = {}): Promise<OpenedModelTarget> {
  if (kind === "sqlite") return { target: { kind }, label: "sqlite", close: async () => undefined };
  if (kind === "pglite") {
    const store = await openPgliteStore();
    await installPgAudit(store);
    return { target: { kind, store }, label: "pglite", close: () => store.close() };
  }
  const database = opts.serverUrl ? await createTestDatabase(opts.serverUrl, "ledger_model") : await useTestDatabase("ledger_model");
  try {
    const store = await openPostgresStore(database.url);
    try {
      await installPgAudit(store);
    } finally {
      await store.close();
    }
  } catch (err) {
    await database.drop().catch(() => undefined);
    throw err;
  }
  return { target: { kind, url: database.url }, label: `postgres (database ${database.name})`, close: () => database.drop() };
}

// ---------------------------------------------------------------------------------------------
// Row reads

/**
 * Raw SQL reads of the model's checks (the test never trusts the services' own views), the same text
 * on every store: `?` placeholders, snake_case columns, no dialect-only syntax (`WHERE terminal`, not
 * `terminal = 1`). Numbers come back as numbers on every store (int8 is parsed to number by both
 * PostgreSQL stores). `sync` is the SQLite handle, for the one read that must not yield (the adapter's
 * check at lookup time keeps SQLite's timing exactly).
 */
export interface ModelRows {
  all<T>(query: string, ...params: unknown[]): Promise<T[]>;
  get<T>(query: string, ...params: unknown[]): Promise<T | undefined>;
  readonly sync: { get<T>(query: string, ...params: unknown[]): T | undefined } | null;
}

/** {@link ModelRows} on the SQLite test store `store()` (the current one: a restart replaces it), through its raw handle. */
export function sqliteRows(store: () => SqliteTestStore): ModelRows {
  const sync = {
    get: <T>(query: string, ...params: unknown[]) =>
      store()
        .sqlite.prepare(query)
        .get(...params) as T | undefined,
  };
  return {
    all: async <T>(query: string, ...params: unknown[]) =>
      store()
        .sqlite.prepare(query)
        .all(...params) as T[],
    get: async <T>(query: string, ...params: unknown[]) => sync.get<T>(query, ...params),
    sync,
  };
}

/** {@link ModelRows} on a PostgreSQL store `store()` (the current one), each read one `store.read` unit of work. */
export function pgRows(store: () => PortStore): ModelRows {
  const all = <T>(query: string, ...params: unknown[]) => store().read(async (tx) => (await execSql(tx, withParams(query, params))) as T[]);
  return { all, get: async <T>(query: string, ...params: unknown[]) => (await all<T>(query, ...params))[0], sync: null };
}

/** `query` with each `?` replaced by the next of `params`, as a drizzle SQL (bound parameters). @throws Error on a count mismatch. */
function withParams(query: string, params: unknown[]): SQL {
  const parts = query.split("?");
  if (parts.length !== params.length + 1)
    throw new Error(`model-store: ${parts.length - 1} placeholders, ${params.length} params: ${query}`);
  const chunks: SQL[] = [];
  parts.forEach((part, i) => {
    chunks.push(sql.raw(part));
    if (i < params.length) chunks.push(sql`${params[i]}`);
  });
  return sql.join(chunks);
}

/** Raw SQL on a PostgreSQL unit of work's connection (both PostgreSQL drizzle builders have `execute`). */
async function execSql(tx: StoreTx, query: SQL): Promise<Record<string, unknown>[]> {
  const db = tx.db as unknown as { execute(q: SQL): Promise<{ rows: Record<string, unknown>[] }> };
  return (await db.execute(query)).rows;
}

// ---------------------------------------------------------------------------------------------
// The audit on PostgreSQL

/** The session setting that carries the model clock (ms) into the audit trigger, set per transaction (`SET LOCAL` scope). */
const CLOCK_SETTING = "ledger_model.now_ms";

/**
 * The audit of ledger-model-world.ts (`audit_effect`, `audit_command`: the same columns) as plpgsql
 * triggers. They are DEFERRED constraint triggers: each row change is logged at COMMIT, in order,
 * with its OLD and NEW row, and `at_ms` is the model clock at that COMMIT ({@link CLOCK_SETTING},
 * which {@link clockStampedStore} sets as the last statement of every runtime transaction). On SQLite
 * `at_ms` is the clock at the statement; the two differ only when the model clock moves while a
 * transaction is open (a race command's lease expiry), and the commit time is when the change took
 * effect. Idempotent (drops and re-creates the triggers).
 */
async function installPgAudit(store: PortStore): Promise<void> {
  const statements = [
    `CREATE TABLE IF NOT EXISTS audit_effect (
      seq BIGSERIAL PRIMARY KEY, id TEXT, op TEXT,
      old_status TEXT, new_status TEXT, old_version BIGINT, new_version BIGINT,
      old_resolution TEXT, new_resolution TEXT, old_result TEXT, new_result TEXT,
      old_rreceipt TEXT, new_rreceipt TEXT, old_preceipt TEXT, new_preceipt TEXT,
      old_attempts BIGINT, new_attempts BIGINT,
      old_lease_owner TEXT, new_lease_owner TEXT, old_lease_exp BIGINT, new_lease_exp BIGINT, at_ms BIGINT)`,
    `CREATE TABLE IF NOT EXISTS audit_command (
      seq BIGSERIAL PRIMARY KEY, id TEXT, op TEXT, old_status TEXT, new_status TEXT,
      old_result TEXT, new_result TEXT, old_error TEXT, new_error TEXT, old_terminal BIGINT, new_terminal BIGINT)`,
    `CREATE OR REPLACE FUNCTION ledger_model_audit_effect() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_effect (id, op, new_status, new_version, new_resolution, new_result, new_rreceipt, new_preceipt, new_attempts)
        VALUES (NEW.id, 'insert', NEW.status, NEW.version, NEW.resolution, NEW.result_json, NEW.reconciliation_receipt_json,
          NEW.provider_receipt_json, NEW.attempt_count);
        RETURN NEW;
      ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO audit_effect (id, op, old_status, new_status, old_version, new_version, old_resolution, new_resolution,
          old_result, new_result, old_rreceipt, new_rreceipt, old_preceipt, new_preceipt, old_attempts, new_attempts,
          old_lease_owner, new_lease_owner, old_lease_exp, new_lease_exp, at_ms)
        VALUES (NEW.id, 'update', OLD.status, NEW.status, OLD.version, NEW.version, OLD.resolution, NEW.resolution,
          OLD.result_json, NEW.result_json, OLD.reconciliation_receipt_json, NEW.reconciliation_receipt_json,
          OLD.provider_receipt_json, NEW.provider_receipt_json, OLD.attempt_count, NEW.attempt_count,
          OLD.lease_owner, NEW.lease_owner, OLD.lease_expires_at_ms, NEW.lease_expires_at_ms,
          NULLIF(current_setting('${CLOCK_SETTING}', true), '')::bigint);
        RETURN NEW;
      END IF;
      INSERT INTO audit_effect (id, op, old_status) VALUES (OLD.id, 'delete', OLD.status);
      RETURN OLD;
    END $$`,
    `CREATE OR REPLACE FUNCTION ledger_model_audit_command() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_command (id, op, new_status) VALUES (NEW.id, 'insert', NEW.status);
      ELSE
        INSERT INTO audit_command (id, op, old_status, new_status, old_result, new_result, old_error, new_error, old_terminal, new_terminal)
        VALUES (NEW.id, 'update', OLD.status, NEW.status, OLD.result_json, NEW.result_json, OLD.error_json, NEW.error_json,
          OLD.terminal_at_ms, NEW.terminal_at_ms);
      END IF;
      RETURN NEW;
    END $$`,
    `DROP TRIGGER IF EXISTS ledger_model_audit_effect ON external_tool_effects`,
    `CREATE CONSTRAINT TRIGGER ledger_model_audit_effect AFTER INSERT OR UPDATE OR DELETE ON external_tool_effects
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_model_audit_effect()`,
    `DROP TRIGGER IF EXISTS ledger_model_audit_command ON driver_commands`,
    `CREATE CONSTRAINT TRIGGER ledger_model_audit_command AFTER INSERT OR UPDATE ON driver_commands
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_model_audit_command()`,
  ];
  await store.transaction(async (tx) => {
    for (const statement of statements) await execSql(tx, sql.raw(statement));
  });
}

/** Every table of the PostgreSQL schema plus the audit tables, quoted. */
const ALL_TABLES = [
  ...Object.values(pgSchema as Record<string, unknown>)
    .filter((t) => is(t, PgTable))
    .map((t) => getTableName(t as PgTable)),
  "audit_effect",
  "audit_command",
];

/**
 * Empties a PostgreSQL target before a world (every table and the audit). The fence trigger refuses to
 * delete or TRUNCATE an effect that is `executing` or `unknown` (drizzle-pg/0001, 0004, §3 rule 9),
 * which the previous world may have left on purpose, so the reset runs without user triggers:
 * - a superuser (the throwaway servers, PGlite): `session_replication_role = replica` for this one
 *   transaction and a DELETE per table (a few rows each; no trigger, no foreign-key check fires);
 * - any other role: the tables' user triggers disabled for this one transaction and one TRUNCATE
 *   (the tables belong to the role that created the database), slower (new files per table).
 * Identities are not restarted: the audit cursor of a new world starts at 0 and the tables are empty.
 */
async function resetPgTarget(store: PortStore): Promise<void> {
  const tables = ALL_TABLES.map((t) => `'${t}'`).join(", ");
  await store.transaction(async (tx) => {
    await execSql(
      tx,
      sql.raw(`DO $$ DECLARE t text; BEGIN
        IF current_setting('is_superuser') = 'on' THEN
          SET LOCAL session_replication_role = replica;
          FOREACH t IN ARRAY ARRAY[${tables}] LOOP EXECUTE format('DELETE FROM %I', t); END LOOP;
        ELSE
          FOREACH t IN ARRAY ARRAY[${tables}] LOOP EXECUTE format('ALTER TABLE %I DISABLE TRIGGER USER', t); END LOOP;
          TRUNCATE ${ALL_TABLES.map((t) => `"${t}"`).join(", ")} CASCADE;
          FOREACH t IN ARRAY ARRAY[${tables}] LOOP EXECUTE format('ALTER TABLE %I ENABLE TRIGGER USER', t); END LOOP;
        END IF;
      END $$`),
    );
  });
}

// ---------------------------------------------------------------------------------------------
// The "API process" on PostgreSQL

/**
 * The store the runtime of one "API process" gets on PostgreSQL: `store` itself for everything but
 * `transaction` and `read`. Each transaction ends by setting {@link CLOCK_SETTING} to `now()` (the
 * model clock) for the audit trigger. Once `dead()` (the process was killed or restarted), every
 * new unit of work is refused with `dead()`'s error, as nothing runs in a killed process (on SQLite
 * the crash injector refuses them at `prepare`).
 */
export function clockStampedStore(store: PortStore, now: () => number, dead: () => Error | null): PortStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "transaction") {
        return <T>(fn: (tx: StoreTx) => Promise<T>, opts?: Parameters<PortStore["transaction"]>[1]) => {
          const err = dead();
          if (err) return Promise.reject(err);
          return target.transaction(async (tx) => {
            const out = await fn(tx);
            await execSql(tx, sql`SELECT set_config(${CLOCK_SETTING}, ${String(now())}, true)`);
            return out;
          }, opts);
        };
      }
      if (prop === "read") {
        return <T>(fn: (tx: StoreTx) => Promise<T>) => {
          const err = dead();
          return err ? Promise.reject(err) : target.read(fn);
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

/**
 * Opens a world's store on a PostgreSQL target: PGlite's one store, or a new `PostgresStore` on the
 * target's database (migrated already: `migrate: false`). With `reset` the target is emptied first.
 */
export async function openPgWorldStore(target: Exclude<ModelStoreTarget, { kind: "sqlite" }>, reset: boolean): Promise<PortStore> {
  const store = target.kind === "pglite" ? target.store : await openPostgresStore(target.url, { migrate: false });
  if (reset) await resetPgTarget(store);
  return store;
}

/** Ends a world's store on a PostgreSQL target: a `PostgresStore`'s pool is closed; PGlite's one store stays for the next world. */
export async function closePgWorldStore(target: Exclude<ModelStoreTarget, { kind: "sqlite" }>, store: PortStore): Promise<void> {
  if (target.kind === "postgres") await store.close();
}
