// The PostgreSQL stores behind the async store port (docs/DESIGN.md §11), on PGlite and on the real
// server, held to the embedded SQLite store's behaviour where the port defines it (all-or-nothing
// units of work, the durable-write observer at the same two points, the nested-call refusal, unique
// violations), then the PostgreSQL specifics: SQLSTATE 23505, whole-unit retries after 40001 /
// 40P01, an aborted transaction never half-committed, read-only reads, 64-bit times as numbers.
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreBusyError } from "../src/platform/db/store-busy.js";
import { StoreNestedTransactionError } from "../src/platform/db/store.port.js";
import { StoreTransactionAbortedError } from "../src/platform/db/store-errors.js";
import {
  execSql,
  insertSession,
  openPgliteTarget,
  openPostgresTarget,
  openSqliteTarget,
  raiseSqlState,
  sessionCreatedAt,
  sessionIds,
  type PgStoreTarget,
} from "./helpers/pg-store-targets.js";

const ALL_TARGETS: [PgStoreTarget["name"], () => Promise<PgStoreTarget>][] = [
  ["sqlite", openSqliteTarget],
  ["pglite", openPgliteTarget],
  ["postgres", () => openPostgresTarget("pg_store")],
];
const PG_TARGETS = ALL_TARGETS.filter(([name]) => name !== "sqlite");

/** Each store is opened once for the file (PGlite takes seconds to start) and closed at the end. */
const opened = new Map<string, Promise<PgStoreTarget>>();
function target(name: string, open: () => Promise<PgStoreTarget>): Promise<PgStoreTarget> {
  let t = opened.get(name);
  if (!t) {
    t = open();
    opened.set(name, t);
  }
  return t;
}
afterAll(async () => {
  for (const t of opened.values()) await (await t).close();
});

