/**
 * The async store port on the SQLite store (docs/DESIGN.md §11; platform/db/store.port.ts,
 * platform/db/sqlite/sqlite-store.ts): one unit of work is all or nothing, a read never sees the rows
 * of a transaction that is open and awaiting, a nested call is refused with a typed error instead of
 * waiting on itself, and the durable-write observer sees each transaction at its boundary.
 * No timing is asserted: a read "still waiting" is checked after yielding to the event loop.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runRepository } from "../src/modules/runs/infrastructure/run.repository.js";
import { StoreNestedTransactionError } from "../src/platform/db/store.port.js";
import { openTestStore, type Store } from "./kit/store.js";
import { connectDriver, createTestWorld } from "./kit/index.js";

let store: Store | undefined;
afterEach(() => store?.closeNow());

/** Yields to the event loop `turns` times (every microtask and ready I/O callback runs in between). */
async function yieldTurns(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe("the SQLite store behind the async store port", () => {
  it("commits a unit of work whole, and a throw rolls all of it back and is rethrown", async () => {
    const s = (store = openTestStore());
    await s.transaction(async (tx) => {
      await runRepository.insertSession(tx, "01JSESSIONA0000000000000000", 1);
      await runRepository.insertSession(tx, "01JSESSIONB0000000000000000", 1);
    });
    const boom = new Error("boom");
    await expect(
      s.transaction(async (tx) => {
        await runRepository.insertSession(tx, "01JSESSIONC0000000000000000", 1);
        throw boom;
      }),
    ).rejects.toBe(boom);
    const ids = (s.sqlite.prepare("SELECT id FROM sessions ORDER BY id").all() as Array<{ id: string }>).map((r) => r.id);
    expect(ids).toEqual(["01JSESSIONA0000000000000000", "01JSESSIONB0000000000000000"]);
  });

  it("a read issued while a transaction is open and awaiting waits for it and never sees its uncommitted rows", async () => {
    const s = (store = openTestStore());
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const writing = s.transaction(async (tx) => {
      await runRepository.insertSession(tx, "01JSESSIOND0000000000000000", 1);
      await gate; // the transaction is open and awaiting something else
      throw new Error("rolled back after the read was issued");
    });
    let seen: unknown = "not yet";
    const reading = s.read((tx) => runRepository.findSession(tx, "01JSESSIOND0000000000000000")).then((row) => (seen = row));
    await yieldTurns();
    expect(seen).toBe("not yet"); // the read waits for the unit of work in progress
    release();
    await expect(writing).rejects.toThrow("rolled back");
    await reading;
    expect(seen).toBeUndefined(); // it ran after the rollback: the uncommitted row was never visible
  });

  it("refuses a transaction or a read started inside a transaction (StoreNestedTransactionError), instead of deadlocking", async () => {
    const s = (store = openTestStore());
    const inner: unknown[] = [];
    await s.transaction(async (tx) => {
      await runRepository.insertSession(tx, "01JSESSIONE0000000000000000", 1);
      for (const nested of [() => s.transaction(async () => undefined), () => s.read(async () => undefined)]) {
        try {
          await nested();
          inner.push("ran");
        } catch (err) {
          inner.push(err);
        }
      }
    });
    expect(inner).toHaveLength(2);
    for (const err of inner) {
      expect(err).toBeInstanceOf(StoreNestedTransactionError);
      expect(err).toMatchObject({ code: "store.nested_transaction" });
    }
    // the outer unit of work went on and committed
    expect(await s.read((tx) => runRepository.findSession(tx, "01JSESSIONE0000000000000000"))).toMatchObject({ createdAtMs: 1 });
  });

  it("runs concurrent transactions one after another (no interleaving), in the order they were started", async () => {
    const s = (store = openTestStore());
    const order: string[] = [];
    const unit = (name: string) =>
      s.transaction(async (tx) => {
        order.push(`${name}:begin`);
        await runRepository.insertSession(tx, `01JSESSION${name}00000000000000000`.slice(0, 26), 1);
        await yieldTurns(2);
        order.push(`${name}:end`);
      });
    await Promise.all([unit("F"), unit("G"), unit("H")]);
    expect(order).toEqual(["F:begin", "F:end", "G:begin", "G:end", "H:begin", "H:end"]);
  });

  it("shows each transaction to the durable-write observer: a throw before commit rolls back, after commit the write stands", async () => {
    const s = (store = openTestStore());
    const seen: string[] = [];
    let failBefore = true;
    s.observeDurableWrites({
      beforeCommit: () => {
        seen.push("before");
        if (failBefore) throw new Error("crash before commit");
      },
      afterCommit: () => {
        seen.push("after");
        throw new Error("crash after commit");
      },
    });
    await expect(s.transaction((tx) => runRepository.insertSession(tx, "01JSESSIONI0000000000000000", 1))).rejects.toThrow(
      "crash before commit",
    );
    failBefore = false;
    await expect(s.transaction((tx) => runRepository.insertSession(tx, "01JSESSIONJ0000000000000000", 1))).rejects.toThrow(
      "crash after commit",
    );
    s.observeDurableWrites(null);
    expect(seen).toEqual(["before", "before", "after"]);
    expect(await s.read((tx) => runRepository.findSession(tx, "01JSESSIONI0000000000000000"))).toBeUndefined();
    expect(await s.read((tx) => runRepository.findSession(tx, "01JSESSIONJ0000000000000000"))).toBeDefined();
  });

  it("names a unique-constraint violation (isUniqueViolation) and nothing else; a closed store refuses work", async () => {
    const s = (store = openTestStore());
    await s.transaction((tx) => runRepository.insertSession(tx, "01JSESSIONK0000000000000000", 1));
    const dup = await s.transaction((tx) => runRepository.insertSession(tx, "01JSESSIONK0000000000000000", 2)).catch((err: unknown) => err);
    expect(s.isUniqueViolation(dup)).toBe(true);
    expect(s.isUniqueViolation(new Error("other"))).toBe(false);
    await s.close();
    await expect(s.read(async () => undefined)).rejects.toThrow(/store\.closed/);
    store = undefined;
  });
});

describe("sequence numbers from counters (docs/DESIGN.md §11: no read-then-write)", () => {
  it("concurrent enqueues on one run get distinct, gap-free command and run-event numbers", async () => {
    const world = createTestWorld();
    try {
      const driver = await connectDriver(world.runtime);
      const { runId } = await world.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
      const calls = await Promise.all(
        [1, 2, 3, 4].map((n) =>
          world.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { n } }),
        ),
      );
      expect(calls.map((c) => c.seq).sort()).toEqual([1, 2, 3, 4]);
      const events = await world.runtime.runs.listEvents(runId, 0);
      expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]); // run.created + 4 tool_call.queued
    } finally {
      world.close();
    }
  });
});
