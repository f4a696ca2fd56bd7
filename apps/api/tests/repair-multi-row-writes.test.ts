// The finalization repair's multi-row writes on every store (SQLite, PGlite, the real PostgreSQL server): a
// fence and a settlement spread over several multi-row statements (row counts split into powers of two)
// write each row once, in order, with gapless run event seqs; the commands' multi-row compare-and-set
// judges each command's own status.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { commandRepository } from "../src/modules/drivers/infrastructure/command.repository.js";
import {
  connectDriver,
  deliverAcceptClaim,
  openDoubleWorld,
  openStoreOfKind,
  STORE_KINDS,
  truncatePgStore,
  type AnyStoreDoubleWorld,
  type OpenedStore,
  type StoreKind,
} from "./kit/index.js";
import { attemptsOf, commandOf, commandsOfDriver, eventsOf } from "./helpers/store-rows.js";

describe.each(STORE_KINDS)("repair multi-row writes on %s", (kind: StoreKind) => {
  let shared: OpenedStore | undefined;
  let w: AnyStoreDoubleWorld | undefined;

  beforeAll(async () => {
    if (kind !== "sqlite") shared = await openStoreOfKind(kind, "repair_multi_row");
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    await shared?.close();
  });
  beforeEach(async () => {
    await w?.close();
    w = undefined;
    if (shared) await truncatePgStore(shared.store);
  });

  /** A double world with reconciliation off on this suite's store (a fresh SQLite one, or the shared, emptied PostgreSQL one). */
  async function world(): Promise<AnyStoreDoubleWorld> {
    w = await openDoubleWorld({ enabled: false, store: shared ?? "sqlite" });
    return w;
  }

  it("a repair whose writes span several multi-row statements fences each effect once (attempt and event), ends each command once, events gapless in order", async () => {
    const f = await world();
    const d = await connectDriver(f.runtime, "driver-many");
    const { runId } = await f.runtime.runs.createRun({ driverInstanceId: d.instance.id });
    // 11 executing effects (statements of 8, 2 and 1 rows), 12 commands (8 and 4): the last one stays queued
    const n = 12;
    const effectIds: string[] = [];
    const commandIds: string[] = [];
    for (let i = 0; i < n; i++) {
      const call = await f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { i } });
      commandIds.push(call.commandId);
      if (i === n - 1) break;
      const { claim } = await deliverAcceptClaim(f.runtime, d);
      expect(claim.kind).toBe("execute");
      effectIds.push(call.effectId);
    }
    const before = (await eventsOf(f.store, runId)).length;

    const summary = await f.runtime.repair.finalize(d.instance.id, "operator");

    expect(summary).toMatchObject({ effectsFenced: n - 1, commandsFailed: n, commandsCompleted: 0, runsFailed: 1 });
    const events = await eventsOf(f.store, runId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const repairEvents = events.slice(before).map((e) => ({ type: e.type, payload: JSON.parse(e.payloadJson) as Record<string, unknown> }));
    // every fence first (effect id order), then each command's end (command order), then the run's end
    expect(repairEvents.map((e) => e.type)).toEqual([
      ...Array<string>(n - 1).fill("effect.fenced"),
      ...Array<string>(n).fill("tool_call.failed"),
      "run.failed",
    ]);
    expect(repairEvents.slice(0, n - 1).map((e) => e.payload.effectId)).toEqual([...effectIds].sort());
    expect(repairEvents.slice(0, n - 1).every((e) => e.payload.reason === "driver_finalized" && e.payload.attempt === 1)).toBe(true);
    expect(repairEvents.slice(n - 1, 2 * n - 1).map((e) => e.payload.commandId)).toEqual(commandIds);
    const codes = repairEvents.slice(n - 1, 2 * n - 1).map((e) => (e.payload.error as { code: string }).code);
    expect(codes).toEqual([...Array<string>(n - 1).fill("external_effect.unknown"), "driver.command_driver_terminal"]);
    for (const effectId of effectIds) {
      expect(await attemptsOf(f.store, effectId)).toMatchObject([{ attempt: 1, status: "unknown", unknownReason: "driver_finalized" }]);
    }
    const commands = await commandsOfDriver(f.store, d.instance.id);
    expect(commands.map((c) => c.status)).toEqual(Array<string>(n).fill("failed"));
    expect(commands.every((c) => c.terminalAtMs !== null && c.errorJson !== null)).toBe(true);
  });

  it("the commands' multi-row compare-and-set writes only the rows still in the status read", async () => {
    const f = await world();
    const d = await connectDriver(f.runtime, "driver-cas");
    const { runId } = await f.runtime.runs.createRun({ driverInstanceId: d.instance.id });
    const first = await f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { i: 1 } });
    const second = await f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { i: 2 } });
    expect((await commandOf(f.store, second.commandId))?.status).toBe("queued");

    const changed = await f.store.transaction((tx) =>
      commandRepository.transitionManyToTerminal(
        tx,
        "failed",
        "errorJson",
        [
          { id: first.commandId, from: "queued", json: '{"code":"a"}' },
          { id: second.commandId, from: "delivered", json: '{"code":"b"}' }, // stale: it is queued
        ],
        1_000,
      ),
    );

    expect([...changed]).toEqual([first.commandId]);
    expect(await commandOf(f.store, first.commandId)).toMatchObject({ status: "failed", errorJson: '{"code":"a"}', terminalAtMs: 1_000 });
    expect(await commandOf(f.store, second.commandId)).toMatchObject({ status: "queued", errorJson: null, terminalAtMs: null });
  });
});
