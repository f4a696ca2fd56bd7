/**
 * A store locked by another process for longer than the heartbeat TTL must not finalize healthy
 * Drivers (reviewer's repro: `MOSOO_HEARTBEAT_TTL_MS=4000`, `sqlite3 api.db "BEGIN IMMEDIATE;"`
 * held 5 s; the heartbeats got 503 `store.busy` and the next sweep finalized the Driver). The API
 * notes when it last answered `store.busy` (`StoreBusyWatch`) and the maintenance sweep lets no
 * heartbeat expire until a full TTL has passed since then (docs/DESIGN.md §3 rule 10). Service level,
 * with a manual clock: a second connection in this process holds the write lock, and the clock is
 * moved by hand, so no timer decides the outcome.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TEST_AUTH } from "./helpers/http-call.js";
import { buildHttpApp, connectDriver, createTestWorld, enqueueCreateIssue, type HttpApp, type TestWorld } from "./kit/index.js";

const TTL_MS = 4_000;
let dir: string;
let f: TestWorld;
let locker: Database.Database | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-busy-hb-"));
  f = createTestWorld({ heartbeatTtlMs: TTL_MS, dbFile: join(dir, "api.db") });
});
afterEach(() => {
  locker?.close();
  locker = undefined;
  f.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Another connection (a backup, `sqlite3 api.db "BEGIN IMMEDIATE; …"`) takes the write lock. */
function lockStore(): void {
  locker = new Database(join(dir, "api.db"));
  locker.exec("BEGIN IMMEDIATE");
}
function unlockStore(): void {
  locker!.exec("COMMIT");
  locker!.close();
  locker = undefined;
}

/** A heartbeat over the HTTP app (in process), with the Driver's own token. */
async function heartbeat(app: HttpApp, driver: Awaited<ReturnType<typeof connectDriver>>) {
  const res = await app.request("/v1/drivers/heartbeat", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${driver.token}` },
    body: JSON.stringify({ connectionId: driver.connectionId }),
  });
  return { status: res.status, body: (await res.json()) as { error?: { code: string } } };
}

const runStatus = async (runId: string) => (await f.runtime.runs.getRunView(runId)).run.status;
const driverStatus = (driver: Awaited<ReturnType<typeof connectDriver>>) =>
  (f.store.sqlite.prepare("SELECT status FROM driver_instances WHERE id = ?").get(driver.instance.id) as { status: string }).status;

describe("heartbeats refused because the API's own store is busy", () => {
  it("do not count against the Driver: no expiry until a full TTL after the store was last busy", async () => {
    const app = buildHttpApp(f.runtime, TEST_AUTH);
    f.clock.advance(TTL_MS); // past the startup grace
    const driver = await connectDriver(f.runtime);
    const call = await enqueueCreateIssue(f.runtime, driver);
    expect((await heartbeat(app, driver)).status).toBe(200);

    lockStore();
    f.clock.advance(2_000);
    expect(await heartbeat(app, driver)).toMatchObject({ status: 503, body: { error: { code: "store.busy" } } });
    f.clock.advance(2_000);
    expect(await heartbeat(app, driver)).toMatchObject({ status: 503, body: { error: { code: "store.busy" } } });
    f.clock.advance(1_000); // 5 s locked: the last accepted heartbeat is older than the TTL
    unlockStore();

    // the sweep right after the lock ends: the Driver's heartbeats were refused by the API itself
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(0);
    f.clock.advance(TTL_MS - 1_001); // still within one TTL of the last store.busy answer
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(0);
    // the Driver heartbeats again and goes on; its run is untouched
    expect((await heartbeat(app, driver)).status).toBe(200);
    f.clock.advance(TTL_MS - 1);
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(0);
    expect(await runStatus(call.runId)).not.toBe("failed");
    expect(driverStatus(driver)).toBe("connected");

    // a Driver that really stops heartbeating is still finalized, one TTL after its last heartbeat
    f.clock.advance(2);
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(1);
    expect(driverStatus(driver)).toBe("finalized");
  });

  it("without a busy store, the same silence of more than a TTL finalizes the Driver (the rule still bites)", async () => {
    f.clock.advance(TTL_MS);
    const driver = await connectDriver(f.runtime);
    f.clock.advance(TTL_MS + 1_000);
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(1);
  });

  it("a sweep pass that itself found the store busy extends the grace too", async () => {
    f.clock.advance(TTL_MS);
    const driver = await connectDriver(f.runtime);
    f.clock.advance(TTL_MS + 1_000); // already silent for more than a TTL when the lock is taken
    lockStore();
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(0); // store.busy: the pass ends early
    unlockStore();
    expect(f.runtime.ctx.storeBusy.lastBusyAtMs()).toBe(f.clock.nowMs());
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(0);
    f.clock.advance(TTL_MS);
    expect((await f.runtime.sweep.sweepOnce()).driversFinalized).toBe(1);
    expect(driverStatus(driver)).toBe("finalized");
  });
});
