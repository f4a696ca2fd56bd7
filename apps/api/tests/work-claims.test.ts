// Work claims in the store (docs/DESIGN.md §11): one atomic statement per operation, so at most one
// live holder per (kind, key) on SQLite (two connections to one file: two processes' worth of state)
// and on a real PostgreSQL server (concurrent claims from separate pool connections).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newUlid } from "@mosoo/contracts";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore as Store } from "../src/platform/db/sqlite/sqlite-store.js";
import type { StoreTx } from "../src/platform/db/store.port.js";
import { workClaims } from "../src/platform/db/sqlite/sqlite-schema.js";
import { workClaims as workClaimsPg } from "../src/platform/db/postgres/postgres-schema.js";
import { migratePostgres } from "../src/platform/db/postgres/migrate-postgres.js";
import { workClaimRepository as claims } from "../src/modules/drivers/infrastructure/work-claim.repository.js";
import { WorkClaimService } from "../src/modules/drivers/application/work-claim.service.js";
import { useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";

interface Backend {
  /** `n` handles on ONE store (separate connections). */
  handles: StoreTx[];
}

const T0 = 1_800_000_000_000;
const TTL = 10_000;
const instanceA = newUlid(T0);
const instanceB = newUlid(T0 + 1);

function claimOf(holder: string, instanceId: string, nowMs: number, key = "D1") {
  return { kind: "driver_finalization" as const, key, holder, instanceId, nowMs, ttlMs: TTL };
}

function suite(name: string, open: () => Promise<Backend>, close: () => Promise<void>) {
  describe(`work claims on ${name}`, () => {
    let b: Backend;
    beforeAll(async () => {
      b = await open();
    }, 120_000);
    afterAll(close, 60_000);

    it("one live holder per (kind, key): a second holder is refused until the claim expires, then takes it over", async () => {
      const [a, other] = b.handles as [StoreTx, StoreTx];
      const key = newUlid(T0);
      const h1 = newUlid(T0);
      const h2 = newUlid(T0);
      expect(await claims.claim(a, claimOf(h1, instanceA, T0, key))).toBe(true);
      expect(await claims.claim(other, claimOf(h2, instanceB, T0 + 1, key))).toBe(false);
      expect(await claims.claim(other, claimOf(h2, instanceB, T0 + TTL - 1, key))).toBe(false);
      expect((await claims.find(other, "driver_finalization", key))?.holder).toBe(h1);
      // at expires_at_ms the claim is expired: the other instance takes it over
      expect(await claims.claim(other, claimOf(h2, instanceB, T0 + TTL, key))).toBe(true);
      const row = await claims.find(a, "driver_finalization", key);
      expect(row).toMatchObject({ holder: h2, holderInstanceId: instanceB, claimedAtMs: T0 + TTL, expiresAtMs: T0 + 2 * TTL });
      // the old holder can neither renew nor release it any more
      expect(await claims.renew(a, "driver_finalization", key, h1, T0 + TTL + 1, TTL)).toBe(false);
      expect(await claims.release(a, "driver_finalization", key, h1)).toBe(false);
      expect((await claims.find(a, "driver_finalization", key))?.holder).toBe(h2);
    });

    it("renew extends the holder's claim (also after expiry when nobody took it); release frees it for the next claimer", async () => {
      const [a, other] = b.handles as [StoreTx, StoreTx];
      const key = newUlid(T0);
      const h1 = newUlid(T0);
      const h2 = newUlid(T0);
      expect(await claims.claim(a, claimOf(h1, instanceA, T0, key))).toBe(true);
      expect(await claims.renew(a, "driver_finalization", key, h1, T0 + TTL + 5, TTL)).toBe(true);
      expect(await claims.claim(other, claimOf(h2, instanceB, T0 + TTL + 6, key))).toBe(false);
      // a re-claim by the same holder token is a renewal
      expect(await claims.claim(a, claimOf(h1, instanceA, T0 + TTL + 7, key))).toBe(true);
      expect(await claims.release(a, "driver_finalization", key, h1)).toBe(true);
      expect(await claims.find(a, "driver_finalization", key)).toBeUndefined();
      expect(await claims.claim(other, claimOf(h2, instanceB, T0 + TTL + 8, key))).toBe(true);
    });

    it("keys and kinds are independent", async () => {
      const [a, other] = b.handles as [StoreTx, StoreTx];
      const k1 = newUlid(T0);
      const k2 = newUlid(T0);
      expect(await claims.claim(a, claimOf(newUlid(T0), instanceA, T0, k1))).toBe(true);
      expect(await claims.claim(other, claimOf(newUlid(T0), instanceB, T0, k2))).toBe(true);
      expect(await claims.claim(other, { ...claimOf(newUlid(T0), instanceB, T0, k1), kind: "maintenance_sweep" })).toBe(true);
    });

    it("of 12 concurrent claims from different holders and connections, exactly one wins", async () => {
      const key = newUlid(T0);
      const holders = Array.from({ length: 12 }, () => newUlid(T0));
      const results = await Promise.all(
        holders.map((h, i) => claims.claim(b.handles[i % b.handles.length]!, claimOf(h, i % 2 ? instanceA : instanceB, T0, key))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = holders[results.indexOf(true)];
      expect((await claims.find(b.handles[0]!, "driver_finalization", key))?.holder).toBe(winner);
    });

    it("the table refuses a kind outside the union and a claim that expires before it starts (CHECK)", async () => {
      const a = b.handles[0]!;
      await expect(
        claims.claim(a, { ...claimOf(newUlid(T0), instanceA, T0, newUlid(T0)), kind: "other" as "maintenance_sweep" }),
      ).rejects.toThrow();
      await expect(claims.claim(a, { ...claimOf(newUlid(T0), instanceA, T0, newUlid(T0)), ttlMs: 0 })).rejects.toThrow();
    });
  });
}

// SQLite: two connections to one file (two API processes' worth of state), the migrations applied.
let dir: string | undefined;
let sqliteStores: Store[] = [];
suite(
  "SQLite (two connections, one file)",
  async () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-work-claims-"));
    sqliteStores = [openSqliteStore(join(dir, "store.db")), openSqliteStore(join(dir, "store.db"))];
    return { handles: sqliteStores.map((s) => ({ db: s.db, tables: { workClaims } }) as unknown as StoreTx) };
  },
  async () => {
    for (const s of sqliteStores) s.closeNow();
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
);

// PostgreSQL: a real server (the PostgreSQL migrations applied); 4 pools of 3 connections (four API instances).
let server: TestDatabase | undefined;
let pools: pg.Pool[] = [];
suite(
  "PostgreSQL (real server, four pools)",
  async () => {
    server = await useTestDatabase("work_claims");
    await migratePostgres(server.url);
    pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: server!.url, max: 3 }));
    // an idle client that the server's shutdown reaches after end() reports 57P01: not a test failure
    for (const p of pools) p.on("error", () => undefined);
    return {
      handles: pools.map((pool) => ({ db: drizzle(pool), tables: { workClaims: workClaimsPg } }) as unknown as StoreTx),
    };
  },
  async () => {
    await Promise.all(pools.map((p) => p.end()));
    await server?.drop();
  },
);

