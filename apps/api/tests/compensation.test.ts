import { afterEach, describe, expect, it } from "vitest";
import { UserFacingError } from "../src/kernel/user-facing-error.js";
import {
  connectDriver,
  type ConnectedDriver,
  createFixtureProviderWorld,
  executeNextCommand,
  type FixtureProviderWorld,
  reconnectDriver,
  operatorNamed,
} from "./kit/index.js";
import { commandRow, effectRow, ledgerSnapshot, reconciliationRecords, runEvents } from "./helpers/reconciliation-db.js";

let s: FixtureProviderWorld | undefined;
afterEach(async () => {
  await s?.dispose();
  s = undefined;
});

const AUDIT = { reason: "the issue was a duplicate" };

/** A Driver with a run whose createIssue succeeded through the ledger against the real fixture provider. */
async function succeededIssue(setup: FixtureProviderWorld, given?: ConnectedDriver) {
  const driver = given ?? (await connectDriver(setup.runtime));
  const { runId } = await setup.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
  await setup.runtime.runs.enqueueToolCall(runId, {
    serverId: "tracker",
    toolName: "createIssue",
    arguments: { title: "Disk full", body: "db-1" },
  });
  const created = await executeNextCommand(setup, driver);
  expect(effectRow(setup.store, created.effectId).status).toBe("succeeded");
  return { ...created, runId, driver };
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "no error";
  } catch (err) {
    return err instanceof UserFacingError ? err.code : `other: ${String(err)}`;
  }
}

