/**
 * A Driver's claim racing its finalization (docs/DESIGN.md §3 rules 2 and 10), on both stores: another API
 * instance's finalization holds its first transaction (Driver -> finalizing, fence executing effects,
 * fail the commands of intent effects) just before its commit while the claim arrives. The claim must
 * not dispatch an effect whose command the finalization fails as never sent: nothing stays `executing`
 * behind a finalized Driver. (On PostgreSQL at READ COMMITTED the claim's checks read the instance as
 * last committed; the claim holds the instance row FOR SHARE so the two serialize.)
 */
import { afterEach, describe, expect, it } from "vitest";
import { buildRuntime, connectDriver, openDoubleWorld, pollUntil, type AnyStoreDoubleWorld } from "./kit/index.js";
import { commandOf, effectOf } from "./helpers/store-rows.js";
import { holdingBeforeCommit, lockWaiters } from "./helpers/hold-before-commit.js";

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

describe.each(["sqlite", "postgres"] as const)("a claim racing the Driver's finalization (%s)", (kind) => {
  it("a claim made while the finalization's first transaction is in flight is not dispatched behind the finalized Driver", async () => {
    fx = await openDoubleWorld({ store: kind, prefix: "atk_claim_fin" });
    const w = fx;
    const driver = await connectDriver(w.runtime);
    const { runId } = await w.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    const call = await w.runtime.runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: { title: "t", body: "b" },
      requestId: "req-1",
    });
    const env = await w.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
    expect(env?.commandId).toBe(call.commandId);
    await w.runtime.commands.updateCommand(driver.instance, call.commandId, { connectionId: driver.connectionId, status: "accepted" });

    // another API instance finalizes the Driver; its first transaction is held just before its commit
    const hold = holdingBeforeCommit(w.store);
    const other = buildRuntime(hold.store, w.clock, { heartbeatTtlMs: 3_600_000, reconciliation: w.settings });
    // transaction 1: the finalization work claim; transaction 2: fenceAndSettle (Driver -> finalizing, fence, fail intent commands)
    const { atCommit, release } = hold.arm(1);
    const finalizing = other.repair.finalize(driver.instance.id, "driver_request");
    await atCommit;
    // the Driver's claim arrives meanwhile
    const claiming = w.runtime.ledger.claim(driver.instance, driver.connectionId, call.commandId).then(
      (c) => ({ ok: c }),
      (e: unknown) => ({ err: e as { code?: string } }),
    );
    // On PostgreSQL, release the finalization only once the claim ran or waits on a row lock (an event,
    // not a timer); SQLite serializes the two transactions in either order.
    if (kind === "postgres") {
      let settled = false;
      void claiming.then(() => (settled = true));
      await pollUntil(async () => (settled || (await lockWaiters(w.store)) > 0 ? true : undefined), 30_000, "the claim ran or waits");
    }
    release();
    await finalizing;
    const claim = await claiming;
    const effect = (await effectOf(w.store, call.effectId))!;
    const command = (await commandOf(w.store, call.commandId))!;
    const instance = await w.store.read(async (tx) => {
      const { eq } = await import("drizzle-orm");
      const t = tx.tables.driverInstances;
      return (await tx.db.select().from(t).where(eq(t.id, driver.instance.id)))[0];
    });
    // later maintenance sweeps (hours later) do not repair it either
    for (let i = 0; i < 3; i++) {
      w.clock.advance(3_600_000);
      await w.runtime.sweep.sweepOnce();
    }
    const later = (await effectOf(w.store, call.effectId))!;
    expect(later.status).not.toBe("executing");
    expect(instance?.status).toBe("finalized");
    // rule 10: nothing stays executing behind an ended Driver; rule 2: a terminal command's effect is never dispatched
    expect(effect.status).not.toBe("executing");
    expect("ok" in claim && claim.ok.kind === "execute").toBe(false);
  });
});
