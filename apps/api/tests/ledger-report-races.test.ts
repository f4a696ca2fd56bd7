/**
 * Races between a Driver's report and a concurrent change of the same row, found by the hostile review
 * of the async store port:
 * - `complete` racing a fence on PostgreSQL (READ COMMITTED): the fence commits while `complete` waits
 *   for the row lock, so `complete`'s compare-and-set matches nothing; it must then judge the report
 *   again on the fenced row (`rejected`: the Driver keeps the result as late evidence, docs/DESIGN.md §3
 *   rule 13), never answer `applied` for a result that was not stored;
 * - the sweep listing a Driver as expired, and its heartbeat committing before the repair starts: the
 *   repair judges the expiry again in its own transaction and leaves the live Driver alone.
 * Ordering comes from the row lock (observed in pg_stat_activity) and the store's FIFO mutex, never a timer.
 */
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { openPostgresTarget } from "./helpers/pg-store-targets.js";
import {
  buildRuntime,
  connectDriver,
  createManualClock,
  createTestWorld,
  deliverAcceptClaim,
  enqueueCreateIssue,
  issueResult,
  type TestWorld,
} from "./kit/index.js";

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

describe("complete racing a fence (PostgreSQL, READ COMMITTED)", () => {
  it("answers rejected and stores nothing when the fence commits while complete waits for the row lock", async () => {
    const t = await openPostgresTarget("report_race");
    closers.push(t.close);
    const runtime = buildRuntime(t.store, createManualClock(), { heartbeatTtlMs: 10_000 });
    const d = await connectDriver(runtime);
    await enqueueCreateIssue(runtime, d);
    const { claim } = await deliverAcceptClaim(runtime, d);
    if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);

    const other = new pg.Client({ connectionString: t.url });
    await other.connect();
    closers.push(() => other.end());
    await other.query("BEGIN");
    await other.query("UPDATE external_tool_effects SET status = 'unknown', version = version + 1 WHERE id = $1", [claim.effectId]);

    const completing = runtime.ledger.complete(d.instance, claim.effectId, {
      connectionId: d.connectionId,
      attempt: claim.attempt,
      result: issueResult(),
      receipt: null,
    });
    // complete has read `executing` and now waits for the fence's row lock
    const waiting = async () =>
      (
        await other.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()",
        )
      ).rows[0].n as number;
    for (const deadline = Date.now() + 120_000; (await waiting()) === 0;) {
      if (Date.now() > deadline) throw new Error("complete never waited for the fence's row lock");
      await new Promise((r) => setTimeout(r, 20));
    }
    await other.query("COMMIT");

    const answer = await completing;
    expect(answer).toMatchObject({ outcome: "rejected", status: "unknown" });
    const row = (
      await other.query("SELECT status, result_json IS NOT NULL AS has_result FROM external_tool_effects WHERE id = $1", [claim.effectId])
    ).rows[0];
    expect(row).toEqual({ status: "unknown", has_result: false });
    const attempt = (
      await other.query("SELECT status FROM external_tool_effect_attempts WHERE effect_id = $1 AND attempt = $2", [
        claim.effectId,
        claim.attempt,
      ])
    ).rows[0];
    expect(attempt.status).not.toBe("succeeded");
  }, 180_000);
});

describe("the sweep and a heartbeat that commits after it listed the Driver", () => {
  let w: TestWorld;
  afterEach(() => w.close());

  it("does not finalize a Driver whose heartbeat was accepted after the sweep's read", async () => {
    w = createTestWorld({ heartbeatTtlMs: 10_000 });
    const d = await connectDriver(w.runtime);
    await enqueueCreateIssue(w.runtime, d);
    const { claim } = await deliverAcceptClaim(w.runtime, d);
    expect(claim.kind).toBe("execute");
    w.clock.advance(10_001); // the heartbeat is just past its TTL
    const sweep = w.runtime.sweep.sweepOnce(); // its read of expired Drivers takes the store first
    const beat = await w.runtime.drivers.heartbeat(d.instance, d.connectionId); // queued right behind it, commits before the repair
    expect(beat.heartbeatTtlMs).toBe(10_000);
    const report = await sweep;
    expect(report.driversFinalized).toBe(0);
    const self = await w.runtime.drivers.describe(d.instance);
    expect(self).toMatchObject({ status: "connected", effects: { executing: 1, unknown: 0 } });
  });

  it("still finalizes a Driver that stayed silent", async () => {
    w = createTestWorld({ heartbeatTtlMs: 10_000 });
    const d = await connectDriver(w.runtime);
    w.clock.advance(10_001);
    expect((await w.runtime.sweep.sweepOnce()).driversFinalized).toBe(1);
    expect((await w.runtime.drivers.describe(d.instance)).status).toBe("finalized");
  });
});
