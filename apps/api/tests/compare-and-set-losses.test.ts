/**
 * Review finding F7: every compare-and-set whose loss matters is checked, and a lost one is never taken
 * for a win (docs/DESIGN.md §3 rule 7). Each test makes the CAS lose the way a concurrent writer (another
 * API instance on PostgreSQL) would: the spied repository call first commits the other writer's change
 * in the same unit of work, then runs the real compare-and-set, which finds the row changed.
 * Finding F9: `command.delivered` is logged only after its delivery committed.
 */
import { commandDriverTerminalError, fingerprintArguments } from "@mosoo/contracts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { failCommand } from "../src/modules/ledger/application/command-settlement.service.js";
import { UserFacingError } from "../src/kernel/user-facing-error.js";
import { commandRepository } from "../src/modules/drivers/infrastructure/command.repository.js";
import { driverInstanceRepository } from "../src/modules/drivers/infrastructure/driver-instance.repository.js";
import { effectRepository } from "../src/modules/ledger/infrastructure/effect.repository.js";
import {
  commitAtProvider,
  connectDriver,
  createDoubleWorld,
  createTestWorld,
  dispatchWrite,
  type DoubleWorld,
  enqueueCreateIssue,
  gateLookups,
  redeliverAndClaim,
  type TestWorld,
  until,
  operatorNamed,
} from "./kit/index.js";
import { commandRow, effectRow } from "./helpers/reconciliation-db.js";

let world: TestWorld | DoubleWorld | undefined;
afterEach(() => {
  vi.restoreAllMocks();
  world?.close();
  world = undefined;
});

/** The messages `level` logged on the runtime's logger (spied), in order. */
function logged(w: TestWorld, level: "info" | "warn") {
  const spy = vi.spyOn(w.runtime.ctx.logger, level);
  return () => spy.mock.calls.map((args) => args.find((a): a is string => typeof a === "string"));
}

describe("command delivery (markDelivered)", () => {
  it("a delivery whose compare-and-set lost hands nothing out and logs nothing; the command's new state decides", async () => {
    const w = createTestWorld();
    world = w;
    const driver = await connectDriver(w.runtime);
    const { commandId } = await enqueueCreateIssue(w.runtime, driver);
    const infos = logged(w, "info");
    const real = commandRepository.markDelivered.bind(commandRepository);
    vi.spyOn(commandRepository, "markDelivered").mockImplementationOnce(async (tx, id, from, connectionId, nowMs) => {
      // the other writer: a repair on another API instance ends the command between the read and the CAS
      const cmd = await commandRepository.findById(tx, id);
      expect(await failCommand(tx, cmd!, commandDriverTerminalError(), nowMs, null)).toBe(true);
      return real(tx, id, from, connectionId, nowMs);
    });
    expect(await w.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0)).toBeNull();
    expect(commandRow(w.store, commandId)).toMatchObject({ status: "failed" });
    expect(w.store.sqlite.prepare("SELECT delivery_count FROM driver_commands WHERE id = ?").get(commandId)).toEqual({ delivery_count: 0 });
    expect(infos()).not.toContain("command.delivered");
  });

  it("F9: a delivery rolled back at its commit logs nothing; the delivery that commits logs command.delivered once", async () => {
    const w = createTestWorld();
    world = w;
    const driver = await connectDriver(w.runtime);
    const { commandId } = await enqueueCreateIssue(w.runtime, driver);
    const infos = logged(w, "info");
    let failNextCommit = true;
    w.store.observeDurableWrites({
      beforeCommit: () => {
        if (!failNextCommit) return;
        failNextCommit = false;
        throw new Error("injected: the unit of work is rolled back at its commit");
      },
      afterCommit: () => undefined,
    });
    await expect(w.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0)).rejects.toThrow(/injected/);
    expect(infos()).not.toContain("command.delivered");
    expect(commandRow(w.store, commandId)).toMatchObject({ status: "queued" });
    expect((await w.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0))?.commandId).toBe(commandId);
    expect(infos().filter((m) => m === "command.delivered")).toHaveLength(1);
  });
});

