/**
 * The SQLite lifecycle's statement budget and its two folds (migration 0029; docs/ARCHITECTURE.md "SQLite triggers"):
 * - a lifecycle (enqueue, claim, complete, terminal `completed` update; delivery excluded) runs at most 8 statements
 *   besides BEGIN and COMMIT, counted as the bench counts them (`measureLifecycleWrites`);
 * - the enqueue's command INSERT reads the run and the Driver's counter (`insertOfActiveRun`) and the trigger
 *   `driver_commands_advance_last_command_seq` moves the counter: a missing or ended run, a Driver being
 *   finalized, a replayed or conflicting client tool-call id write nothing, and `seq` stays gapless and never reused;
 * - the claim is one compare-and-set whose dispatch trigger `external_tool_effects_attempt_on_dispatch` writes the
 *   attempt row: a claim that loses its compare-and-set (a second claim, a stale connection) writes no attempt, and a
 *   raise of `attempt_count` other than a dispatch is refused.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { UserFacingError } from "../src/kernel/user-facing-error.js";
import { LIFECYCLE_STEPS, lifecycleSum, measureLifecycleWrites } from "../bench/lifecycle-writes.measure.js";
import { connectDriver, createTestWorld, enqueueCreateIssue, reconnectDriver, type ConnectedDriver, type TestWorld } from "./kit/index.js";
import { attemptsOf, effectOf } from "./helpers/store-rows.js";

/** A valid ULID no run has. */
const MISSING_RUN = "01JDZZZZZZZZZZZZZZZZZZZZZZ";

let world: TestWorld | undefined;
let dir: string | undefined;
afterEach(() => {
  world?.close();
  world = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The SQLite handle of the world's store. */
const sqliteOf = (w: TestWorld) => w.store.sqlite;

/** Every row count the enqueue could change, and the Driver's counter: equal before and after means nothing was written. */
function ledgerState(w: TestWorld, driverInstanceId: string) {
  const db = sqliteOf(w);
  const count = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get();
  return {
    lastCommandSeq: db.prepare("SELECT last_command_seq FROM driver_instances WHERE id = ?").pluck().get(driverInstanceId),
    commands: count("driver_commands"),
    effects: count("external_tool_effects"),
    attempts: count("external_tool_effect_attempts"),
    events: count("run_events"),
  };
}

/** The Driver's command seqs, in order, and its counter. */
function numbering(w: TestWorld, driverInstanceId: string) {
  const db = sqliteOf(w);
  return {
    seqs: db.prepare("SELECT seq FROM driver_commands WHERE driver_instance_id = ? ORDER BY seq").pluck().all(driverInstanceId),
    counter: db.prepare("SELECT last_command_seq FROM driver_instances WHERE id = ?").pluck().get(driverInstanceId),
  };
}

/** Runs `fn` and returns the UserFacingError it rejects with (fails the test otherwise). */
async function refusal(fn: () => Promise<unknown>): Promise<UserFacingError> {
  const err = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UserFacingError);
  return err as UserFacingError;
}

const call = (n: number, toolCallId?: string) => ({
  serverId: "tracker",
  toolName: "createIssue",
  arguments: { n },
  ...(toolCallId ? { toolCallId } : {}),
});

describe("the SQLite lifecycle's statements", () => {
  it("a lifecycle runs at most 8 statements besides BEGIN and COMMIT: enqueue 3, claim 1, complete 2, terminal 2", async () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-ledger-statements-"));
    const file = join(dir, "api.db");
    world = createTestWorld({ dbFile: file });
    const { dataStatements } = await measureLifecycleWrites(world.runtime, sqliteOf(world), file, {
      n: 5,
      serverId: "tracker",
      toolName: "createIssue",
    });
    expect(lifecycleSum(dataStatements)).toBeLessThanOrEqual(8);
    expect(Object.fromEntries(LIFECYCLE_STEPS.map((s) => [s, dataStatements[s]]))).toMatchObject({
      enqueue: 3,
      claim: 1,
      complete: 2,
      terminal: 2,
    });
  });
});

