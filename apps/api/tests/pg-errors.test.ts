// The SQLSTATE error mapping of the PostgreSQL store (src/platform/db/postgres/pg-errors.ts), on real
// errors from the run's throwaway PostgreSQL server: unique and fence refusals through drizzle (which
// wraps them), serialization failures and deadlocks as retryable (→ StoreBusyError, as SQLITE_BUSY is),
// and N instances migrating one database at once.
import { eq, sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_DATABASE_URL_ENV, useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";
import { migratePostgres, openPostgres, type PostgresHandle } from "../src/platform/db/postgres/migrate-postgres.js";
import {
  classifyPgError,
  isPgFenceRetained,
  isPgUniqueViolation,
  PG_SQLSTATE,
  toStoreError,
} from "../src/platform/db/postgres/pg-errors.js";
import * as pgSchema from "../src/platform/db/postgres/postgres-schema.js";
import { retryWhenBusy, StoreBusyError } from "../src/platform/db/store-busy.js";

let database: TestDatabase;
let store: PostgresHandle;

beforeAll(async () => {
  database = await useTestDatabase("pg_errors");
  store = await openPostgres(database.url, { maxConnections: 4 });
  await store.db.insert(pgSchema.driverInstances).values({ id: "d1", name: "n", status: "connected", tokenHash: "h", registeredAtMs: 1 });
  await store.db.insert(pgSchema.sessions).values({ id: "s1", createdAtMs: 1 });
  await store.db
    .insert(pgSchema.sessionRuns)
    .values({ id: "r1", sessionId: "s1", driverInstanceId: "d1", status: "active", createdAtMs: 1, updatedAtMs: 1 });
}, 120_000);
afterAll(async () => {
  await store?.close();
  await database?.drop();
});

/** Two connections of their own, for the interleavings below. */
async function twoClients(): Promise<[pg.Client, pg.Client]> {
  const a = new pg.Client({ connectionString: database.url });
  const b = new pg.Client({ connectionString: database.url });
  await Promise.all([a.connect(), b.connect()]);
  return [a, b];
}

describe("PostgreSQL errors mapped by SQLSTATE", () => {
  it("a unique index refusal through drizzle is a unique_violation naming the index (the twin of SQLITE_CONSTRAINT_UNIQUE)", async () => {
    const err = await store.db
      .insert(pgSchema.sessionRuns)
      .values({ id: "r2", sessionId: "s1", driverInstanceId: "d1", status: "active", createdAtMs: 1, updatedAtMs: 1 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(classifyPgError(err)).toEqual({ kind: "unique_violation", constraint: "session_runs_one_active_per_driver" });
    expect(isPgUniqueViolation(err)).toBe(true);
    expect(isPgUniqueViolation(err, "session_runs_one_active_per_driver")).toBe(true);
    expect(isPgUniqueViolation(err, "external_tool_effects_one_compensation_in_flight")).toBe(false);
    expect(toStoreError(err)).toBe(err);
  });

  it("a CHECK refusal through drizzle is a check_violation naming the CHECK", async () => {
    const err = await store.db
      .update(pgSchema.sessionRuns)
      .set({ status: "failed" })
      .where(eq(pgSchema.sessionRuns.id, "r1"))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(classifyPgError(err)).toEqual({ kind: "check_violation", constraint: "session_runs_error_check" });
    expect(isPgUniqueViolation(err)).toBe(false);
  });

  it("the fence trigger's refusal through drizzle is fence_retained", async () => {
    await store.db.execute(sql`
      INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, created_at_ms, updated_at_ms)
        VALUES ('c1', 'd1', 'r1', 1, 'mcp.execute', 'accepted', '{}', 1, 1)`);
    await store.db.insert(pgSchema.externalToolEffects).values({
      id: "e1",
      commandId: "c1",
      runId: "r1",
      driverInstanceId: "d1",
      serverId: "srv",
      toolName: "tool",
      toolCallId: "tc",
      requestId: "rq",
      argumentsJson: "{}",
      idempotencyKey: "K".repeat(26),
      requestFingerprint: "f".repeat(64),
      status: "executing",
      attemptCount: 1,
      createdAtMs: 1,
      updatedAtMs: 1,
    });
    const err = await store.db
      .delete(pgSchema.sessionRuns)
      .where(eq(pgSchema.sessionRuns.id, "r1"))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isPgFenceRetained(err)).toBe(true);
    expect(classifyPgError(err)).toMatchObject({ kind: "fence_retained", detail: expect.stringContaining("e1") });
    expect(await store.db.select({ id: pgSchema.sessionRuns.id }).from(pgSchema.sessionRuns)).toEqual([{ id: "r1" }]);
  });

  it("a serialization failure (40001) is retryable and becomes StoreBusyError, which retryWhenBusy runs again", async () => {
    const [a, b] = await twoClients();
    try {
      await a.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
      await a.query("SELECT updated_at_ms FROM session_runs WHERE id = 'r1'");
      await b.query("UPDATE session_runs SET updated_at_ms = 2 WHERE id = 'r1'");
      const err = await a.query("UPDATE session_runs SET updated_at_ms = 3 WHERE id = 'r1'").then(
        () => undefined,
        (e: unknown) => e,
      );
      await a.query("ROLLBACK");
      expect(classifyPgError(err)).toEqual({ kind: "retryable", sqlstate: PG_SQLSTATE.serializationFailure });
      const mapped = toStoreError(err);
      expect(mapped).toBeInstanceOf(StoreBusyError);
      expect(mapped).toMatchObject({ code: "store.busy", afterCommit: false, cause: err });

      let calls = 0;
      const value = await retryWhenBusy(async () => {
        calls += 1;
        if (calls === 1) throw toStoreError(err);
        return "second run";
      });
      expect([value, calls]).toEqual(["second run", 2]);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it("a deadlock (40P01) is retryable: exactly one of the two transactions is chosen to fail", async () => {
    await store.db.insert(pgSchema.sessions).values({ id: "s2", createdAtMs: 1 });
    const [a, b] = await twoClients();
    try {
      await a.query("BEGIN");
      await b.query("BEGIN");
      await a.query("UPDATE sessions SET created_at_ms = 2 WHERE id = 's1'");
      await b.query("UPDATE sessions SET created_at_ms = 2 WHERE id = 's2'");
      const settle = (p: Promise<unknown>) =>
        p.then(
          () => undefined,
          (e: unknown) => e,
        );
      const [ea, eb] = await Promise.all([
        settle(a.query("UPDATE sessions SET created_at_ms = 3 WHERE id = 's2'")),
        settle(b.query("UPDATE sessions SET created_at_ms = 3 WHERE id = 's1'")),
      ]);
      await Promise.all([a.query("ROLLBACK"), b.query("ROLLBACK")]);
      const failures = [ea, eb].filter((e) => e !== undefined);
      expect(failures).toHaveLength(1);
      expect(classifyPgError(failures[0])).toEqual({ kind: "retryable", sqlstate: PG_SQLSTATE.deadlockDetected });
      expect(toStoreError(failures[0])).toBeInstanceOf(StoreBusyError);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it("leaves errors without a SQLSTATE, and unexpected ones, unclassified", () => {
    expect(classifyPgError(new Error("ECONNRESET"))).toBeUndefined();
    expect(classifyPgError(Object.assign(new Error("syntax"), { code: "42601" }))).toBeUndefined();
    expect(classifyPgError(Object.assign(new Error("x"), { code: "SQLITE_CONSTRAINT_UNIQUE" }))).toBeUndefined();
    expect(classifyPgError(undefined)).toBeUndefined();
  });
});

describe("migrations on a shared database", () => {
  it("runs on the test run's one server, started by the api project's globalSetup (MOSOO_TEST_DATABASE_URL)", () => {
    const shared = process.env[TEST_DATABASE_URL_ENV];
    expect(shared).toMatch(/^postgres:\/\//);
    const here = new URL(database.url);
    const server = new URL(shared ?? "");
    expect(`${here.hostname}:${here.port}`).toBe(`${server.hostname}:${server.port}`);
  });

  it("three instances migrating one fresh database at once all succeed, and each migration is applied once", async () => {
    const fresh = await useTestDatabase("pg_migrate_race");
    try {
      await Promise.all([migratePostgres(fresh.url), migratePostgres(fresh.url), migratePostgres(fresh.url)]);
      const client = new pg.Client({ connectionString: fresh.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ n: string; distinct_hashes: string }>(
          "SELECT count(*) AS n, count(DISTINCT hash) AS distinct_hashes FROM drizzle.__drizzle_migrations",
        );
        expect(Number(rows[0]?.n)).toBeGreaterThan(0);
        expect(rows[0]?.n).toBe(rows[0]?.distinct_hashes);
      } finally {
        await client.end();
      }
    } finally {
      await fresh.drop();
    }
  });

  it("refuses to open a database it cannot reach, with the pg error", async () => {
    const url = new URL(database.url);
    url.password = "wrong";
    await expect(migratePostgres(url.toString())).rejects.toMatchObject({ code: "28P01" });
  });
});
