// The shared store suite (docs/DESIGN.md §11 "Both stores, same proofs"): the same lifecycle, CAS,
// fence, sequence, reconciliation, operator, compensation, repair, sweep and purge proofs, through the
// services, on every store behind the port: embedded SQLite, PGlite and the test run's real PostgreSQL
// server. SQLite gets a fresh in-memory store per test; the two PostgreSQL stores are opened once per
// store kind and emptied (TRUNCATE) before each test. On the real server "concurrently" means several
// units of work at once on the connection pool.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fingerprintArguments } from "@mosoo/contracts";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import { UserFacingError } from "../src/kernel/user-facing-error.js";
import {
  commitAtProvider,
  connectDriver,
  deliverAcceptClaim,
  dispatchWrite,
  finalizeDriver,
  openDoubleWorld,
  openStoreOfKind,
  redeliverAndClaim,
  STORE_KINDS,
  truncatePgStore,
  type AnyStoreDoubleWorld,
  type DispatchedCall,
  type DoubleWorldOptions,
  type OpenedStore,
  type StoreKind,
  operatorNamed,
} from "./kit/index.js";
import { attemptsOf, commandOf, commandsOfDriver, effectOf, eventsOf, operatorActionsOf, reconciliationsOf } from "./helpers/store-rows.js";

const AUDIT = { reason: "checked the tracker" };

/** The error code a rejected promise carries (UserFacingError code, else the store error's code, else its message). */
async function failureOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "no error";
  } catch (err) {
    if (err instanceof UserFacingError) return err.code;
    const code = (err as { code?: unknown }).code;
    return typeof code === "string" ? code : String(err);
  }
}

/** The result a Driver reports for `call` (the effect's own request id, server and tool). */
async function resultOf(w: AnyStoreDoubleWorld, call: DispatchedCall, text = "Created issue #1") {
  const eff = await effectOf(w.store, call.effectId);
  return { outputText: text, requestId: eff!.requestId, serverId: "tracker", toolName: "createIssue" };
}

/** Tests passed and run per store kind, printed once at the end (the issue's closing note asks for the counts per store). */
const counts = new Map<StoreKind, { passed: number; run: number }>(STORE_KINDS.map((k) => [k, { passed: 0, run: 0 }]));

afterAll(() => {
  console.log(`shared store suite: ${[...counts].map(([k, c]) => `${k} ${c.passed}/${c.run} passed`).join(", ")}`);
});

