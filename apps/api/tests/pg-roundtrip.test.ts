// Values written through drizzle's query builders with the PostgreSQL schema come back exactly as the
// repositories expect them on SQLite (64-bit times, JSON bytes, booleans), on PGlite and on
// the real server, and the migrations are idempotent.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { asc, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";
import { migratePglite, openPglite } from "../src/platform/db/postgres/migrate-pglite.js";
import { migratePostgres, openPostgres, PG_MIGRATIONS_FOLDER, type PgDb } from "../src/platform/db/postgres/migrate-postgres.js";
import * as pgSchema from "../src/platform/db/postgres/postgres-schema.js";

/** The drizzle handle both drivers give (node-postgres and PGlite share the pg-core query API). */
type AnyPgDb = Pick<PgDb, "select" | "insert" | "update" | "delete" | "execute" | "transaction">;

interface Target {
  db: AnyPgDb;
  remigrate(): Promise<void>;
  close(): Promise<void>;
}

const JOURNAL = JSON.parse(readFileSync(join(PG_MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as { entries: { tag: string }[] };

const TARGETS: [string, () => Promise<Target>][] = [
  [
    "pglite",
    async () => {
      const h = await openPglite();
      return { db: h.db as unknown as AnyPgDb, remigrate: () => migratePglite(h.db), close: () => h.close() };
    },
  ],
  [
    "postgres",
    async () => {
      const database: TestDatabase = await useTestDatabase("pg_roundtrip");
      const h = await openPostgres(database.url, { maxConnections: 2 });
      return {
        db: h.db,
        remigrate: () => migratePostgres(database.url),
        close: async () => {
          await h.close();
          await database.drop();
        },
      };
    },
  ],
];

/** Times past 2^31 ms (1970-01-25) and past 2^32: an `integer` column would overflow on PostgreSQL. */
const LATE_MS = 2 ** 41 + 7;
/** JSON text whose bytes must survive exactly (key order, spacing, escapes, non-ASCII). */
const JSON_TEXT = '{ "b":1,"a" : ["é", "\\u0000", 1e3, 0.1] }';

describe.each(TARGETS)("the PostgreSQL schema through drizzle on %s", (_name, open) => {
  let t: Target;
  // PGlite's WASM start and a real server's database take seconds on a busy 2-core machine: a bound for a hang.
  beforeAll(async () => {
    t = await open();
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it("applied every migration of the journal, and migrating again changes nothing", async () => {
    const applied = async () => (await t.db.execute(sql`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`)).rows[0]?.n;
    expect(await applied()).toBe(JOURNAL.entries.length);
    await t.remigrate();
    expect(await applied()).toBe(JOURNAL.entries.length);
    const trigger = await t.db.execute(sql`SELECT tgname FROM pg_trigger WHERE tgname = 'external_tool_effects_fence_retained'`);
    expect(trigger.rows).toHaveLength(1);
  });

  it("round-trips 64-bit millisecond times as numbers, JSON text byte for byte, and booleans", async () => {
    await t.db
      .insert(pgSchema.driverInstances)
      .values({ id: "d1", name: "n", status: "connected", tokenHash: "h", registeredAtMs: LATE_MS, lastHeartbeatAtMs: LATE_MS + 1 });
    await t.db.insert(pgSchema.sessions).values({ id: "s1", createdAtMs: LATE_MS });
    await t.db
      .insert(pgSchema.sessionRuns)
      .values({ id: "r1", sessionId: "s1", driverInstanceId: "d1", status: "active", createdAtMs: 1, updatedAtMs: LATE_MS });
    await t.db.insert(pgSchema.runEvents).values([
      { id: "v1", runId: "r1", seq: 1, type: "run.created", terminal: false, payloadJson: JSON_TEXT, createdAtMs: LATE_MS },
      { id: "v2", runId: "r1", seq: 2, type: "run.completed", terminal: true, payloadJson: "{}", createdAtMs: Number.MAX_SAFE_INTEGER },
    ]);
    const driver = (await t.db.select().from(pgSchema.driverInstances).where(eq(pgSchema.driverInstances.id, "d1")))[0];
    expect(driver).toMatchObject({ registeredAtMs: LATE_MS, lastHeartbeatAtMs: LATE_MS + 1, finalizedAtMs: null });
    expect(typeof driver?.registeredAtMs).toBe("number");
    const events = await t.db.select().from(pgSchema.runEvents).orderBy(asc(pgSchema.runEvents.seq));
    expect(events.map((e) => [e.terminal, e.payloadJson, e.createdAtMs])).toEqual([
      [false, JSON_TEXT, LATE_MS],
      [true, "{}", Number.MAX_SAFE_INTEGER],
    ]);
    const terminal = await t.db.select({ id: pgSchema.runEvents.id }).from(pgSchema.runEvents).where(eq(pgSchema.runEvents.terminal, true));
    expect(terminal).toEqual([{ id: "v2" }]);
  });

  it("returns int8 from raw SQL (count(*), bigint columns) as a JS number, as SQLite does", async () => {
    const res = await t.db.execute(sql`SELECT count(*) AS n, max(created_at_ms) AS latest FROM run_events`);
    expect(res.rows[0]).toEqual({ n: 2, latest: Number.MAX_SAFE_INTEGER });
  });

  it("rolls a failed drizzle transaction back whole", async () => {
    await expect(
      t.db.transaction(async (tx) => {
        await tx.update(pgSchema.sessionRuns).set({ updatedAtMs: 5 }).where(eq(pgSchema.sessionRuns.id, "r1"));
        await tx
          .insert(pgSchema.runEvents)
          .values({ id: "v3", runId: "r1", seq: 3, type: "run.failed", terminal: true, payloadJson: "{}", createdAtMs: 1 });
      }),
    ).rejects.toThrow();
    const run = (await t.db.select().from(pgSchema.sessionRuns))[0];
    expect(run?.updatedAtMs).toBe(LATE_MS);
  });
});
