/**
 * The repeat guard (docs/DESIGN.md §3 rule 17), on SQLite and on the real PostgreSQL server: a tool call
 * with the same server, tool and arguments as a recent write of the same session is refused with a typed
 * 409 naming that effect, unless the request names it as a deliberate repeat (recorded on the new effect).
 * Off unless the server is configured; other sessions, changed arguments, an expired window go through;
 * two identical enqueues racing make one effect.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { UserFacingError } from "../src/kernel/user-facing-error.js";
import {
  connectDriver,
  dispatchWrite,
  finalizeDriver,
  issueArgs,
  openDoubleWorld,
  openStoreOfKind,
  truncatePgStore,
  type AnyStoreDoubleWorld,
  type OpenedStore,
} from "./kit/index.js";

const WINDOW_MS = 60_000;

/** The UserFacingError `fn` rejects with (fails the test when it resolves). */
async function refusal(fn: () => Promise<unknown>): Promise<UserFacingError> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof UserFacingError) return err;
    throw err;
  }
  throw new Error("expected a refusal, the call went through");
}

describe.each(["sqlite", "postgres"] as const)("repeat guard on %s", (kind) => {
  let shared: OpenedStore | undefined;
  let w: AnyStoreDoubleWorld | undefined;
  beforeAll(async () => {
    if (kind !== "sqlite") shared = await openStoreOfKind(kind, "repeat_guard");
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
  async function world(guarded = true): Promise<AnyStoreDoubleWorld> {
    // reconciliation off: the interrupted write stays unknown (nothing looks it up)
    w = await openDoubleWorld({
      store: shared ?? "sqlite",
      enabled: false,
      ...(guarded ? { repeatGuard: new Map([["tracker", WINDOW_MS]]) } : {}),
    });
    return w;
  }
  async function effectCount(f: AnyStoreDoubleWorld): Promise<number> {
    return (await f.store.read((tx) => tx.db.select().from(tx.tables.externalToolEffects))).length;
  }
  /** An interrupted turn: the write was sent and its Driver ended, so the effect is unknown; a new run in the same session. */
  async function afterInterruptedTurn(f: AnyStoreDoubleWorld) {
    const call = await dispatchWrite(f, { args: issueArgs("Disk full") });
    await finalizeDriver(f, call);
    const driver = await connectDriver(f.runtime, "driver-b");
    const { runId } = await f.runtime.runs.createRun({ driverInstanceId: driver.instance.id, sessionId: call.sessionId });
    const view = await f.runtime.runs.getRunView(call.runId);
    const toolCallId = (view.commands.find((c) => c.id === call.commandId)?.payload as { toolCallId: string }).toolCallId;
    const first = await f.runtime.runs.getToolCall(call.runId, toolCallId);
    return { call, runId, first };
  }

  it("refuses the same request in the same session within the window: 409 naming the effect, its status and toolCallId; nothing written", async () => {
    const f = await world();
    const { call, runId, first } = await afterInterruptedTurn(f);
    expect(first.effectStatus).toBe("unknown");
    const before = await effectCount(f);
    const err = await refusal(() =>
      f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: issueArgs("Disk full") }),
    );
    expect(err.code).toBe("tool_call.repeat_refused");
    expect(err.httpStatus).toBe(409);
    expect(err.details).toEqual({ effectId: call.effectId, status: "unknown", toolCallId: first.toolCallId, windowMs: WINDOW_MS });
    expect(await effectCount(f)).toBe(before);
    const metrics = await f.runtime.metricsRegistry.getSingleMetricAsString("mosoo_tool_call_repeat_refused_total");
    expect(metrics).toContain('mosoo_tool_call_repeat_refused_total{server="tracker",tool="createIssue",earlier_status="unknown"} 1');
  });

  it("lets through: another session, changed arguments, an expired window, an unguarded server", async () => {
    const f = await world();
    const { runId, call } = await afterInterruptedTurn(f);
    // changed arguments (key order alone is not a change: refused)
    await expect(
      f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: issueArgs("Disk full on db-2") }),
    ).resolves.toMatchObject({ replayed: false });
    // another session
    const other = await connectDriver(f.runtime, "driver-c");
    const { runId: otherRun } = await f.runtime.runs.createRun({ driverInstanceId: other.instance.id });
    await expect(
      f.runtime.runs.enqueueToolCall(otherRun, { serverId: "tracker", toolName: "createIssue", arguments: call.args }),
    ).resolves.toMatchObject({ replayed: false });
    // an unguarded server with the same arguments
    await expect(
      f.runtime.runs.enqueueToolCall(runId, { serverId: "mail", toolName: "createIssue", arguments: call.args }),
    ).resolves.toMatchObject({
      replayed: false,
    });
    // the window passes
    f.clock.advance(WINDOW_MS);
    await expect(
      f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: call.args }),
    ).resolves.toMatchObject({
      replayed: false,
    });
  });

  it("a deliberate repeat names the earlier effect: it goes through and is recorded; a wrong name is refused", async () => {
    const f = await world();
    const { runId, call } = await afterInterruptedTurn(f);
    const wrong = await refusal(() =>
      f.runtime.runs.enqueueToolCall(runId, {
        serverId: "tracker",
        toolName: "createIssue",
        arguments: issueArgs("other"),
        repeatOfEffectId: call.effectId,
      }),
    );
    expect(wrong.code).toBe("tool_call.repeat_invalid");
    const again = await f.runtime.runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: call.args,
      toolCallId: "tc-again",
      repeatOfEffectId: call.effectId,
    });
    const view = await f.runtime.runs.getToolCall(runId, "tc-again");
    expect(view).toMatchObject({ effectId: again.effectId, repeatOfEffectId: call.effectId, status: "in_flight", effectStatus: "intent" });
  });

  it("one named effect lets one deliberate repeat through: resending it, or ten at once, is refused naming the repeat", async () => {
    const f = await world();
    const { runId, call } = await afterInterruptedTurn(f);
    const before = await effectCount(f);
    const first = await f.runtime.runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: call.args,
      toolCallId: "tc-deliberate",
      repeatOfEffectId: call.effectId,
    });
    const resend = await refusal(() =>
      f.runtime.runs.enqueueToolCall(runId, {
        serverId: "tracker",
        toolName: "createIssue",
        arguments: call.args,
        toolCallId: "tc-deliberate-again",
        repeatOfEffectId: call.effectId,
      }),
    );
    expect(resend).toMatchObject({ code: "tool_call.repeat_refused", details: { effectId: first.effectId, toolCallId: "tc-deliberate" } });
    const racing = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        f.runtime.runs.enqueueToolCall(runId, {
          serverId: "tracker",
          toolName: "createIssue",
          arguments: call.args,
          toolCallId: `tc-race-${i}`,
          repeatOfEffectId: call.effectId,
        }),
      ),
    );
    expect(racing.every((r) => r.status === "rejected" && (r.reason as UserFacingError).code === "tool_call.repeat_refused")).toBe(true);
    // naming the newest repeat lets exactly one more through
    await f.runtime.runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: call.args,
      toolCallId: "tc-deliberate-2",
      repeatOfEffectId: first.effectId,
    });
    expect(await effectCount(f)).toBe(before + 2);
  });

  it("is off by default: the same request in the same session goes through", async () => {
    const f = await world(false);
    const { runId, call } = await afterInterruptedTurn(f);
    await expect(
      f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: call.args }),
    ).resolves.toMatchObject({
      replayed: false,
    });
  });

  it("two identical enqueues racing make one effect; the other is refused naming it", async () => {
    const f = await world();
    const driver = await connectDriver(f.runtime);
    const { runId } = await f.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    const req = { serverId: "tracker", toolName: "createIssue", arguments: issueArgs("race") };
    const results = await Promise.allSettled([f.runtime.runs.enqueueToolCall(runId, req), f.runtime.runs.enqueueToolCall(runId, req)]);
    const ok = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.reason).toMatchObject({ code: "tool_call.repeat_refused", details: { status: "in_flight" } });
    expect(await effectCount(f)).toBe(1);
  });
});
