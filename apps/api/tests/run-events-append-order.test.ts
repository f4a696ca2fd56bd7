// Batched run-event appends from two API instances on one PostgreSQL database: each reserves its runs'
// `seq`s in run-id order, so transactions that append to the same runs in different input orders never
// deadlock one another, and every run's events stay gapless with `last_event_seq` equal to their count.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";
import { openPostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { runRepository } from "../src/modules/runs/infrastructure/run.repository.js";
import type { Store } from "../src/platform/db/store.port.js";
import { connectDriver, openDoubleWorld, type AnyStoreDoubleWorld } from "./kit/index.js";
import { eventsOf } from "./helpers/store-rows.js";

describe("run-event batches on PostgreSQL, two instances", () => {
  let database: TestDatabase | undefined;
  let first: Store | undefined;
  let second: Store | undefined;
  let w: AnyStoreDoubleWorld | undefined;

  beforeAll(async () => {
    database = await useTestDatabase("run_events_append_order");
    first = await openPostgresStore(database.url);
    second = await openPostgresStore(database.url);
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    await first?.close();
    await second?.close();
    await database?.drop();
  });

  it("batches that name the same two runs in opposite orders all commit; each run's events are gapless", async () => {
    w = await openDoubleWorld({ enabled: false, store: { kind: "postgres", store: first!, close: async () => {} } });
    const runIds: string[] = [];
    for (const name of ["append-a", "append-b"]) {
      const d = await connectDriver(w.runtime, name);
      runIds.push((await w.runtime.runs.createRun({ driverInstanceId: d.instance.id })).runId);
    }
    const [a, b] = runIds as [string, string];
    // 16 transactions at once, alternating instances (8 each: below a store's default pool of 10, so none waits
    // for a connection); half list run a first, half run b first
    const sizes = Array.from({ length: 16 }, (_, i) => 2 + (i % 4));
    const results = await Promise.allSettled(
      sizes.map((n, i) =>
        (i % 2 === 0 ? first! : second!).transaction((tx) =>
          runRepository.appendEvents(
            tx,
            Array.from({ length: n }, (_, k) => ({ runId: (i + k) % 2 === 0 ? a : b, type: "effect.fenced" as const, payload: { i, k } })),
            1,
          ),
        ),
      ),
    );
    const refused = results.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason));
    expect(refused).toEqual([]);
    let appended = 0;
    for (const runId of runIds) {
      const events = await eventsOf(w.store, runId);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const run = await w.store.read((tx) => runRepository.findRun(tx, runId));
      expect(Number(run?.lastEventSeq)).toBe(events.length);
      appended += events.length - 1; // the run's own `run.created` event is not one of the batches'
    }
    expect(appended).toBe(sizes.reduce((x, y) => x + y, 0));
  }, 300_000);
});