describe.each(STORE_KINDS)("shared store suite on %s", (kind: StoreKind) => {
  let shared: OpenedStore | undefined;
  let w: AnyStoreDoubleWorld | undefined;

  // vitest marks a test "pass" before its afterEach hooks run
  afterEach(({ task }) => {
    const c = counts.get(kind)!;
    c.run += 1;
    if (task.result?.state === "pass") c.passed += 1;
  });

  beforeAll(async () => {
    if (kind !== "sqlite") shared = await openStoreOfKind(kind, "store_suite");
  }, 120_000);
  afterAll(async () => {
    await shared?.close();
  });
  beforeEach(async () => {
    await w?.close();
    w = undefined;
    if (shared) await truncatePgStore(shared.store);
  });

  /** A double world on this suite's store (a fresh SQLite one, or the shared, emptied PostgreSQL one). */
  async function world(opts: Omit<DoubleWorldOptions, "dbFile"> = {}): Promise<AnyStoreDoubleWorld> {
    w = await openDoubleWorld({ ...opts, store: shared ?? "sqlite" });
    expect(w.store.dialect).toBe(kind === "sqlite" ? "sqlite" : "postgres");
    return w;
  }

  it("effect lifecycle: intent -> claim (execute) -> complete; the command completes; run events in seq order", async () => {
    const f = await world();
    const call = await dispatchWrite(f);
    expect((await effectOf(f.store, call.effectId))?.status).toBe("executing");
    const result = await resultOf(f, call);
    const done = await f.runtime.ledger.complete(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      result,
      receipt: { "io.example/op": "op_1" },
    });
    expect(done).toMatchObject({ outcome: "applied", status: "succeeded" });
    const update = await f.runtime.commands.updateCommand(call.driver.instance, call.commandId, {
      connectionId: call.driver.connectionId,
      status: "completed",
      result,
    });
    expect(update.outcome).toBe("applied");
    expect(await effectOf(f.store, call.effectId)).toMatchObject({ status: "succeeded", resolution: "provider_result", attemptCount: 1 });
    expect(JSON.parse((await effectOf(f.store, call.effectId))!.providerReceiptJson!)).toEqual({ "io.example/op": "op_1" });
    expect((await commandOf(f.store, call.commandId))?.status).toBe("completed");
    expect((await attemptsOf(f.store, call.effectId)).map((a) => a.status)).toEqual(["succeeded"]);
    const seqs = (await eventsOf(f.store, call.runId)).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    // a second report of the same attempt changes nothing
    const again = await f.runtime.ledger.complete(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      result,
      receipt: null,
    });
    expect(again.outcome).not.toBe("applied");
  });

  it("redelivery of an executing effect fences it unknown (no second execute); markUnknown on a live attempt marks it unknown", async () => {
    const f = await world({ enabled: false });
    const call = await dispatchWrite(f);
    expect((await redeliverAndClaim(f, call)).kind).toBe("unknown");
    expect(await effectOf(f.store, call.effectId)).toMatchObject({ status: "unknown", attemptCount: 1 });
    expect((await attemptsOf(f.store, call.effectId)).length).toBe(1);

    const other = await dispatchWrite(f, { driver: await connectDriver(f.runtime, "driver-b") });
    const marked = await f.runtime.ledger.markUnknown(other.driver.instance, other.effectId, {
      connectionId: other.driver.connectionId,
      attempt: 1,
      reason: "connection lost mid-call",
    });
    expect(marked).toMatchObject({ outcome: "applied", status: "unknown" });
    expect((await effectOf(f.store, other.effectId))?.status).toBe("unknown");
  });

  it("deadline missed settles not_executed and fails the command retryable; late evidence settles a fenced effect succeeded", async () => {
    const f = await world({ enabled: false });
    const missed = await dispatchWrite(f);
    expect(
      await f.runtime.ledger.deadlineMissed(missed.driver.instance, missed.effectId, {
        connectionId: missed.driver.connectionId,
        attempt: 1,
        elapsedMs: 12_000,
      }),
    ).toEqual({ outcome: "applied", status: "not_executed" });
    expect(await effectOf(f.store, missed.effectId)).toMatchObject({ status: "not_executed", resolution: "deadline_missed" });
    expect((await commandOf(f.store, missed.commandId))?.status).toBe("failed");

    const late = await dispatchWrite(f, { driver: await connectDriver(f.runtime, "driver-b") });
    expect((await redeliverAndClaim(f, late)).kind).toBe("unknown");
    const restarted = { ...late.driver, instance: await f.runtime.drivers.authenticate(late.driver.token) };
    const answer = await f.runtime.ledger.lateResult(restarted.instance, late.effectId, {
      connectionId: late.driver.connectionId,
      attempt: 1,
      idempotencyKey: late.idempotencyKey,
      toolName: "createIssue",
      requestFingerprint: fingerprintArguments(late.args),
      result: await resultOf(f, late, "created op_1"),
      receipt: { "io.example/op": "op_1" },
    });
    expect(answer).toMatchObject({ outcome: "applied", status: "succeeded" });
    expect(await effectOf(f.store, late.effectId)).toMatchObject({ status: "succeeded", resolution: "reported_late" });
  });

  it("CAS: claims racing on one effect (several units of work at once) give exactly one execute and one attempt", async () => {
    const f = await world({ enabled: false });
    for (let round = 0; round < 5; round += 1) {
      const driver = await connectDriver(f.runtime, `driver-${round}`); // one active run per Driver
      const { runId } = await f.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
      const call = await f.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { round } });
      const env = await f.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
      expect(env?.commandId).toBe(call.commandId);
      await f.runtime.commands.updateCommand(driver.instance, call.commandId, { connectionId: driver.connectionId, status: "accepted" });
      const settled = await Promise.allSettled(
        Array.from({ length: 4 }, () => f.runtime.ledger.claim(driver.instance, driver.connectionId, call.commandId)),
      );
      const executes = settled.filter((s) => s.status === "fulfilled" && s.value.kind === "execute");
      expect(executes.length).toBe(1);
      for (const s of settled) {
        if (s.status === "rejected") expect(s.reason).toBeInstanceOf(UserFacingError);
      }
      expect((await attemptsOf(f.store, call.effectId)).length).toBe(1);
      expect((await effectOf(f.store, call.effectId))?.attemptCount).toBe(1);
    }
  });

  it("the fence trigger refuses the delete of an executing or unknown effect", async () => {
    const f = await world({ enabled: false });
    const executing = await dispatchWrite(f);
    const unknown = await dispatchWrite(f, { driver: await connectDriver(f.runtime, "driver-b") });
    await f.runtime.ledger.markUnknown(unknown.driver.instance, unknown.effectId, {
      connectionId: unknown.driver.connectionId,
      attempt: 1,
      reason: "lost",
    });
    for (const id of [executing.effectId, unknown.effectId]) {
      const failure = await failureOf(
        f.store.transaction(async (tx) => {
          const t = tx.tables.externalToolEffects;
          const { eq } = await import("drizzle-orm");
          await tx.db.delete(t).where(eq(t.id, id));
        }),
      );
      expect(failure).not.toBe("no error");
      expect(await effectOf(f.store, id)).toBeDefined();
    }
    await expect(f.runtime.runs.deleteRun(executing.runId)).rejects.toThrow();
    expect(await effectOf(f.store, executing.effectId)).toBeDefined();
  });

  it("run events: concurrent appends on one run get seq 1..n with no gap; command seq per Driver has no duplicate", async () => {
    const f = await world({ enabled: false });
    const a = await connectDriver(f.runtime, "driver-a");
    const b = await connectDriver(f.runtime, "driver-b");
    const { runId } = await f.runtime.runs.createRun({ driverInstanceId: a.instance.id });
    const { runId: runB } = await f.runtime.runs.createRun({ driverInstanceId: b.instance.id });
    const enqueue = (run: string, i: number) =>
      f.runtime.runs.enqueueToolCall(run, { serverId: "tracker", toolName: "createIssue", arguments: { i } });
    const jobs = [...Array.from({ length: 8 }, (_, i) => [runId, i] as const), ...Array.from({ length: 8 }, (_, i) => [runB, i] as const)];
    const settled = await Promise.allSettled(jobs.map(([run, i]) => enqueue(run, i)));
    // SQLite serialises writers: every append succeeds. On PostgreSQL `seq` comes from the parent row's
    // counter (`UPDATE … RETURNING`, migration 0005): the row lock orders the appends of one parent, so
    // none collides; one that waits past `lock_timeout` (2 s, a very loaded machine) is answered
    // store.busy with NOTHING written, and its caller retries it (here: once the burst is over).
    const refused = settled.flatMap((r, k) => (r.status === "rejected" ? [k] : []));
    if (kind === "sqlite") expect(refused).toEqual([]);
    for (const k of refused) expect((settled[k] as PromiseRejectedResult).reason).toMatchObject({ code: "store.busy" });
    for (const k of refused) await enqueue(jobs[k]![0], jobs[k]![1]);
    for (const run of [runId, runB]) {
      const seqs = (await eventsOf(f.store, run)).map((e) => e.seq);
      expect(seqs.length).toBeGreaterThanOrEqual(8);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    }
    for (const d of [a, b]) {
      const commands = await commandsOfDriver(f.store, d.instance.id);
      expect(commands.map((c) => c.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      const args = commands.map((c) => (JSON.parse(JSON.parse(c.payloadJson).argumentsJson) as { i: number }).i);
      expect([...args].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]); // each append exactly once
    }
  });

  it("reconciliation: the outcome and its receipt commit together (finalization repair reconciles a committed write)", async () => {
    const f = await world();
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call);
    const summary = await finalizeDriver(f, call);
    expect(summary).toMatchObject({ effectsFenced: 1, effectsReconciled: 1 });
    const eff = await effectOf(f.store, call.effectId);
    expect(eff).toMatchObject({ status: "succeeded", resolution: "reconciled" });
    expect(eff!.reconciliationReceiptJson).not.toBeNull();
    const records = await reconciliationsOf(f.store, call.effectId);
    expect(records.map((r) => r.outcome)).toEqual(["confirmed_succeeded"]);
    expect(records[0]!.receiptJson).not.toBeNull();
    expect((await commandOf(f.store, call.commandId))?.status).toBe("completed");
    expect(f.double.totalWriteCount()).toBe(1);
  });

  it("the sweep settles a due unknown effect; nothing at the provider -> not_executed", async () => {
    const f = await world();
    const call = await dispatchWrite(f);
    await f.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "lost",
    });
    f.clock.advance(60_000);
    await f.runtime.sweep.sweepOnce();
    await f.runtime.reconciler.drain();
    expect(await effectOf(f.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "reconciled" });
    expect((await reconciliationsOf(f.store, call.effectId)).at(-1)?.outcome).toBe("confirmed_not_executed");
    expect(f.double.totalWriteCount()).toBe(0);
  });

  it("operator resolve is audited in the same transaction; a refused resolve writes nothing", async () => {
    const f = await world({ bind: false });
    const call = await dispatchWrite(f);
    await f.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "lost",
    });
    await f.runtime.operator.resolve(call.effectId, { outcome: "not_executed", ...AUDIT }, operatorNamed("alice"));
    expect(await effectOf(f.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "operator" });
    const actions = await operatorActionsOf(f.store, call.effectId);
    expect(actions).toHaveLength(1);
    expect(actions[0]).toMatchObject({ action: "resolve", actor: "alice", statusBefore: "unknown", statusAfter: "not_executed" });
    expect(
      await failureOf(
        f.runtime.operator.resolve(call.effectId, { outcome: "succeeded", result: { outputText: "x" }, ...AUDIT }, operatorNamed("alice")),
      ),
    ).not.toBe("no error");
    expect(await effectOf(f.store, call.effectId)).toMatchObject({ status: "not_executed" });
  });

  it("compensation: a succeeded write queues its compensating effect and command for the same Driver, audited", async () => {
    const f = await world();
    const inner = f.adapter;
    const compensating: ReconciliationAdapter = {
      declaration: {
        ...inner.declaration,
        tools: ["createIssue", "closeIssue"],
        compensations: { createIssue: { toolName: "closeIssue", description: "closes the issue" } },
      },
      lookup: (request, context) => inner.lookup(request, context),
      planCompensation: async (request) => ({ arguments: { issueId: `issue-of-${request.idempotencyKey}` } }),
    };
    // the runtime reads the world's settings object: bind the compensating adapter in place of the plain one
    (f.settings.bindings as Map<string, ReconciliationAdapter>).set("tracker", compensating);
    const call = await dispatchWrite(f);
    await f.runtime.ledger.complete(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      result: await resultOf(f, call),
      receipt: null,
    });
    const queued = await f.runtime.operator.compensate(call.effectId, AUDIT, operatorNamed("alice"));
    expect(queued).toMatchObject({ toolName: "closeIssue", driverInstanceId: call.driver.instance.id });
    expect(await effectOf(f.store, queued.compensationEffectId)).toMatchObject({ status: "intent", compensatesEffectId: call.effectId });
    expect((await commandOf(f.store, queued.commandId))?.status).toBe("queued");
    expect((await operatorActionsOf(f.store, call.effectId)).map((a) => a.action)).toEqual(["compensate"]);
    expect(await failureOf(f.runtime.operator.compensate(call.effectId, AUDIT, operatorNamed("alice")))).toBe("compensation.exists");
    const next = await deliverAcceptClaim(f.runtime, call.driver);
    expect(next.claim).toMatchObject({ kind: "execute", effectId: queued.compensationEffectId });
  });

  it("finalization repair fences executing work, settles commands, and a second repair changes nothing", async () => {
    const f = await world();
    const call = await dispatchWrite(f);
    const first = await finalizeDriver(f, call);
    expect(first).toMatchObject({ effectsFenced: 1, effectsReconciled: 1 });
    expect(await effectOf(f.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "reconciled" });
    expect((await commandOf(f.store, call.commandId))?.status).toBe("failed");
    const second = await finalizeDriver(f, call);
    expect(second).toMatchObject({ effectsFenced: 0, effectsReconciled: 0 });
  });

  it("purge: deleting a finalized Driver removes its ledger rows but keeps the operator audit", async () => {
    const f = await world({ bind: false });
    const call = await dispatchWrite(f);
    await f.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "lost",
    });
    await f.runtime.operator.resolve(call.effectId, { outcome: "not_executed", ...AUDIT }, operatorNamed("alice"));
    await f.runtime.repair.finalize(call.driver.instance.id, "driver_request");
    await f.runtime.runs.purgeDriver(call.driver.instance.id);
    expect(await effectOf(f.store, call.effectId)).toBeUndefined();
    expect(await commandOf(f.store, call.commandId)).toBeUndefined();
    expect((await operatorActionsOf(f.store, call.effectId)).map((a) => a.action)).toEqual(["resolve"]);
  });
});
