// A 20 s freeze of the real PostgreSQL server (SIGSTOP of the postmaster and its backends) under two API
// instances on one database, both with the bounded pool an operator runs and both sweeping: every request
// sent to either instance during the freeze is answered 503 store.busy (Retry-After) while the server is
// still frozen, /ready answers 503 on both; a Driver heartbeating through instance A all along is finalized
// by neither for the database's silence, while one that really went silent is, once the store is back;
// after the thaw both are ready again, the run takes tool calls, and every tool call a client sent (the
// refused ones resent) is in the ledger exactly once.
import { setTimeout as sleep } from "node:timers/promises";
import { startPostgres, type RunningPostgres } from "@mosoo/test-postgres";
import type { Hono } from "hono";
import { eq } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpApp } from "../src/entry/http/app.js";
import { createRuntime, type Runtime } from "../src/composition-root.js";
import { driverInstanceRepository } from "../src/modules/drivers/infrastructure/driver-instance.repository.js";
import { openPostgresStore, type PostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { requestJson, TEST_AUTH, TEST_SECRETS } from "./helpers/http-call.js";
import { connectDriver, pollUntil, type ConnectedDriver } from "./kit/index.js";

/** Heartbeat TTL of both instances, ms (short, so the wait after the thaw is short; the freeze is far longer). */
const TTL_MS = 3_000;
/** How long the server stays frozen at least, ms (the outage an operator's managed failover may cause). */
const FREEZE_MS = 20_000;
/** Sweep interval of both instances, ms. */
const SWEEP_MS = 250;
/** The query and pool-acquire bound of both instances' stores, ms (docs/OPERATIONS.md: a few seconds; shorter here). */
const BOUND_MS = 1_000;
/** A bound for a hang, not a timing assertion: how long the freeze may be held past FREEZE_MS for its requests' answers, ms. */
const HANG_MS = 60_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One API instance: its runtime and its HTTP app. */
interface Instance {
  name: string;
  runtime: Runtime;
  app: Hono;
}

describe("a 20 s PostgreSQL freeze under two API instances", () => {
  let server: RunningPostgres;
  const stores: PostgresStore[] = [];
  const instances: Instance[] = [];

  beforeAll(async () => {
    server = await startPostgres();
    for (const name of ["api-a", "api-b"]) {
      const store = await openPostgresStore(server.url, {
        queryTimeoutMs: BOUND_MS,
        acquireTimeoutMs: BOUND_MS,
        poolSize: 4,
        applicationName: name,
      });
      stores.push(store);
      const logger = pino({ level: "silent" });
      const runtime = createRuntime({ store, logger, heartbeatTtlMs: TTL_MS });
      instances.push({ name, runtime, app: createHttpApp(runtime, logger, TEST_AUTH) });
    }
  }, 120_000);

  afterAll(async () => {
    for (const { runtime } of instances) {
      await runtime.sweep.stop();
      runtime.ctx.shutdown.abort();
    }
    for (const s of stores) await s.close();
    await server?.stop();
  }, 60_000);

  const [a, b] = [() => instances[0]!, () => instances[1]!];

  /** Heartbeats `driver` through instance A every TTL/3 until `stop()`; after a refused heartbeat (the frozen store) it waits TTL/2, as a Driver's retry policy does. */
  function heartbeatLoop(driver: ConnectedDriver): { stop(): void } {
    let stopped = false;
    void (async () => {
      while (!stopped) {
        const stored = await a()
          .runtime.drivers.heartbeat(driver.instance, driver.connectionId)
          .then(
            () => true,
            () => false,
          );
        await pause(stored ? TTL_MS / 3 : TTL_MS / 2);
      }
    })();
    return { stop: () => (stopped = true) };
  }

  const status = async (i: Instance, driverId: string) =>
    (await i.runtime.ctx.store.read((tx) => driverInstanceRepository.findById(tx, driverId)))?.status;
  const enqueue = (i: Instance, runId: string, toolCallId: string) =>
    i.app.request(`/v1/runs/${runId}/tool-calls`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_SECRETS.adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ serverId: "tracker", toolName: "createIssue", arguments: { title: toolCallId }, toolCallId }),
    });

  /** The requests a client and a load balancer send to instance `i` during the freeze, each with how long it took (ms, reported, never asserted). */
  async function requestsDuringFreeze(i: Instance, runId: string, toolCallId: string) {
    const timed = async <T>(send: () => Promise<T>) => {
      const startedAt = performance.now();
      const answer = await send();
      return { answer, ms: performance.now() - startedAt };
    };
    const [ready, view, queued] = await Promise.all([
      timed(async () => {
        const res = await i.app.request("/ready");
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      }),
      timed(async () => {
        const res = await i.app.request(`/v1/runs/${runId}`, { headers: { authorization: `Bearer ${TEST_SECRETS.adminKey}` } });
        return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as { error?: { code: string } } };
      }),
      timed(async () => {
        const res = await enqueue(i, runId, toolCallId);
        return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as { error?: { code: string } } };
      }),
    ]);
    return { instance: i.name, ready, view, queued };
  }

  it("answers every request 503 store.busy while frozen, /ready 503, finalizes no healthy Driver, and loses or doubles no tool call", async () => {
    const healthy = await connectDriver(a().runtime, "healthy");
    const silent = await connectDriver(a().runtime, "silent");
    const { runId } = await a().runtime.runs.createRun({ driverInstanceId: healthy.instance.id });
    const healthyBeats = heartbeatLoop(healthy);
    const silentBeats = heartbeatLoop(silent);
    for (const i of instances) i.runtime.sweep.start(SWEEP_MS);
    try {
      expect((await enqueue(a(), runId, "before")).status).toBe(201);
      // the store's liveness row is being written before the outage starts
      const seen = async () => (await b().runtime.ctx.store.read((tx) => tx.db.select().from(tx.tables.storeLiveness)))[0]?.lastSeenAtMs;
      const first = await pollUntil(seen, 60_000, "a first liveness write");
      await pollUntil(async () => ((await seen()) ?? first) > first || undefined, 60_000, "a second liveness write");

      silentBeats.stop(); // from here on, this Driver is silent for good
      server.pause();
      let answered: Array<Awaited<ReturnType<typeof requestsDuringFreeze>>>;
      try {
        const frozenAt = Date.now();
        // requests at the start of the freeze (on pooled connections) and in its middle (after the pools gave up on them)
        const early = Promise.all([requestsDuringFreeze(a(), runId, "frozen-a1"), requestsDuringFreeze(b(), runId, "frozen-b1")]);
        await pause(FREEZE_MS / 2);
        const middle = Promise.all([requestsDuringFreeze(a(), runId, "frozen-a2"), requestsDuringFreeze(b(), runId, "frozen-b2")]);
        // The freeze lasts FREEZE_MS and, whatever happens, until every request sent during it has its answer
        // (at most HANG_MS: a request that waited for the thaw fails the test below by its answer or by this bound).
        const all = Promise.all([early, middle]).then((r) => r.flat());
        await pause(Math.max(0, frozenAt + FREEZE_MS - Date.now()));
        const hang = new AbortController();
        try {
          answered = await Promise.race([
            all,
            sleep(HANG_MS, undefined, { signal: hang.signal }).then(() => {
              throw new Error(`requests sent during the freeze still unanswered ${HANG_MS} ms past it`);
            }),
          ]);
        } finally {
          hang.abort();
        }
      } finally {
        server.resume();
      }
      // For the report, not asserted (the machine is noisy): how long the requests waited during the freeze.
      process.stdout.write(
        `store-freeze-two-instances: requests during the freeze answered after ${answered
          .flatMap((r) => [r.ready.ms, r.view.ms, r.queued.ms])
          .map((ms) => Math.round(ms))
          .join(", ")} ms\n`,
      );
      for (const r of answered) {
        expect(r.ready.answer, r.instance).toMatchObject({
          status: 503,
          body: { status: "not_ready", checks: { store: expect.stringMatching(/^(timeout|unavailable)$/) } },
        });
        for (const busy of [r.view.answer, r.queued.answer])
          expect(busy, r.instance).toMatchObject({
            status: 503,
            retryAfter: expect.stringMatching(/^\d+$/),
            body: { error: { code: "store.busy" } },
          });
      }

      // Thawed: both instances are ready again.
      for (const i of instances)
        await pollUntil(async () => ((await i.app.request("/ready")).status === 200 ? true : undefined), 60_000, `${i.name} ready again`);
      // A Driver that really went silent is finalized once the store has been back for one TTL (a sweep judged silence) ...
      await pollUntil(
        async () => ((await status(b(), silent.instance.id)) === "finalized" ? true : undefined),
        120_000,
        "the silent Driver finalized",
      );
      // ... while the healthy one, heartbeating throughout, was finalized by neither instance for the database's silence.
      expect(await status(a(), healthy.instance.id)).toBe("connected");
      expect(await status(b(), healthy.instance.id)).toBe("connected");

      // The client resends what was refused (crossing instances) and, once more, what was taken: all land once.
      const resent = ["frozen-a1", "frozen-a2", "frozen-b1", "frozen-b2"];
      for (const [k, toolCallId] of resent.entries()) expect((await enqueue(instances[k % 2]!, runId, toolCallId)).status).toBe(201);
      expect((await enqueue(b(), runId, "before")).status).toBe(200); // the same tool call again: its first answer
      const effects = await b().runtime.ctx.store.read((tx) =>
        tx.db
          .select({ toolCallId: tx.tables.externalToolEffects.clientToolCallId })
          .from(tx.tables.externalToolEffects)
          .where(eq(tx.tables.externalToolEffects.runId, runId)),
      );
      expect(effects.map((e) => e.toolCallId).sort()).toEqual(["before", ...resent].sort());
      const view = await requestJson(b().app, "GET", `/v1/runs/${runId}`, undefined, TEST_SECRETS.adminKey);
      expect(view.status).toBe(200);
      expect(view.body.run.status).toBe("active");
      expect((view.body.events as Array<{ type: string }>).some((e) => e.type === "run.failed")).toBe(false);
    } finally {
      healthyBeats.stop();
      silentBeats.stop();
    }
  }, 300_000);
});
