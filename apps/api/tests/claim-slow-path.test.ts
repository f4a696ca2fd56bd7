/**
 * The claim's slow path (docs/DESIGN.md §3 rule 2): only the claim's compare-and-set dispatches. When it
 * changed nothing and the rows, read again without a lock, still say `intent` of a live command on the
 * current connection (a change raced it), the claim is refused `effect.claim_conflict` and nothing is
 * dispatched: no `execute`, no attempt, the effect still `intent`. The next claim decides again.
 * On both stores; the lost compare-and-set is the spied repository call answering "changed nothing".
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { effectLifecycleRepository } from "../src/modules/ledger/infrastructure/effect-lifecycle.repository.js";
import { connectDriver, enqueueCreateIssue, openDoubleWorld, type AnyStoreDoubleWorld } from "./kit/index.js";
import { attemptsOf, effectOf } from "./helpers/store-rows.js";

let fx: AnyStoreDoubleWorld | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await fx?.close();
  fx = undefined;
});

describe.each(["sqlite", "postgres"] as const)("a claim whose compare-and-set changed nothing (%s)", (kind) => {
  it("is refused effect.claim_conflict when the effect still reads intent: nothing dispatched; the next claim dispatches", async () => {
    const w = await openDoubleWorld({ store: kind, prefix: "claim_slow" });
    fx = w;
    const driver = await connectDriver(w.runtime);
    const { commandId, effectId } = await enqueueCreateIssue(w.runtime, driver);
    const env = await w.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
    expect(env?.commandId).toBe(commandId);
    await w.runtime.commands.updateCommand(driver.instance, commandId, { connectionId: driver.connectionId, status: "accepted" });
    vi.spyOn(effectLifecycleRepository, "claimIntent").mockResolvedValueOnce(undefined);

    await expect(w.runtime.ledger.claim(driver.instance, driver.connectionId, commandId)).rejects.toMatchObject({
      code: "effect.claim_conflict",
      httpStatus: 409,
      details: { effectId },
    });
    expect(await effectOf(w.store, effectId)).toMatchObject({ status: "intent", attemptCount: 0, lastDispatchedAtMs: null });
    expect(await attemptsOf(w.store, effectId)).toEqual([]);

    const again = await w.runtime.ledger.claim(driver.instance, driver.connectionId, commandId);
    expect(again).toMatchObject({ kind: "execute", effectId, attempt: 1 });
  });
});
