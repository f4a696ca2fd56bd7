// No Driver is declared dead for the database's silence, on the real PostgreSQL with two API instances
// on one database: the server is frozen (SIGSTOP of the postmaster and its backends) for longer than
// the heartbeat TTL while a Driver heartbeats through instance A (bounded queries: it answers 503
// store.busy) and instance B's queries merely stall (long bounds: B itself never sees a failure). Both
// B's sweep runs on its timer (A's would also hold its own local grace). The Driver is finalized by neither, its run still takes tool calls; a
// second Driver that really stays silent after the store is back IS finalized once the wait is over.
import { startPostgres, type RunningPostgres } from "@mosoo/test-postgres";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "../src/composition-root.js";
import { driverInstanceRepository } from "../src/modules/drivers/infrastructure/driver-instance.repository.js";
import { openPostgresStore, type PostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { connectDriver, pollUntil, type ConnectedDriver } from "./kit/index.js";

/** Heartbeat TTL of both instances, ms (short, so the test is short; the freeze is longer). */
const TTL_MS = 3_000;
/** How long the server stays frozen, ms: well over one TTL. */
const FREEZE_MS = 2 * TTL_MS + 1_000;
/** Sweep interval of both instances, ms. */
const SWEEP_MS = 250;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a PostgreSQL freeze longer than the heartbeat TTL, two API instances", () => {
  let server: RunningPostgres;
  const stores: PostgresStore[] = [];
  let a: Runtime;
  let b: Runtime;

  beforeAll(async () => {
    server = await startPostgres();
    const storeA = await openPostgresStore(server.url, {
      queryTimeoutMs: 1_000,
      acquireTimeoutMs: 1_000,
      poolSize: 4,
      applicationName: "api-a",
    });
    // B: bounds far above the freeze, so B's queries wait it out and B never sees the store fail
    const storeB = await openPostgresStore(server.url, {
      queryTimeoutMs: 120_000,
      acquireTimeoutMs: 120_000,
      lockTimeoutMs: 120_000,
      poolSize: 4,
      applicationName: "api-b",
    });
    stores.push(storeA, storeB);
    a = createRuntime({ store: storeA, logger: pino({ level: "silent" }), heartbeatTtlMs: TTL_MS });
    b = createRuntime({ store: storeB, logger: pino({ level: "silent" }), heartbeatTtlMs: TTL_MS });
  }, 120_000);

  afterAll(async () => {
    for (const r of [a, b]) {
      await r?.sweep.stop();
      r?.ctx.shutdown.abort();
    }
    for (const s of stores) await s.close();
    await server?.stop();
  }, 60_000);

  /**
   * Heartbeats `driver` through instance A every TTL/3 until `stop()`; after a failed heartbeat (the
   * frozen store) it backs off TTL/2 before the next, as a Driver's retry policy does (well within it).
   */
  function heartbeatLoop(driver: ConnectedDriver): { stop(): void } {
    let stopped = false;
    void (async () => {
      while (!stopped) {
        const stored = await a.drivers.heartbeat(driver.instance, driver.connectionId).then(
          () => true,
          () => false,
        );
        await pause(stored ? TTL_MS / 3 : TTL_MS / 2);
      }
    })();
    return { stop: () => (stopped = true) };
  }

  const status = async (runtime: Runtime, driverId: string) =>
    (await runtime.ctx.store.read((tx) => driverInstanceRepository.findById(tx, driverId)))?.status;

  it("finalizes neither instance's healthy Driver for the freeze, and finalizes a really silent one after the wait", async () => {
    const healthy = await connectDriver(a, "healthy");
    const silent = await connectDriver(a, "silent");
    const { runId } = await a.runs.createRun({ driverInstanceId: healthy.instance.id });
    const healthyBeats = heartbeatLoop(healthy);
    const silentBeats = heartbeatLoop(silent);
    // only B judges silence: the instance that never saw the store fail (A's own failures would give A a local grace)
    b.sweep.start(SWEEP_MS);
    try {
      // the store's liveness row is being written before the outage starts
      const seen = async () => (await b.ctx.store.read((tx) => tx.db.select().from(tx.tables.storeLiveness)))[0]?.lastSeenAtMs;
      const first = await pollUntil(seen, 60_000, "a first liveness write");
      await pollUntil(async () => ((await seen()) ?? first) > first || undefined, 60_000, "a second liveness write");
      silentBeats.stop(); // from here on, this Driver is silent for good
      server.pause();
      try {
        await pause(FREEZE_MS); // the outage itself (not a race: nothing is asserted about timing)
      } finally {
        server.resume();
      }
      // A Driver that really is silent is finalized once the store has been back for one TTL ...
      await pollUntil(
        async () => ((await status(b, silent.instance.id)) === "finalized" ? true : undefined),
        120_000,
        "the silent Driver finalized",
      );
      // ... and the outage is recorded where every instance sees it, in the store's time
      const liveness = await b.ctx.store.read((tx) => tx.db.select().from(tx.tables.storeLiveness));
      expect(liveness).toEqual([
        expect.objectContaining({ id: 1, lastOutageSource: expect.stringMatching(/^(tick_gap|instance_observed)$/) }),
      ]);
      // ... while the healthy one, heartbeating throughout, was finalized by neither instance
      expect(await status(a, healthy.instance.id)).toBe("connected");
      expect(await status(b, healthy.instance.id)).toBe("connected");
      const viaA = await a.runs.enqueueToolCall(runId, {
        serverId: "tracker",
        toolName: "createIssue",
        arguments: { title: "after the freeze" },
      });
      const viaB = await b.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { title: "via B" } });
      expect(viaA.commandId).not.toBe(viaB.commandId);
      const view = await b.runs.getRunView(runId);
      expect(view.run.status).toBe("active");
      expect(view.events.some((e) => e.type === "run.failed")).toBe(false);
    } finally {
      healthyBeats.stop();
      silentBeats.stop();
    }
  }, 300_000);
});
