/**
 * A busy store (docs/DESIGN.md §10): a store locked by another PROCESS (a backup, `effects --db`)
 * answers a typed 503 `store.busy` with `Retry-After` within a short bounded wait that never blocks
 * the event loop for long. A child process holds SQLite's write lock (`BEGIN IMMEDIATE`) for 3 s
 * while the test measures `/health` over real HTTP and sends an enqueue; after the release
 * everything works and nothing was half-written. Figures are printed; only a generous bound is
 * asserted (p99 < 1 s; the target is < 200 ms), so a loaded machine cannot make it flake.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { once } from "node:events";
import { createInterface } from "node:readline";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadApiConfig } from "../src/config/api-config.js";
import { startApi, type RunningApi } from "../src/server.js";
import { retryWhenBusy, StoreBusyError } from "../src/platform/db/store-busy.js";
import { openSqliteStore, type SqliteStore } from "../src/platform/db/sqlite/sqlite-store.js";
import { sql } from "drizzle-orm";
import { dumpAllTables } from "./helpers/reconciliation-db.js";
import { defaultCredential, TEST_CREDENTIALS_ENV } from "./helpers/http-call.js";

const API_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");
const HOLD_MS = 3_000;

/** The child: opens the store, takes the write lock, says "locked", sleeps `HOLD_MS` holding it (synchronously), rolls back, says "released". */
const LOCK_HOLDER = `
const Database = require("better-sqlite3");
const db = new Database(process.argv[1]);
db.pragma("busy_timeout = 5000");
db.exec("BEGIN IMMEDIATE");
process.stdout.write("locked\\n");
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(process.argv[2]));
db.exec("ROLLBACK");
process.stdout.write("released\\n");
db.close();
`;

let dir: string | undefined;
let api: RunningApi | undefined;
let holder: ChildProcess | undefined;
afterEach(async () => {
  holder?.kill("SIGKILL");
  await api?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  api = undefined;
  holder = undefined;
});

/** POSTs JSON with `token`, by default the credential the path needs ({@link defaultCredential}). */
async function post(url: string, body: unknown, token = defaultCredential("POST", new URL(url).pathname)) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as any };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

