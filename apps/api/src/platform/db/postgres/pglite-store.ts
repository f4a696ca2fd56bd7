// The PostgreSQL store on PGlite (in-process WASM), with the real migrations and unit of work, for fast store-level tests.
import { compareSchema, type SchemaState } from "../schema-version.js";
import { NEWEST_PG_MIGRATION_SQL, PG_MIGRATIONS_FOLDER } from "./migrate-postgres.js";
import { PGlite } from "@electric-sql/pglite";
import { Mutex, type MutexInterface } from "async-mutex";
import { drizzle, type PgliteDatabase } from "drizzle-orm/pglite";
import type { QueryDb, Store, StoreTables, StoreTx } from "../store.port.js";
import { migratePglite } from "./migrate-pglite.js";
import { PgUnitOfWork, type PgConnection, type PgConnectionSource } from "./pg-unit-of-work.js";
import * as pgSchema from "./postgres-schema.js";

/**
 * The PostgreSQL store on PGlite (PostgreSQL compiled to WASM, in this process): the same SQL, the
 * same migrations and the same unit of work (`PgUnitOfWork`) as `PostgresStore` on a real
 * server, for fast store-level tests. PGlite has ONE connection, so, as on SQLite, one async mutex
 * (`async-mutex`) serialises every unit of work, reads included: a read never runs while a
 * transaction is open on the connection, so it cannot see that transaction's uncommitted rows.
 * It never stands in for the real server where several connections matter.
 *
 * `client` is the raw PGlite instance, for PGlite-only test code.
 */
export class PgliteStore extends PgUnitOfWork implements Store {
  readonly dialect = "postgres" as const;
  protected readonly source: PgConnectionSource;
  private readonly mutex = new Mutex();
  private releaseMutex: MutexInterface.Releaser | undefined;
  private closed: Promise<void> | undefined;

  constructor(
    /** The PGlite instance (PGlite-only code). */
    readonly client: PGlite,
  ) {
    super();
    // The one cast of this store (see postgres-store.ts): the PostgreSQL builder and schema under the port's SQLite-typed names.
    const db = drizzle({ client, schema: pgSchema }) as unknown as QueryDb;
    const prepared = new Map<string, unknown>();
    const handle: StoreTx = {
      db,
      tables: pgSchema as unknown as StoreTables,
      pgRows: async (query) => (await (db as unknown as PgliteDatabase).execute(query)).rows as Array<Record<string, unknown>>,
      // PGlite prepares nothing by name: the same statement, parsed each time.
      pgPrepared: async (_name, text, values) => (await client.query<Record<string, unknown>>(text, [...values])).rows,
      prepared: <Q>(name: string, build: (db: QueryDb) => Q): Q => {
        let q = prepared.get(name) as Q | undefined;
        if (q === undefined) {
          q = build(db);
          prepared.set(name, q);
        }
        return q;
      },
    };
    const conn: PgConnection = {
      handle,
      brokenBy: undefined,
      query: async (text: string) => {
        await client.query(text);
        return {};
      },
    };
    this.source = {
      // PGlite does not report COMMIT's command tag: a `SELECT 1` before COMMIT finds an aborted transaction (25P02).
      probeBeforeCommit: true,
      acquire: async () => {
        this.releaseMutex = await this.mutex.acquire();
        return conn;
      },
      release: () => {
        const release = this.releaseMutex;
        this.releaseMutex = undefined;
        release?.();
      },
    };
  }

  /** Waits for the units of work in progress (new ones are refused with `store.closed`), then closes PGlite. Idempotent. */
  /** See `Store.schemaState`. */
  async schemaState(): Promise<SchemaState> {
    const res = await this.client.query<{ ms: string | null }>(NEWEST_PG_MIGRATION_SQL);
    const ms = res.rows[0]?.ms;
    return compareSchema(ms == null ? null : Number(ms), PG_MIGRATIONS_FOLDER);
  }

  async close(): Promise<void> {
    this.closed ??= this.beginClose().then(() => this.client.close());
    return this.closed;
  }
}

/**
 * Starts PGlite (in memory when `dataDir` is omitted, else persisted in that folder), applies the
 * PostgreSQL migrations (`migratePglite`, the same files as on a real server) and returns the store.
 * PGlite parses int8 to a JS number when it fits exactly.
 * @throws Error when PGlite cannot start or a migration fails (the instance is closed then).
 */
export async function openPgliteStore(dataDir?: string): Promise<PgliteStore> {
  const client = new PGlite(dataDir);
  try {
    await client.waitReady;
    await migratePglite(drizzle({ client, schema: pgSchema }));
    return new PgliteStore(client);
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
}