describe("Driver re-register", () => {
  it("a re-register whose compare-and-set lost fails driver.not_finalized and hands out no token", async () => {
    const w = createTestWorld();
    world = w;
    const driver = await connectDriver(w.runtime);
    await w.runtime.repair.finalize(driver.instance.id, "driver_request");
    const real = driverInstanceRepository.updateIfStatus.bind(driverInstanceRepository);
    vi.spyOn(driverInstanceRepository, "updateIfStatus").mockImplementationOnce(async (tx, id, from, set) => {
      // the other writer: a concurrent re-register of the same instance wins first
      expect(await real(tx, id, ["finalized"], { ...set, name: "winner", tokenHash: "f".repeat(64) })).toBe(true);
      return real(tx, id, from, set);
    });
    const row = () => w.store.sqlite.prepare("SELECT * FROM driver_instances WHERE id = ?").get(driver.instance.id);
    const before = row();
    const lost = w.runtime.drivers.register({ name: "loser", driverInstanceId: driver.instance.id }, { kind: "operator" });
    await expect(lost).rejects.toBeInstanceOf(UserFacingError);
    await expect(lost).rejects.toMatchObject({ code: "driver.not_finalized" });
    // no token was handed out and nothing was written (the simulated winner shared this unit of work, so it rolled back too)
    expect(row()).toEqual(before);
  });
});

/** Makes the first compare-and-set that writes `attention` lose: another writer bumps the effect's version first. */
function loseFirstFlagWrite(attention: string) {
  const real = effectRepository.updateIfCurrent.bind(effectRepository);
  const spy = vi.spyOn(effectRepository, "updateIfCurrent");
  spy.mockImplementation(async (tx, current, set) => {
    if (set.operatorAttention === attention && spy.mock.calls.filter(([, , s]) => s.operatorAttention === attention).length === 1) {
      expect(await real(tx, current, { updatedAtMs: (set.updatedAtMs ?? 0) + 1 })).toBe(true);
    }
    return real(tx, current, set);
  });
}

describe("attention flags", () => {
  it("reconciliation outcome writer: a lost contradicted_by_provider CAS is read again and the flag is raised, logged once", async () => {
    const fx = createDoubleWorld();
    world = fx;
    const call = await dispatchWrite(fx);
    await commitAtProvider(fx, call);
    await fx.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "transport closed",
    });
    const open = gateLookups(fx); // the lookup waits at a gate while an operator settles the effect the other way
    const sweeping = fx.runtime.reconciler.reconcile(call.effectId, "sweep");
    await until(() => effectRow(fx.store, call.effectId).lease_owner !== null);
    fx.clock.advance(fx.settings.leaseMs + 1); // the lookup outlives its lease: only then may an operator resolve
    await fx.runtime.operator.resolve(call.effectId, { outcome: "not_executed", reason: "nothing in the tracker" }, operatorNamed("alice"));
    const warns = logged(fx, "warn");
    loseFirstFlagWrite("contradicted_by_provider");
    open();
    expect((await sweeping).kind).toBe("superseded");
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", operator_attention: "contradicted_by_provider" });
    expect(warns().filter((m) => m === "reconciliation.contradicts_settled_effect")).toHaveLength(1);
  });

  it("late evidence: a lost late_evidence_contradiction CAS is read again and the flag is raised, logged once", async () => {
    const fx = createDoubleWorld({ bind: false });
    world = fx;
    const call = await dispatchWrite(fx);
    await redeliverAndClaim(fx, call);
    await fx.runtime.ledger.deadlineMissed(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      elapsedMs: 20_000,
    });
    const { request_id: requestId } = fx.store.sqlite
      .prepare("SELECT request_id FROM external_tool_effects WHERE id = ?")
      .get(call.effectId) as {
      request_id: string;
    };
    const warns = logged(fx, "warn");
    loseFirstFlagWrite("late_evidence_contradiction");
    const answer = await fx.runtime.ledger.lateResult(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      idempotencyKey: call.idempotencyKey,
      toolName: "createIssue",
      requestFingerprint: fingerprintArguments(call.args),
      result: { outputText: "created op_1", requestId, serverId: "tracker", toolName: "createIssue" },
      receipt: null,
    });
    expect(answer).toMatchObject({ outcome: "rejected", status: "not_executed" });
    expect(answer.reason).toMatch(/^late_evidence_contradiction: /);
    expect(effectRow(fx.store, call.effectId).operator_attention).toBe("late_evidence_contradiction");
    expect(warns().filter((m) => m === "effect.late_evidence_contradiction")).toHaveLength(1);
  });
});