describe("a store locked by another process", () => {
  it("keeps /health fast, answers an enqueue 503 store.busy with Retry-After, then works again with nothing half-written", async () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-busy-"));
    const dbFile = join(dir, "api.db");
    api = await startApi(
      loadApiConfig({
        MOSOO_DB_FILE: dbFile,
        MOSOO_PORT: "0",
        MOSOO_SWEEP_INTERVAL_MS: "100",
        ...TEST_CREDENTIALS_ENV,
      }),
      pino({ level: "silent" }),
    );
    const reg = await post(`${api.url}/v1/drivers/register`, { name: "busy" });
    const conn = await post(`${api.url}/v1/drivers/connect`, {}, reg.body.driverToken);
    const run = await post(`${api.url}/v1/runs`, { driverInstanceId: reg.body.driverInstanceId });
    expect(run.status).toBe(201);
    const toolCall = { serverId: "tracker", toolName: "createIssue", arguments: { title: "t" } };
    const sqlite = (api.store as SqliteStore).sqlite; // MOSOO_DB_FILE: the SQLite store
    // store_liveness: the sweep's own record of the store (it records this very lock as an outage), not a request's write
    const dump = () => dumpAllTables(sqlite, ["store_liveness"]);
    const before = dump();

    holder = spawn(process.execPath, ["-e", LOCK_HOLDER, dbFile, String(HOLD_MS)], { cwd: API_DIR, stdio: ["ignore", "pipe", "inherit"] });
    const lines = createInterface({ input: holder.stdout! });
    const seen = new Set<string>();
    const waitFor = (line: string) =>
      new Promise<void>((resolve) => {
        if (seen.has(line)) return resolve();
        lines.on("line", (l) => l === line && resolve());
      });
    lines.on("line", (l) => seen.add(l));
    await waitFor("locked");
    const lockedAt = performance.now();

    // /health every ~10 ms while the lock is held, measured end to end over HTTP.
    const health: number[] = [];
    let released = false;
    const released$ = waitFor("released").then(() => (released = true));
    const pinger = (async () => {
      while (!released) {
        const t0 = performance.now();
        const res = await fetch(`${api!.url}/health`);
        await res.arrayBuffer();
        health.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    const t0 = performance.now();
    const refused = await post(`${api.url}/v1/runs/${run.body.runId}/tool-calls`, toolCall);
    const enqueueMs = performance.now() - t0;
    const poll = await fetch(`${api.url}/v1/drivers/commands/next?connectionId=${conn.body.connectionId}&waitMs=0`, {
      headers: { authorization: `Bearer ${reg.body.driverToken}` },
    });
    const heartbeat = await post(`${api.url}/v1/drivers/heartbeat`, { connectionId: conn.body.connectionId }, reg.body.driverToken);
    const answeredWhileLocked = performance.now() - lockedAt < HOLD_MS;
    await released$;
    await pinger;

    const sorted = [...health].sort((a, b) => a - b);
    const fmt = (n: number) => n.toFixed(1);
    console.log(
      `lock held ${HOLD_MS} ms by another process: /health n=${sorted.length} p50 ${fmt(percentile(sorted, 50))} ms, p99 ${fmt(percentile(sorted, 99))} ms, ` +
        `max ${fmt(sorted.at(-1) ?? NaN)} ms; enqueue answered ${refused.status} ${refused.body?.error?.code} (Retry-After ${refused.retryAfter}) in ${fmt(enqueueMs)} ms; ` +
        `long-poll ${poll.status}, heartbeat ${heartbeat.status} ${heartbeat.body?.error?.code ?? ""}`,
    );
    expect(answeredWhileLocked).toBe(true);
    expect({ status: refused.status, code: refused.body.error.code, retryAfter: refused.retryAfter }).toEqual({
      status: 503,
      code: "store.busy",
      retryAfter: "1",
    });
    expect(poll.status).toBe(503);
    expect(heartbeat.status).toBe(503);
    expect(sorted.length).toBeGreaterThan(10);
    expect(percentile(sorted, 99)).toBeLessThan(1_000);
    expect(enqueueMs).toBeLessThan(2_000);

    // released: nothing of the refused requests (or of the holder) was written; everything works
    expect(dump()).toBe(before);
    const accepted = await post(`${api.url}/v1/runs/${run.body.runId}/tool-calls`, toolCall);
    expect(accepted.status).toBe(201);
    expect((await fetch(`${api.url}/health`)).status).toBe(200);
  }, 60_000);
});

describe("retryWhenBusy", () => {
  it("retries an operation that committed nothing, and never one that already committed", async () => {
    const busy = () => Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
    let attempts = 0;
    await expect(
      retryWhenBusy(() => {
        attempts += 1;
        if (attempts < 3) throw busy();
        return "done";
      }),
    ).resolves.toBe("done");
    expect(attempts).toBe(3);

    attempts = 0;
    const never = retryWhenBusy(() => {
      attempts += 1;
      throw busy();
    });
    await expect(never).rejects.toBeInstanceOf(StoreBusyError);
    expect(attempts).toBe(4); // 1 + 3 retries: at most 4 × the 20 ms busy timeout of synchronous waiting

    const store = openSqliteStore(":memory:");
    try {
      attempts = 0;
      const afterCommit = retryWhenBusy(async () => {
        attempts += 1;
        await store.transaction(async (tx) => void (await tx.db.run(sql`CREATE TABLE IF NOT EXISTS t (x)`)));
        throw busy(); // a later transaction of the same operation found the store busy
      });
      await expect(afterCommit).rejects.toMatchObject({ code: "store.busy", afterCommit: true });
      expect(attempts).toBe(1);
    } finally {
      store.closeNow();
    }
  });
});