describe("the enqueue's command INSERT with the run's read (SQLite)", () => {
  let driver: ConnectedDriver;
  const open = async () => {
    world = createTestWorld();
    driver = await connectDriver(world.runtime);
    return world;
  };

  it("numbers the Driver's commands 1, 2, 3 … without a gap, with and without a client tool-call id, the counter at the last", async () => {
    const w = await open();
    const { runId } = await w.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    const answers = [
      await w.runtime.runs.enqueueToolCall(runId, call(1)),
      await w.runtime.runs.enqueueToolCall(runId, call(2, "tc-2")),
      await w.runtime.runs.enqueueToolCall(runId, call(3)),
    ];
    expect(answers.map((a) => a.seq)).toEqual([1, 2, 3]);
    expect(numbering(w, driver.instance.id)).toEqual({ seqs: [1, 2, 3], counter: 3 });
    // the effect and the event of the folded enqueue: the run's Driver and session, the queued event after run.created
    const effect = await effectOf(w.store, answers[0]!.effectId);
    const run = sqliteOf(w).prepare("SELECT session_id, driver_instance_id FROM session_runs WHERE id = ?").get(runId);
    expect(run).toEqual({ session_id: effect!.sessionId, driver_instance_id: effect!.driverInstanceId });
    const events = sqliteOf(w).prepare("SELECT seq, type FROM run_events WHERE run_id = ? ORDER BY seq").all(runId);
    expect(events).toEqual([
      { seq: 1, type: "run.created" },
      { seq: 2, type: "tool_call.queued" },
      { seq: 3, type: "tool_call.queued" },
      { seq: 4, type: "tool_call.queued" },
    ]);
  });

  it("a missing run: run.not_found, nothing written", async () => {
    const w = await open();
    await enqueueCreateIssue(w.runtime, driver);
    const before = ledgerState(w, driver.instance.id);
    expect((await refusal(() => w.runtime.runs.enqueueToolCall(MISSING_RUN, call(1)))).code).toBe("run.not_found");
    expect(ledgerState(w, driver.instance.id)).toEqual(before);
  });

  it("an ended run: run.not_active, nothing written; the next run's command numbers on", async () => {
    const w = await open();
    const { runId } = await enqueueCreateIssue(w.runtime, driver);
    await w.runtime.repair.finalize(driver.instance.id, "operator");
    const before = ledgerState(w, driver.instance.id);
    const err = await refusal(() => w.runtime.runs.enqueueToolCall(runId, call(1)));
    expect(err).toMatchObject({ code: "run.not_active", details: { runStatus: "failed" } });
    expect(ledgerState(w, driver.instance.id)).toEqual(before);
  });

  it("an active run whose Driver is being finalized: run.not_active, the command's INSERT rolled back with the counter", async () => {
    const w = await open();
    const { runId } = await enqueueCreateIssue(w.runtime, driver);
    sqliteOf(w).prepare("UPDATE driver_instances SET status = 'finalizing' WHERE id = ?").run(driver.instance.id);
    const before = ledgerState(w, driver.instance.id);
    const err = await refusal(() => w.runtime.runs.enqueueToolCall(runId, call(1)));
    expect(err).toMatchObject({ code: "run.not_active", details: { driverStatus: "finalizing" } });
    expect(ledgerState(w, driver.instance.id)).toEqual(before);
  });

  it("a replayed client tool-call id answers the first enqueue and commits nothing new; a conflicting one is refused, nothing written", async () => {
    const w = await open();
    const { runId } = await w.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    const first = await w.runtime.runs.enqueueToolCall(runId, call(1, "tc-1"));
    const before = ledgerState(w, driver.instance.id);
    const again = await w.runtime.runs.enqueueToolCall(runId, call(1, "tc-1"));
    expect(again).toEqual({ ...first, replayed: true });
    expect(ledgerState(w, driver.instance.id)).toEqual(before);
    expect((await refusal(() => w.runtime.runs.enqueueToolCall(runId, call(2, "tc-1")))).code).toBe("tool_call.conflict");
    expect(ledgerState(w, driver.instance.id)).toEqual(before);
    expect((await w.runtime.runs.enqueueToolCall(runId, call(2))).seq).toBe(2);
  });

  it("a deleted command's seq is never handed out again; a lower seq written directly leaves the counter where it is", async () => {
    const w = await open();
    const { runId } = await enqueueCreateIssue(w.runtime, driver); // seq 1
    await w.runtime.runs.enqueueToolCall(runId, call(2)); // seq 2
    await w.runtime.runs.deleteRun(runId); // the commands go with the run (no effect is fenced)
    expect(numbering(w, driver.instance.id)).toEqual({ seqs: [], counter: 2 });
    const { runId: next } = await w.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    expect((await w.runtime.runs.enqueueToolCall(next, call(3))).seq).toBe(3);
    // a writer that numbers below the counter (a seed, a pre-trigger bump-first writer) does not move it back
    sqliteOf(w)
      .prepare(
        "INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, created_at_ms, updated_at_ms) VALUES ('01JDC0MMAND00000000000000S1', ?, ?, 1, 'mcp.execute', 'queued', '{}', 1, 1)",
      )
      .run(driver.instance.id, next);
    expect(numbering(w, driver.instance.id)).toEqual({ seqs: [1, 3], counter: 3 });
    expect((await w.runtime.runs.enqueueToolCall(next, call(4))).seq).toBe(4);
  });
});