describe("WorkClaimService (two API instances on one SQLite file)", () => {
  let svcDir: string;
  let stores: Store[];
  let clock: { now: number; nowMs(): number };
  const logger = { warn: () => undefined };
  const timing = { ttlMs: 10_000, renewEveryMs: 20 };

  function service(i: number, instanceId: string) {
    const handle = { db: stores[i]!.db, tables: { workClaims } } as unknown as StoreTx;
    return new WorkClaimService({ instanceId, clock, logger, unitOfWork: (fn) => fn(handle) }, timing);
  }

  beforeAll(() => {
    svcDir = mkdtempSync(join(tmpdir(), "mosoo-work-claim-svc-"));
    stores = [openSqliteStore(join(svcDir, "store.db")), openSqliteStore(join(svcDir, "store.db"))];
    clock = { now: T0, nowMs: () => clock.now };
  });
  afterAll(() => {
    for (const s of stores) s.closeNow();
    rmSync(svcDir, { recursive: true, force: true });
  });

  it("runs the work on one instance only; the other is refused while it runs and may run it afterwards; the claim is released", async () => {
    const a = service(0, instanceA);
    const b = service(1, instanceB);
    let inside!: () => void;
    const started = new Promise<void>((r) => (inside = r));
    let finish!: () => void;
    const gate = new Promise<void>((r) => (finish = r));
    const runA = a.runClaimed("driver_finalization", "D-svc", async () => {
      inside();
      await gate;
      return "A";
    });
    await started;
    expect(await b.runClaimed("driver_finalization", "D-svc", async () => "B")).toEqual({ claimed: false });
    // a second run on the SAME instance is a different holder: refused too
    expect(await a.runClaimed("driver_finalization", "D-svc", async () => "A2")).toEqual({ claimed: false });
    expect(await b.liveHolder("driver_finalization", "D-svc")).toBe(instanceA);
    finish();
    expect(await runA).toEqual({ claimed: true, value: "A" });
    expect(await b.liveHolder("driver_finalization", "D-svc")).toBeUndefined();
    expect(await b.runClaimed("driver_finalization", "D-svc", async () => "B")).toEqual({ claimed: true, value: "B" });
  });

  it("a dead holder's claim blocks the work until it expires; then another instance takes it over", async () => {
    const b = service(1, instanceB);
    const dead = { db: stores[0]!.db, tables: { workClaims } } as unknown as StoreTx;
    expect(await claims.claim(dead, { ...claimOf(newUlid(T0), instanceA, clock.now, "D-dead"), ttlMs: timing.ttlMs })).toBe(true);
    expect(await b.runClaimed("driver_finalization", "D-dead", async () => "B")).toEqual({ claimed: false });
    clock.now += timing.ttlMs;
    expect(await b.runClaimed("driver_finalization", "D-dead", async () => "B")).toEqual({ claimed: true, value: "B" });
  });

  it("a holder that stalled past its TTL and was taken over sees its signal abort at the next renewal", async () => {
    const a = service(0, instanceA);
    const other = { db: stores[1]!.db, tables: { workClaims } } as unknown as StoreTx;
    let inside!: () => void;
    const started = new Promise<void>((r) => (inside = r));
    const runA = a.runClaimed("driver_finalization", "D-stall", (signal) => {
      inside();
      return new Promise<string>((resolve) => signal.addEventListener("abort", () => resolve("stopped"), { once: true }));
    });
    await started;
    // A's claim expired without a renewal in between (the clock jumped). No renewal tick (a timer, a
    // macrotask) can run between this line and the takeover below: the SQLite statement runs within microtasks.
    clock.now += timing.ttlMs;
    const takeover = newUlid(clock.now);
    expect(await claims.claim(other, { ...claimOf(takeover, instanceB, clock.now, "D-stall"), ttlMs: timing.ttlMs })).toBe(true);
    expect(await runA).toEqual({ claimed: true, value: "stopped" });
    // A's release did not touch B's claim
    expect((await claims.find(other, "driver_finalization", "D-stall"))?.holder).toBe(takeover);
  });
});