describe("compensation: an explicit, declared, operator-started write through the same ledger", () => {
  it("queues closeIssue as a new effect with its own key, linked to the original, audited; the Driver runs it once", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const original = await succeededIssue(s);
    const queued = await s.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice"));
    expect(queued).toMatchObject({ toolName: "closeIssue", driverInstanceId: original.driver.instance.id });
    expect(queued.idempotencyKey).not.toBe(original.idempotencyKey);
    const comp = effectRow(s.store, queued.compensationEffectId) as unknown as Record<string, unknown>;
    expect(comp).toMatchObject({
      status: "intent",
      compensates_effect_id: original.effectId,
      tool_name: "closeIssue",
      idempotency_key: queued.idempotencyKey,
    });
    expect(runEvents(s.store, original.runId, "tool_call.queued").at(-1)?.payload).toMatchObject({
      effectId: queued.compensationEffectId,
      compensatesEffectId: original.effectId,
    });
    const shown = await s.runtime.operator.show(original.effectId);
    expect(shown.operatorActions).toEqual([
      expect.objectContaining({
        action: "compensate",
        actor: "alice",
        outcome: "queued",
        statusBefore: "succeeded",
        statusAfter: "succeeded",
        compensationEffectId: queued.compensationEffectId,
      }),
    ]);
    expect(shown.compensations.map((c) => c.id)).toEqual([queued.compensationEffectId]);

    const ran = await executeNextCommand(s, original.driver);
    expect(ran).toMatchObject({ effectId: queued.compensationEffectId, toolName: "closeIssue" });
    expect(ran.args).toEqual({ issueId: expect.any(String), reason: `compensates effect ${original.effectId}` });
    expect(ran.result.outputText).toMatch(/^Closed issue #1$/);
    expect(effectRow(s.store, queued.compensationEffectId).status).toBe("succeeded");
    expect(s.provider.stats().writes).toEqual({ [original.idempotencyKey]: 1, [queued.idempotencyKey]: 1 });
    // the original is untouched: compensation never rewrites history
    expect(effectRow(s.store, original.effectId)).toMatchObject({ status: "succeeded", resolution: "provider_result" });
    // one live compensation per effect
    expect(await codeOf(s.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice")))).toBe("compensation.exists");
  });

  it("an interrupted compensation (the Driver dies after the provider closed the issue) ends unknown, then is reconciled by lookup", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const original = await succeededIssue(s);
    const queued = await s.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice"));
    const crashed = await executeNextCommand(s, original.driver, { crashAfterCall: true });
    expect(crashed.effectId).toBe(queued.compensationEffectId);
    expect(s.provider.stats().writes[queued.idempotencyKey]).toBe(1);
    expect(effectRow(s.store, queued.compensationEffectId).status).toBe("executing");

    // The Driver restarts (same instance): redelivery; the claim fences the effect unknown and the
    // bound adapter looks the closeIssue key up inline: confirmed, the stored closeIssue result comes back.
    const restarted = await reconnectDriver(s.runtime, original.driver);
    const env = await s.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
    expect(env).toMatchObject({ commandId: queued.commandId, redelivery: true });
    const claim = await s.runtime.ledger.claim(restarted.instance, restarted.connectionId, queued.commandId);
    expect(claim).toMatchObject({
      kind: "completed",
      effectId: queued.compensationEffectId,
      result: { toolName: "closeIssue", outputText: "Closed issue #1" },
    });
    expect(effectRow(s.store, queued.compensationEffectId)).toMatchObject({
      status: "succeeded",
      resolution: "reconciled",
      attempt_count: 1,
    });
    expect(reconciliationRecords(s.store, queued.compensationEffectId).map((r) => [r.trigger, r.outcome])).toEqual([
      ["redelivery", "confirmed_succeeded"],
    ]);
    expect(s.provider.stats().writes[queued.idempotencyKey]).toBe(1); // closed once, never re-sent
  });

  it("an interrupted compensation whose Driver is gone for good is reconciled by finalization repair", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const original = await succeededIssue(s);
    const queued = await s.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice"));
    await executeNextCommand(s, original.driver, { crashAfterCall: true });
    const summary = await s.runtime.repair.finalize(original.driver.instance.id, "operator");
    expect(summary).toMatchObject({ effectsFenced: 1, effectsReconciled: 1, commandsCompleted: 1 });
    expect(effectRow(s.store, queued.compensationEffectId)).toMatchObject({ status: "succeeded", resolution: "reconciled" });
    expect(commandRow(s.store, queued.commandId).status).toBe("completed");
  });

  it("a compensation the provider never received is confirmed not executed by lookup, and another may then be requested", async () => {
    s = await createFixtureProviderWorld({ mode: "bound", fenceOnLookupMiss: true });
    const original = await succeededIssue(s);
    const first = await s.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice"));
    // claimed (executing), then the Driver vanished before sending anything
    const env = await s.runtime.commands.nextCommand(original.driver.instance, original.driver.connectionId, 0);
    await s.runtime.commands.updateCommand(original.driver.instance, env!.commandId, {
      connectionId: original.driver.connectionId,
      status: "accepted",
    });
    expect((await s.runtime.ledger.claim(original.driver.instance, original.driver.connectionId, first.commandId)).kind).toBe("execute");
    await s.runtime.repair.finalize(original.driver.instance.id, "heartbeat_expired");
    expect(effectRow(s.store, first.compensationEffectId)).toMatchObject({ status: "not_executed", resolution: "reconciled" });

    const other = await connectDriver(s.runtime, "driver-b");
    const second = await s.runtime.operator.compensate(
      original.effectId,
      { ...AUDIT, driverInstanceId: other.instance.id },
      operatorNamed("alice"),
    );
    expect(second.compensationEffectId).not.toBe(first.compensationEffectId);
    expect(second.driverInstanceId).toBe(other.instance.id);
    await executeNextCommand(s, other);
    expect(effectRow(s.store, second.compensationEffectId).status).toBe("succeeded");
    expect(s.provider.stats().writes[first.idempotencyKey]).toBeUndefined();
    expect(s.provider.stats().writes[second.idempotencyKey]).toBe(1);
  });

  it("refuses, changing nothing: unknown id, missing Driver, an effect that is not succeeded, a tool with no declared compensation", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const setup = s;
    const original = await succeededIssue(setup);
    const before = ledgerSnapshot(setup.store);
    expect(await codeOf(setup.runtime.operator.compensate("01JDZZZZZZZZZZZZZZZZZZZZZZ", AUDIT, operatorNamed("alice")))).toBe(
      "effect.not_found",
    );
    expect(
      await codeOf(
        setup.runtime.operator.compensate(
          original.effectId,
          { ...AUDIT, driverInstanceId: "01JDZZZZZZZZZZZZZZZZZZZZZZ" },
          operatorNamed("alice"),
        ),
      ),
    ).toBe("driver.not_found");

    // an unknown effect (a crashed createIssue) is not compensable
    await setup.runtime.runs.enqueueToolCall(original.runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: { title: "second", body: "" },
    });
    const pending = await executeNextCommand(setup, original.driver, { crashAfterCall: true });
    const afterPending = ledgerSnapshot(setup.store);
    expect(await codeOf(setup.runtime.operator.compensate(pending.effectId, AUDIT, operatorNamed("alice")))).toBe("effect.not_succeeded");

    expect(ledgerSnapshot(setup.store)).toEqual(afterPending);

    // a succeeded compensation (closeIssue) has no compensation of its own: the adapter declares none
    const comp = await setup.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice"));
    await executeNextCommand(setup, original.driver);
    expect(effectRow(setup.store, comp.compensationEffectId).status).toBe("succeeded");
    const afterComp = ledgerSnapshot(setup.store);
    expect(afterComp).not.toEqual(before);
    expect(await codeOf(setup.runtime.operator.compensate(comp.compensationEffectId, AUDIT, operatorNamed("alice")))).toBe(
      "compensation.not_declared",
    );
    expect(ledgerSnapshot(setup.store)).toEqual(afterComp);
  });

  it("refuses a finalized target Driver and an unbound server, changing nothing", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const setup = s;
    const original = await succeededIssue(setup);
    await setup.runtime.repair.finalize(original.driver.instance.id, "operator");
    const before = ledgerSnapshot(setup.store);
    expect(await codeOf(setup.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice")))).toBe(
      "compensation.driver_unavailable",
    );
    expect(ledgerSnapshot(setup.store)).toEqual(before);
    expect(setup.provider.stats().lookups[original.idempotencyKey]).toBe(1); // planning read the provider once, wrote nothing
  });

  it("with no adapter bound (or the flag off) nothing is ever compensated", async () => {
    s = await createFixtureProviderWorld({ mode: "no_binding" });
    const original = await succeededIssue(s);
    const before = ledgerSnapshot(s.store);
    expect(await codeOf(s.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice")))).toBe("compensation.not_declared");
    expect(ledgerSnapshot(s.store)).toEqual(before);
    await s.dispose();
    s = await createFixtureProviderWorld({ mode: "flag_off" });
    const off = await succeededIssue(s);
    expect(await codeOf(s.runtime.operator.compensate(off.effectId, AUDIT, operatorNamed("alice")))).toBe("feature.disabled");
    expect(s.provider.stats().lookups).toEqual({});
  });

  it("a planning failure (the provider has no record of the write) refuses with compensation.plan_failed", async () => {
    s = await createFixtureProviderWorld({ mode: "bound", fenceOnLookupMiss: false });
    const setup = s;
    const driver = await connectDriver(setup.runtime);
    const { runId } = await setup.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    // claimed, never sent to the provider, fenced; then an operator (wrongly) resolves it succeeded
    const call = await setup.runtime.runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: { title: "never sent", body: "" },
    });
    await setup.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
    await setup.runtime.commands.updateCommand(driver.instance, call.commandId, { connectionId: driver.connectionId, status: "accepted" });
    expect((await setup.runtime.ledger.claim(driver.instance, driver.connectionId, call.commandId)).kind).toBe("execute");
    await setup.runtime.ledger.markUnknown(driver.instance, call.effectId, {
      connectionId: driver.connectionId,
      attempt: 1,
      reason: "transport closed",
    });
    await setup.runtime.operator.resolve(
      call.effectId,
      {
        outcome: "succeeded",
        result: { content: [{ type: "text", text: "Created issue #9" }] },
        reason: "I think it happened",
      },
      operatorNamed("bob"),
    );
    const before = ledgerSnapshot(setup.store);
    expect(await codeOf(setup.runtime.operator.compensate(call.effectId, AUDIT, operatorNamed("alice")))).toBe("compensation.plan_failed");
    expect(ledgerSnapshot(setup.store)).toEqual(before);
    expect(setup.provider.stats().writes).toEqual({});
  });

  it("a compensation the provider answered with an error result does not block another; the retry closes the issue", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const setup = s;
    const original = await succeededIssue(setup);
    setup.provider.setFaults({ failBeforeCommit: true });
    const failed = await setup.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice"));
    const ran = await executeNextCommand(setup, original.driver);
    expect(ran.result).toMatchObject({ isError: true, outputText: expect.stringMatching(/^provider_unavailable: /) });
    expect(effectRow(setup.store, failed.compensationEffectId).status).toBe("succeeded"); // the provider answered: an error result
    setup.provider.setFaults({ failBeforeCommit: false });
    const retry = await setup.runtime.operator.compensate(
      original.effectId,
      { ...AUDIT, reason: "retry after the provider recovered" },
      operatorNamed("alice"),
    );
    await executeNextCommand(setup, original.driver);
    expect(effectRow(setup.store, retry.compensationEffectId).status).toBe("succeeded");
    expect(setup.provider.stats().writes[retry.idempotencyKey]).toBe(1);
    // now it is undone: a third request is refused
    expect(await codeOf(setup.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice")))).toBe("compensation.exists");
  });

  it("a compensation whose command ended before any claim (its Driver died) does not block another", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const setup = s;
    const original = await succeededIssue(setup);
    const stranded = await setup.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice"));
    await setup.runtime.repair.finalize(original.driver.instance.id, "heartbeat_expired");
    expect(effectRow(setup.store, stranded.compensationEffectId).status).toBe("intent");
    expect(commandRow(setup.store, stranded.commandId).status).toBe("failed");
    const other = await connectDriver(setup.runtime, "driver-b");
    const again = await setup.runtime.operator.compensate(
      original.effectId,
      { ...AUDIT, driverInstanceId: other.instance.id },
      operatorNamed("alice"),
    );
    await executeNextCommand(setup, other);
    expect(effectRow(setup.store, again.compensationEffectId).status).toBe("succeeded");
    expect(setup.provider.stats().writes[stranded.idempotencyKey]).toBeUndefined();
  });

  it("the database refuses two compensations of one effect in flight at once, whatever the service did", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const setup = s;
    const original = await succeededIssue(setup);
    const first = await setup.runtime.operator.compensate(original.effectId, AUDIT, operatorNamed("alice"));
    await executeNextCommand(setup, original.driver, { crashAfterCall: true }); // first is executing
    const sql = setup.store.sqlite;
    const copy = sql.prepare("SELECT * FROM external_tool_effects WHERE id = ?").get(first.compensationEffectId) as Record<string, unknown>;
    const insert = () =>
      sql
        .prepare(
          `INSERT INTO external_tool_effects (${Object.keys(copy).join(", ")}) VALUES (${Object.keys(copy)
            .map(() => "?")
            .join(", ")})`,
        )
        .run(
          ...Object.values({
            ...copy,
            id: "01JDZZZZZZZZZZZZZZZZZZZZZZ",
            command_id: original.commandId,
            idempotency_key: "01JDZZZZZZZZZZZZZZZZZZZZZY",
          }),
        );
    expect(insert).toThrow(/UNIQUE constraint failed/);
  });

  it("purging the finalized Driver that ran a compensation keeps the audit row (with the compensation's id) and answers no 500", async () => {
    s = await createFixtureProviderWorld({ mode: "bound" });
    const setup = s;
    const original = await succeededIssue(setup);
    const other = await connectDriver(setup.runtime, "driver-b");
    const comp = await setup.runtime.operator.compensate(
      original.effectId,
      { ...AUDIT, driverInstanceId: other.instance.id },
      operatorNamed("alice"),
    );
    await executeNextCommand(setup, other);
    await setup.runtime.repair.finalize(other.instance.id, "driver_request");
    await setup.runtime.runs.purgeDriver(other.instance.id);
    expect(
      setup.store.sqlite.prepare("SELECT count(*) AS n FROM external_tool_effects WHERE id = ?").get(comp.compensationEffectId),
    ).toEqual({ n: 0 });
    expect((await setup.runtime.operator.show(original.effectId)).operatorActions).toEqual([
      expect.objectContaining({ action: "compensate", compensationEffectId: comp.compensationEffectId }),
    ]);
  });
});