describe.each(ALL_TARGETS)("the store port's unit of work on %s", (name, open) => {
  let t: PgStoreTarget;
  // PGlite compiles PostgreSQL's WASM and migrates at start: seconds on a shared machine (a bound for a hang, not a timing assertion).
  beforeAll(async () => {
    t = await target(name, open);
  }, 120_000);

  it("commits a unit of work as a whole and returns fn's value", async () => {
    const out = await t.store.transaction(async (tx) => {
      await insertSession(tx, "commit-1");
      await insertSession(tx, "commit-2");
      return "done";
    });
    expect(out).toBe("done");
    expect(await sessionIds(t.store, "commit-")).toEqual(["commit-1", "commit-2"]);
  });

  it("rolls back everything when fn throws, and rethrows the error", async () => {
    const boom = new Error("boom");
    await expect(
      t.store.transaction(async (tx) => {
        await insertSession(tx, "throw-1");
        await insertSession(tx, "throw-2");
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await sessionIds(t.store, "throw-")).toEqual([]);
  });

  it("observer: a crash before COMMIT leaves nothing, a crash after COMMIT leaves all", async () => {
    const calls: string[] = [];
    t.store.observeDurableWrites({
      beforeCommit: () => {
        calls.push("before");
        throw new Error("crash before commit");
      },
      afterCommit: () => calls.push("after"),
    });
    try {
      await expect(t.store.transaction((tx) => insertSession(tx, "crash-before"))).rejects.toThrow("crash before commit");
      expect(calls).toEqual(["before"]);
      expect(await sessionIds(t.store, "crash-before")).toEqual([]);

      calls.length = 0;
      t.store.observeDurableWrites({
        beforeCommit: () => calls.push("before"),
        afterCommit: () => {
          calls.push("after");
          throw new Error("crash after commit");
        },
      });
      await expect(
        t.store.transaction(async (tx) => {
          await insertSession(tx, "crash-after-1");
          await insertSession(tx, "crash-after-2");
        }),
      ).rejects.toThrow("crash after commit");
      expect(calls).toEqual(["before", "after"]);
      expect(await sessionIds(t.store, "crash-after-")).toEqual(["crash-after-1", "crash-after-2"]);

      // A read is not a durable write: the observer never sees it.
      calls.length = 0;
      await sessionIds(t.store, "none");
      expect(calls).toEqual([]);
    } finally {
      t.store.observeDurableWrites(null);
    }
  });

  it("refuses a transaction or a read started inside a transaction (store.nested_transaction), and the outer one still commits", async () => {
    const refusals: unknown[] = [];
    await t.store.transaction(async (tx) => {
      await insertSession(tx, "nested-outer");
      await t.store.transaction((inner) => insertSession(inner, "nested-inner")).catch((e: unknown) => refusals.push(e));
      await t.store.read(async () => 1).catch((e: unknown) => refusals.push(e));
    });
    expect(refusals).toHaveLength(2);
    for (const e of refusals) {
      expect(e).toBeInstanceOf(StoreNestedTransactionError);
      expect((e as StoreNestedTransactionError).code).toBe("store.nested_transaction");
    }
    expect(await sessionIds(t.store, "nested-")).toEqual(["nested-outer"]);
  });

  it("tells a unique-index violation from other constraint failures", async () => {
    const run = (id: string) => ({
      id,
      sessionId: "u-s",
      driverInstanceId: "u-d",
      status: "active" as const,
      createdAtMs: 1,
      updatedAtMs: 1,
    });
    await t.store.transaction(async (tx) => {
      await insertSession(tx, "u-s");
      await tx.db
        .insert(tx.tables.driverInstances)
        .values({ id: "u-d", name: "n", status: "connected", tokenHash: "h", registeredAtMs: 1 });
      await tx.db.insert(tx.tables.sessionRuns).values(run("u-r1"));
    });
    // session_runs_one_active_per_driver: a second active run of one Driver instance.
    const err = await t.store.transaction((tx) => tx.db.insert(tx.tables.sessionRuns).values(run("u-r2"))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(t.store.isUniqueViolation(err)).toBe(true);
    const fk = await t.store
      .transaction((tx) => tx.db.insert(tx.tables.sessionRuns).values({ ...run("u-r3"), sessionId: "missing", status: "completed" }))
      .catch((e: unknown) => e);
    expect(fk).toBeInstanceOf(Error);
    expect(t.store.isUniqueViolation(fk)).toBe(false);
  });
});

describe.each(PG_TARGETS)("the PostgreSQL specifics on %s", (name, open) => {
  let t: PgStoreTarget;
  beforeAll(async () => {
    t = await target(name, open);
  }, 120_000);

  it("decides a unique violation by SQLSTATE 23505 (primary keys included), never by message text", async () => {
    // SQLite's store answers false for a duplicate primary key (SQLITE_CONSTRAINT_PRIMARYKEY); PostgreSQL reports both as 23505.
    await t.store.transaction((tx) => insertSession(tx, "pk-dup"));
    const pk = await t.store.transaction((tx) => insertSession(tx, "pk-dup")).catch((e: unknown) => e);
    expect(t.store.isUniqueViolation(pk)).toBe(true);
    expect(t.store.isUniqueViolation({ code: "23505" })).toBe(true);
    expect(t.store.isUniqueViolation(new Error("wrapped", { cause: { code: "23505" } }))).toBe(true);
    expect(t.store.isUniqueViolation({ code: "23503" })).toBe(false);
    expect(t.store.isUniqueViolation(new Error("duplicate key value violates unique constraint"))).toBe(false);
  });

  it.each(["40001", "40P01"] as const)("runs the whole unit of work again after SQLSTATE %s, and commits it once", async (code) => {
    let attempts = 0;
    await t.store.transaction(async (tx) => {
      attempts += 1;
      await insertSession(tx, `retry-${code}-${attempts}`);
      if (attempts === 1) await raiseSqlState(tx, code);
    });
    expect(attempts).toBe(2);
    expect(await sessionIds(t.store, `retry-${code}-`)).toEqual([`retry-${code}-2`]);
  });

  it("gives up with store.busy (nothing written) when every attempt fails for concurrency", async () => {
    let attempts = 0;
    const err = await t.store
      .transaction(async (tx) => {
        attempts += 1;
        await insertSession(tx, `busy-${attempts}`);
        await raiseSqlState(tx, "40001");
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreBusyError);
    expect((err as StoreBusyError).code).toBe("store.busy");
    expect((err as StoreBusyError).afterCommit).toBe(false);
    expect(attempts).toBe(5);
    expect(await sessionIds(t.store, "busy-")).toEqual([]);
  });

  it("never commits half of a unit of work whose fn swallowed a failed statement (store.transaction_aborted)", async () => {
    let attempts = 0;
    const err = await t.store
      .transaction(async (tx) => {
        attempts += 1;
        await insertSession(tx, "swallow-1");
        await insertSession(tx, "swallow-1").catch(() => undefined);
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreTransactionAbortedError);
    expect(attempts).toBe(1);
    expect(await sessionIds(t.store, "swallow-")).toEqual([]);
  });

  it("runs reads in a read-only transaction: a write there fails and leaves nothing", async () => {
    const err = await t.store.read((tx) => insertSession(tx, "read-write")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(await sessionIds(t.store, "read-write")).toEqual([]);
  });

  it("returns 64-bit millisecond times and counts as JS numbers", async () => {
    const late = 2 ** 41 + 3;
    await t.store.transaction((tx) => insertSession(tx, "time-late", late));
    expect(await sessionCreatedAt(t.store, "time-late")).toBe(late);
    const n = await t.store.read(async (tx) => (await execSql(tx, sql`SELECT count(*) AS n FROM sessions WHERE id = 'time-late'`))[0]?.n);
    expect(n).toBe(1);
  });
});