describe("the claim's one compare-and-set with its attempt by the dispatch trigger (SQLite)", () => {
  it("writes attempt 1, executing, on the claiming connection, started at the dispatch", async () => {
    world = createTestWorld();
    const w = world;
    const driver = await connectDriver(w.runtime);
    const { commandId, effectId } = await enqueueCreateIssue(w.runtime, driver);
    await w.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
    expect(await w.runtime.ledger.claim(driver.instance, driver.connectionId, commandId)).toMatchObject({ kind: "execute", attempt: 1 });
    const effect = await effectOf(w.store, effectId);
    expect(effect).toMatchObject({ status: "executing", attemptCount: 1, lastDispatchedAtMs: w.clock.nowMs() });
    expect(await attemptsOf(w.store, effectId)).toEqual([
      {
        effectId,
        attempt: 1,
        status: "executing",
        connectionId: driver.connectionId,
        providerReceiptJson: null,
        unknownReason: null,
        startedAtMs: w.clock.nowMs(),
        finishedAtMs: null,
        lateResultJson: null,
        lateReportedAtMs: null,
        sendReportedAtMs: null,
      },
    ]);
  });

  it("a second claim loses the compare-and-set and writes no attempt (it fences the executing effect instead)", async () => {
    world = createTestWorld();
    const w = world;
    const driver = await connectDriver(w.runtime);
    const { commandId, effectId } = await enqueueCreateIssue(w.runtime, driver);
    await w.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
    await w.runtime.ledger.claim(driver.instance, driver.connectionId, commandId);
    expect(await w.runtime.ledger.claim(driver.instance, driver.connectionId, commandId)).toMatchObject({ kind: "unknown", effectId });
    expect((await effectOf(w.store, effectId))?.attemptCount).toBe(1);
    expect((await attemptsOf(w.store, effectId)).map((a) => a.attempt)).toEqual([1]);
  });

  it("a claim on a stale connection is refused and writes no attempt; the current connection's claim writes attempt 1", async () => {
    world = createTestWorld();
    const w = world;
    const stale = await connectDriver(w.runtime);
    const { commandId, effectId } = await enqueueCreateIssue(w.runtime, stale);
    const current: ConnectedDriver = await reconnectDriver(w.runtime, stale);
    expect((await refusal(() => w.runtime.ledger.claim(stale.instance, stale.connectionId, commandId))).code).toBe(
      "driver.connection_superseded",
    );
    expect(await effectOf(w.store, effectId)).toMatchObject({ status: "intent", attemptCount: 0 });
    expect(await attemptsOf(w.store, effectId)).toEqual([]);
    await w.runtime.commands.nextCommand(current.instance, current.connectionId, 0);
    await w.runtime.ledger.claim(current.instance, current.connectionId, commandId);
    expect((await attemptsOf(w.store, effectId)).map((a) => [a.attempt, a.connectionId])).toEqual([[1, current.connectionId]]);
  });

  it("refuses a raise of attempt_count other than a dispatch: by two, to another status than executing, or from another status than intent", async () => {
    world = createTestWorld();
    const w = world;
    const driver = await connectDriver(w.runtime);
    const { commandId, effectId } = await enqueueCreateIssue(w.runtime, driver);
    const db = sqliteOf(w);
    expect(() =>
      db
        .prepare(
          "UPDATE external_tool_effects SET status = 'executing', attempt_count = 2, last_dispatched_at_ms = 1, first_dispatched_at_ms = 1 WHERE id = ?",
        )
        .run(effectId),
    ).toThrow(/attempt_count rises by one, from intent to executing/);
    await w.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
    await w.runtime.ledger.claim(driver.instance, driver.connectionId, commandId);
    expect(() => db.prepare("UPDATE external_tool_effects SET status = 'unknown', attempt_count = 2 WHERE id = ?").run(effectId)).toThrow(
      /attempt_count rises by one, from intent to executing/,
    );
    expect(await effectOf(w.store, effectId)).toMatchObject({ status: "executing", attemptCount: 1 });
    expect((await attemptsOf(w.store, effectId)).map((a) => a.attempt)).toEqual([1]);
    // an unknown effect is never dispatched again (fenced, never replayed)
    db.prepare("UPDATE external_tool_effects SET status = 'unknown' WHERE id = ?").run(effectId);
    expect(() =>
      db
        .prepare("UPDATE external_tool_effects SET status = 'executing', attempt_count = 2, last_dispatched_at_ms = 2 WHERE id = ?")
        .run(effectId),
    ).toThrow(/attempt_count rises by one, from intent to executing/);
    expect(await effectOf(w.store, effectId)).toMatchObject({ status: "unknown", attemptCount: 1 });
    expect((await attemptsOf(w.store, effectId)).map((a) => a.attempt)).toEqual([1]);
  });
});
