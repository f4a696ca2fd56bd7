/**
 * The test kit itself (tests/kit/README.md): the README's example runs as written, one manual clock
 * drives the runtime and the provider double, and `restart()` is a new "API process" on the same
 * file that keeps the ledger and releases the dead process's leases.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { effectRow, reconciliationRecords } from "./helpers/reconciliation-db.js";
import {
  START_MS,
  commitAtProvider,
  createDoubleWorld,
  createTempDir,
  createTestWorld,
  dispatchWrite,
  finalizeDriver,
  type DoubleWorld,
  type TempDir,
  type TestWorld,
} from "./kit/index.js";

let fx: DoubleWorld | TestWorld | undefined;
let temp: TempDir | undefined;
afterEach(() => {
  fx?.close();
  fx = undefined;
  temp?.remove();
  temp = undefined;
});

describe("tests/kit", () => {
  it("runs the README's example: a committed write of a lost Driver is reconciled in finalization repair", async () => {
    const world = createDoubleWorld();
    fx = world;
    const call = await dispatchWrite(world);
    await commitAtProvider(world, call);
    const summary = await finalizeDriver(world, call);
    expect(summary).toMatchObject({ effectsFenced: 1, effectsReconciled: 1, commandsCompleted: 1 });
    expect(world.lookups).toHaveLength(1);
  });

  it("moves the runtime and the provider double with one clock, and only by hand", async () => {
    const world = createDoubleWorld();
    fx = world;
    expect(world.clock.now()).toBe(START_MS);
    expect(world.clock.nowMs()).toBe(START_MS);
    let fired = 0;
    world.clock.setTimer(() => (fired += 1), 1_000);
    world.clock.advance(999);
    expect(fired).toBe(0);
    world.clock.advance(1);
    expect(fired).toBe(1);
    expect(world.double.clock.now()).toBe(START_MS + 1_000);
    const call = await dispatchWrite(world);
    expect(call.dispatchedAtMs).toBe(START_MS + 1_000);
    expect(() => world.clock.advance(-1)).toThrow(RangeError);
  });

  it("restart() opens the same file in a new runtime: the ledger survives, the dead process's lease ends once it expired", async () => {
    temp = createTempDir("mosoo-kit-");
    const world = createDoubleWorld({ dbFile: join(temp.dir, "api.db") });
    fx = world;
    const call = await dispatchWrite(world);
    await world.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "transport closed",
    });
    // the API dies mid-lookup: its lease stays on the row
    world.store.sqlite
      .prepare("UPDATE external_tool_effects SET lease_owner = 'dead-api', lease_expires_at_ms = ? WHERE id = ?")
      .run(START_MS + 30_000, call.effectId);
    const before = { runtime: world.runtime, store: world.store };
    await world.restart();
    expect(world.runtime).not.toBe(before.runtime);
    expect(world.store).not.toBe(before.store);
    // a live lease is left alone at startup (docs/DESIGN.md §11: it could be another API instance's)
    expect(effectRow(world.store, call.effectId)).toMatchObject({ status: "unknown", lease_owner: "dead-api" });
    world.clock.advance(30_001);
    await world.runtime.reconciler.endExpiredLeases();
    expect(effectRow(world.store, call.effectId)).toMatchObject({ status: "unknown", lease_owner: null, lease_expires_at_ms: null });
    expect(reconciliationRecords(world.store, call.effectId).map((r) => [r.trigger, r.outcome, r.reason_code])).toEqual([
      ["sweep", "still_unknown", "lookup_interrupted"],
    ]);
    expect(world.lookups).toHaveLength(0);
  });

  it("refuses restart() of an in-memory world", async () => {
    const world = createTestWorld();
    fx = world;
    await expect(world.restart()).rejects.toThrow("restart() needs a file-backed world (dbFile)");
  });
});
