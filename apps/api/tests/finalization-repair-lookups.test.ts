/**
 * Finalization repair with a lookup in flight (docs/DESIGN.md §3 rule 10), on every store: the commands
 * no lookup settles (here on an unbound server) have ended while a bound effect's lookup waits at a
 * gate, each with exactly one terminal event, and the bound command ends only in its outcome's
 * transaction (nothing terminal for it before the lookup answered), before the run's `run.failed`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { connectDriver, deliverAcceptClaim, openDoubleWorld, pollUntil, STORE_KINDS, type AnyStoreDoubleWorld } from "./kit/index.js";
import { commandsOfDriver, eventsOf } from "./helpers/store-rows.js";

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

/** Unbound commands, each settled on the command row the repair listed (not read again). */
const UNBOUND = 70;

describe.each(STORE_KINDS)("finalization repair with a lookup in flight (%s)", (kind) => {
  it("has ended the unbound commands while the bound lookup waits; the bound one ends with its outcome", async () => {
    const w = await openDoubleWorld({ store: kind, prefix: "repair_batches" });
    fx = w;
    const driver = await connectDriver(w.runtime);
    const { runId } = await w.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    const bound = await w.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { title: "t" } });
    for (let i = 0; i < UNBOUND; i++)
      await w.runtime.runs.enqueueToolCall(runId, { serverId: "unbound", toolName: "createIssue", arguments: { title: `u${i}` } });
    for (let i = 0; i <= UNBOUND; i++) expect((await deliverAcceptClaim(w.runtime, driver)).claim.kind).toBe("execute");

    // the bound lookup waits at a gate until every other command has ended
    let lookupsStarted = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const inner = w.adapter.lookup.bind(w.adapter);
    w.adapter.lookup = async (req, ctx) => {
      lookupsStarted += 1;
      await gate;
      return inner(req, ctx);
    };
    const repairing = w.runtime.repair.finalize(driver.instance.id, "operator");
    const during = await pollUntil(
      async () => {
        const rows = await commandsOfDriver(w.store, driver.instance.id);
        return lookupsStarted > 0 && rows.filter((c) => c.terminalAtMs !== null).length === UNBOUND ? rows : undefined;
      },
      60_000,
      "the unbound commands end while the lookup waits",
    );
    expect(during.find((c) => c.id === bound.commandId)).toMatchObject({ status: "accepted", terminalAtMs: null });
    for (const c of during.filter((r) => r.id !== bound.commandId)) {
      expect(c.status).toBe("failed");
      expect(JSON.parse(c.errorJson!)).toMatchObject({ code: "external_effect.unknown", retryable: false });
    }

    open();
    const summary = await repairing;
    expect(summary).toMatchObject({ effectsFenced: UNBOUND + 1, effectsReconciled: 1, commandsFailed: UNBOUND + 1, runsFailed: 1 });
    const after = await commandsOfDriver(w.store, driver.instance.id);
    expect(after.find((c) => c.id === bound.commandId)).toMatchObject({ status: "failed" });
    expect(JSON.parse(after.find((c) => c.id === bound.commandId)!.errorJson!)).toMatchObject({ code: "external_effect.not_executed" });
    // exactly one terminal tool-call event per command, and one run.failed after all of them
    const events = await eventsOf(w.store, runId);
    const toolEnds = events.filter((e) => e.type === "tool_call.failed" || e.type === "tool_call.completed");
    expect(new Set(toolEnds.map((e) => (JSON.parse(e.payloadJson) as { commandId: string }).commandId)).size).toBe(UNBOUND + 1);
    expect(toolEnds).toHaveLength(UNBOUND + 1);
    const runFailed = events.filter((e) => e.type === "run.failed");
    expect(runFailed).toHaveLength(1);
    expect(runFailed[0]!.seq).toBeGreaterThan(Math.max(...toolEnds.map((e) => e.seq)));
  });
});
