// Long-poll wake-ups (docs/DESIGN.md §11): the in-process implementation (embedded SQLite) and the
// PostgreSQL LISTEN/NOTIFY one, across two "instances" on a real server: delivered at COMMIT only,
// never after a ROLLBACK, and every waiter woken once after the listener connection was lost and came back.
// Waits use a 10-minute waitMs: a waiter that resolves was woken, never timed out (the test would time out first).
import { newUlid } from "@mosoo/contracts";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InProcessWakeups } from "../src/platform/wakeups/in-process-wakeups.js";
import { PgCommandWakeups } from "../src/platform/db/postgres/pg-command-wakeups.js";
import type { CommandWakeups } from "../src/platform/wakeups/command-wakeups.port.js";
import { useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";

const LONG = 600_000;

/** A wait whose settlement can be observed without racing a timer. */
function watch(w: CommandWakeups, id: string, signals: AbortSignal[] = []) {
  const state = { woken: false, promise: undefined as unknown as Promise<void> };
  state.promise = w.wait(id, LONG, signals).then(() => {
    state.woken = true;
  });
  return state;
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe("in-process wake-ups", () => {
  it("wakes only the notified instance's waiters, after the commit; notifyInTransaction wakes nobody", async () => {
    const w = new InProcessWakeups();
    const a = watch(w, "A");
    const b = watch(w, "B");
    await w.notifyInTransaction({ db: null }, "A");
    await tick();
    expect(a.woken).toBe(false);
    w.notifyCommitted("A");
    await a.promise;
    await tick();
    expect(b.woken).toBe(false);
    w.wakeAll();
    await b.promise;
    expect(w.pendingWaits()).toBe(0);
  });

  it("ends on waitMs, on an abort, at once for an aborted signal, and leaves no listener behind", async () => {
    const w = new InProcessWakeups();
    await w.wait("A", 0);
    const ctl = new AbortController();
    const a = watch(w, "A", [ctl.signal]);
    expect(w.pendingWaits()).toBe(1);
    ctl.abort();
    await a.promise;
    await w.wait("A", LONG, [ctl.signal]);
    expect(w.pendingWaits()).toBe(0);
  });
});

describe("PostgreSQL LISTEN/NOTIFY wake-ups (real server, two instances)", () => {
  let server: TestDatabase;
  let pool: pg.Pool;
  let admin: pg.Pool;
  let instanceA: PgCommandWakeups;
  let instanceB: PgCommandWakeups;

  beforeAll(async () => {
    server = await useTestDatabase("wakeups");
    pool = new pg.Pool({ connectionString: server.url, max: 4 });
    admin = new pg.Pool({ connectionString: server.url, max: 1 });
    for (const p of [pool, admin]) p.on("error", () => undefined);
    instanceA = new PgCommandWakeups({ connectionString: server.url, applicationName: "wakeups-a" });
    instanceB = new PgCommandWakeups({
      connectionString: server.url,
      applicationName: "wakeups-b",
      reconnectMinMs: 20,
      reconnectMaxMs: 200,
    });
    await Promise.all([instanceA.start(), instanceB.start()]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([instanceA?.close(), instanceB?.close()]);
    await Promise.all([pool?.end(), admin?.end()]);
    await server?.drop();
  }, 60_000);

  /** pg_notify outside any transaction (autocommit): delivered at once; resolves when `id`'s waiter on `on` woke. */
  async function notifyNow(id: string, on: CommandWakeups): Promise<void> {
    const probe = watch(on, id);
    await instanceA.notifyInTransaction({ db: drizzle(pool) }, id);
    await probe.promise;
  }

  it("a command queued through instance A wakes a long-poll held on instance B at COMMIT, not before", async () => {
    const driver = newUlid();
    const held = watch(instanceB, driver);
    let inside!: () => void;
    const notified = new Promise<void>((r) => (inside = r));
    let commit!: () => void;
    const gate = new Promise<void>((r) => (commit = r));
    const tx = drizzle(pool).transaction(async (t) => {
      await instanceA.notifyInTransaction({ db: t }, driver);
      inside();
      await gate;
    });
    await notified;
    // B's listener is live and has delivered everything committed so far: still not woken
    await notifyNow(newUlid(), instanceB);
    expect(held.woken).toBe(false);
    commit();
    await tx;
    await held.promise;
    expect(instanceB.pendingWaits()).toBe(0);
  });

  it("a rolled-back transaction wakes nobody", async () => {
    const driver = newUlid();
    const held = watch(instanceB, driver);
    await expect(
      drizzle(pool).transaction(async (t) => {
        await instanceA.notifyInTransaction({ db: t }, driver);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    await notifyNow(newUlid(), instanceB);
    expect(held.woken).toBe(false);
    instanceB.notifyCommitted(driver); // end the wait
    await held.promise;
  });

  it("after its LISTEN connection is killed, instance B reconnects, wakes every waiter once and hears notifications again", async () => {
    const waiting = [watch(instanceB, newUlid()), watch(instanceB, newUlid())];
    const before = instanceB.connects;
    const killed = await admin.query("SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'wakeups-b'");
    expect(killed.rows).toEqual([{ ok: true }]);
    await Promise.all(waiting.map((w) => w.promise));
    expect(instanceB.connects).toBe(before + 1);
    await notifyNow(newUlid(), instanceB);
    // instance A's listener was never touched and still hears them too
    await notifyNow(newUlid(), instanceA);
  });
});
