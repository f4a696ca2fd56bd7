// The PostgreSQL store on the real server, where several pooled connections matter (PGlite has one):
// concurrent units of work are isolated, a CAS that waited for the winner changes nothing, a real
// deadlock is retried to a clean end, two units of work computing the same seq both commit with
// distinct numbers, a connection lost before COMMIT is retried and one lost during COMMIT is reported
// as store.commit_unknown, a lock wait past lock_timeout and an exhausted pool answer store.busy, and
// close() waits for the work in progress.
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreBusyError } from "../src/platform/db/store-busy.js";
import type { StoreTx } from "../src/platform/db/store.port.js";
import { StoreCommitUnknownError } from "../src/platform/db/store-errors.js";
import { execSql, gate, insertSession, openPostgresTarget, sessionIds, type PgStoreTarget } from "./helpers/pg-store-targets.js";

describe("the PostgreSQL store's pool on the real server", () => {
  let t: PgStoreTarget & { url: string };
  beforeAll(async () => {
    t = await openPostgresTarget("pg_pool", { poolSize: 4 });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it("two concurrent transactions never see each other's uncommitted rows; a read sees only committed ones", async () => {
    const aWrote = gate();
    const bLooked = gate();
    const a = t.store.transaction(async (tx) => {
      await insertSession(tx, "iso-a");
      aWrote.open();
      await bLooked.promise;
      return (await execSql(tx, sql`SELECT id FROM sessions WHERE id LIKE 'iso-%' ORDER BY id`)).map((r) => r.id);
    });
    await aWrote.promise;
    const seenByB = await t.store.transaction(async (tx) => {
      await insertSession(tx, "iso-b");
      return (await execSql(tx, sql`SELECT id FROM sessions WHERE id LIKE 'iso-%' ORDER BY id`)).map((r) => r.id);
    });
    const seenByRead = await sessionIds(t.store, "iso-");
    bLooked.open();
    const seenByA = await a;
    expect(seenByB).toEqual(["iso-b"]);
    expect(seenByRead).toEqual(["iso-b"]);
    expect(seenByA).toEqual(["iso-a", "iso-b"]); // READ COMMITTED: B had committed by then
    expect(await sessionIds(t.store, "iso-")).toEqual(["iso-a", "iso-b"]);
  });

  it("READ COMMITTED compare-and-set: a writer that waited for the winner's row lock re-checks the newest row and changes nothing", async () => {
    await t.store.transaction((tx) => insertSession(tx, "cas", 0));
    const cas = (tx: StoreTx) =>
      execSql(tx, sql`UPDATE sessions SET created_at_ms = created_at_ms + 1 WHERE id = 'cas' AND created_at_ms = 0 RETURNING id`);
    const aUpdated = gate();
    const release = gate();
    const a = t.store.transaction(async (tx) => {
      const won = await cas(tx);
      aUpdated.open();
      await release.promise;
      return won.length;
    });
    await aUpdated.promise;
    const b = t.store.transaction(async (tx) => (await cas(tx)).length);
    // Wait (polling, generous deadline) until B is really blocked on A's row lock, then let A commit.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const waiting = await t.store.read((tx) =>
        execSql(tx, sql`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`),
      );
      if (waiting[0]?.n === 1) break;
      if (Date.now() > deadline) throw new Error("B never waited for A's row lock");
      await new Promise((r) => setTimeout(r, 20));
    }
    release.open();
    expect(await a).toBe(1);
    expect(await b).toBe(0);
    const rows = await t.store.read((tx) => execSql(tx, sql`SELECT created_at_ms AS n FROM sessions WHERE id = 'cas'`));
    expect(rows).toEqual([{ n: 1 }]);
  });

  it("a real deadlock between two units of work: the server aborts one (40P01), it runs again, both commit", async () => {
    await t.store.transaction(async (tx) => {
      await insertSession(tx, "dl-1", 0);
      await insertSession(tx, "dl-2", 0);
    });
    const aLocked = gate();
    const bLocked = gate();
    let attempts = 0;
    const bump = (tx: Parameters<Parameters<typeof t.store.transaction>[0]>[0], id: string) =>
      execSql(tx, sql`UPDATE sessions SET created_at_ms = created_at_ms + 1 WHERE id = ${id}`);
    const a = t.store.transaction(async (tx) => {
      attempts += 1;
      await bump(tx, "dl-1");
      aLocked.open();
      await bLocked.promise;
      await bump(tx, "dl-2");
    });
    const b = t.store.transaction(async (tx) => {
      attempts += 1;
      await bump(tx, "dl-2");
      bLocked.open();
      await aLocked.promise;
      await bump(tx, "dl-1");
    });
    await Promise.all([a, b]);
    expect(attempts).toBe(3);
    const rows = await t.store.read((tx) => execSql(tx, sql`SELECT id, created_at_ms AS n FROM sessions WHERE id LIKE 'dl-%' ORDER BY id`));
    expect(rows).toEqual([
      { id: "dl-1", n: 2 },
      { id: "dl-2", n: 2 },
    ]);
  });

  it("two units of work that compute the same next seq: the second fails on the (run, seq) index, runs again and takes the next number", async () => {
    await t.store.transaction(async (tx) => {
      await insertSession(tx, "seq-s");
      await tx.db
        .insert(tx.tables.driverInstances)
        .values({ id: "seq-d", name: "n", status: "connected", tokenHash: "h", registeredAtMs: 1 });
      await tx.db
        .insert(tx.tables.sessionRuns)
        .values({ id: "seq-r", sessionId: "seq-s", driverInstanceId: "seq-d", status: "active", createdAtMs: 1, updatedAtMs: 1 });
    });
    const nextSeq = async (tx: StoreTx) =>
      Number((await execSql(tx, sql`SELECT coalesce(max(seq), 0) + 1 AS n FROM run_events WHERE run_id = 'seq-r'`))[0]?.n);
    const append = (tx: StoreTx, id: string, seq: number) =>
      tx.db
        .insert(tx.tables.runEvents)
        .values({ id, runId: "seq-r", seq, type: "run.created", terminal: false, payloadJson: "{}", createdAtMs: 1 });
    const bRead = gate();
    const aCommitted = gate();
    let bAttempts = 0;
    const b = t.store.transaction(async (tx) => {
      bAttempts += 1;
      const seq = await nextSeq(tx);
      bRead.open();
      await aCommitted.promise;
      await append(tx, "seq-b", seq);
    });
    await bRead.promise;
    await t.store.transaction(async (tx) => append(tx, "seq-a", await nextSeq(tx)));
    aCommitted.open();
    await b;
    expect(bAttempts).toBe(2);
    const rows = await t.store.read((tx) => execSql(tx, sql`SELECT id, seq FROM run_events WHERE run_id = 'seq-r' ORDER BY seq`));
    expect(rows).toEqual([
      { id: "seq-a", seq: 1 },
      { id: "seq-b", seq: 2 },
    ]);
    // A unique violation on any other index is a refusal, never retried.
    let dupAttempts = 0;
    const dup = await t.store
      .transaction(async (tx) => {
        dupAttempts += 1;
        await insertSession(tx, "seq-s");
      })
      .catch((e: unknown) => e);
    expect(t.store.isUniqueViolation(dup)).toBe(true);
    expect(dupAttempts).toBe(1);
  });

  it("a connection lost before COMMIT (the server ended the session): the unit of work runs again on a new connection, committed once", async () => {
    let attempts = 0;
    await t.store.transaction(async (tx) => {
      attempts += 1;
      await insertSession(tx, `lost-before-${attempts}`);
      if (attempts === 1) await execSql(tx, sql`SELECT pg_terminate_backend(pg_backend_pid())`);
    });
    expect(attempts).toBe(2);
    expect(await sessionIds(t.store, "lost-before-")).toEqual(["lost-before-2"]);
  });

  it("a connection lost during COMMIT is store.commit_unknown, never retried blindly", async () => {
    // A deferred constraint trigger runs inside COMMIT; this one ends its own session there.
    await t.store.transaction(async (tx) => {
      await execSql(tx, sql`CREATE TABLE commit_killer (id int)`);
      await execSql(
        tx,
        sql.raw(
          "CREATE FUNCTION kill_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); RETURN NULL; END $$",
        ),
      );
      await execSql(
        tx,
        sql`CREATE CONSTRAINT TRIGGER kill_at_commit AFTER INSERT ON commit_killer DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION kill_at_commit()`,
      );
    });
    let attempts = 0;
    const err = await t.store
      .transaction(async (tx) => {
        attempts += 1;
        await insertSession(tx, "lost-during");
        await execSql(tx, sql`INSERT INTO commit_killer VALUES (1)`);
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCommitUnknownError);
    expect((err as StoreCommitUnknownError).code).toBe("store.commit_unknown");
    expect(attempts).toBe(1);
    // Here the server had not committed (the session died inside COMMIT's trigger): reading again is how a caller finds out.
    expect(await sessionIds(t.store, "lost-during")).toEqual([]);
    // The pool discarded the dead connection: the store goes on serving.
    await t.store.transaction((tx) => insertSession(tx, "after-loss"));
    expect(await sessionIds(t.store, "after-loss")).toEqual(["after-loss"]);
  });

  it("a row lock held past lock_timeout answers store.busy at once (55P03, not retried, nothing written)", async () => {
    const short = await openPostgresTarget("pg_pool_lock", { poolSize: 2, lockTimeoutMs: 200 });
    try {
      await short.store.transaction((tx) => insertSession(tx, "locked", 0));
      const locked = gate();
      const release = gate();
      const holder = short.store.transaction(async (tx) => {
        await execSql(tx, sql`UPDATE sessions SET created_at_ms = 1 WHERE id = 'locked'`);
        locked.open();
        await release.promise;
      });
      await locked.promise;
      let attempts = 0;
      const err = await short.store
        .transaction(async (tx) => {
          attempts += 1;
          await insertSession(tx, "waiter");
          await execSql(tx, sql`UPDATE sessions SET created_at_ms = 2 WHERE id = 'locked'`);
        })
        .catch((e: unknown) => e);
      release.open();
      await holder;
      expect(err).toBeInstanceOf(StoreBusyError);
      expect(attempts).toBe(1);
      expect(await sessionIds(short.store, "waiter")).toEqual([]);
    } finally {
      await short.close();
    }
  });

  it("an exhausted pool answers store.busy within the acquire timeout; close() waits for the work in progress", async () => {
    const small = await openPostgresTarget("pg_pool_small", { poolSize: 1, acquireTimeoutMs: 200 });
    const release = gate();
    const started = gate();
    const holder = small.store.transaction(async (tx) => {
      await insertSession(tx, "held");
      started.open();
      await release.promise;
      return "held";
    });
    await started.promise;
    const err = await small.store.transaction((tx) => insertSession(tx, "starved")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreBusyError);
    expect((err as StoreBusyError).code).toBe("store.busy");

    const closing = small.store.close();
    const refused = await small.store.transaction((tx) => insertSession(tx, "too-late")).catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(/^store\.closed/);
    release.open();
    expect(await holder).toBe("held");
    await closing;
    // The held unit of work committed before the pool ended.
    const client = new pg.Client({ connectionString: small.url });
    await client.connect();
    const held = await client.query("SELECT id FROM sessions WHERE id IN ('held', 'starved', 'too-late')");
    await client.end();
    expect(held.rows).toEqual([{ id: "held" }]);
    await small.close();
  });
});
