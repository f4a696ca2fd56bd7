import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { UserFacingError } from "../src/kernel/user-facing-error.js";
import {
  buildHttpApp,
  commitAtProvider,
  createDoubleWorld,
  deliverAcceptClaim,
  type DispatchedCall,
  dispatchWrite,
  type DoubleWorld,
  type DoubleWorldOptions,
  finalizeDriver,
  issueArgs,
  START_MS,
} from "./kit/index.js";
import { commandRow, effectRow, expectReconciled, reconciliationRecords } from "./helpers/reconciliation-db.js";

const fixtures: DoubleWorld[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const f of fixtures.splice(0)) f.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function setup(opts: DoubleWorldOptions = {}): DoubleWorld {
  const f = createDoubleWorld(opts);
  fixtures.push(f);
  return f;
}

/** A write that reached `unknown` through finalization with a first lookup answered `adapter_error`. */
async function unknownAfterFailedLookup(f: DoubleWorld): Promise<DispatchedCall> {
  f.double.setFaults({ adapterFault: "rejects" });
  const call = await dispatchWrite(f);
  await finalizeDriver(f, call);
  expect(effectRow(f.store, call.effectId)).toMatchObject({ status: "unknown", lookup_count: 1 });
  expect(commandRow(f.store, call.commandId).error).toMatchObject({ code: "external_effect.unknown" });
  return call;
}

describe("reconciliation sweep: backoff, bound, restart", () => {
  it("looks a still_unknown effect up again only when due, with exponential backoff, until maxLookups; then an operator must act", async () => {
    const f = setup({ backoff: { initialMs: 1_000, maxMs: 6_000, factor: 2 }, maxLookups: 6 });
    const call = await unknownAfterFailedLookup(f);
    const delays: Array<number | null> = [];
    let effect = effectRow(f.store, call.effectId);
    delays.push(effect.next_lookup_at_ms! - f.clock.now());
    while (effect.next_lookup_at_ms !== null) {
      const lookupsBefore = f.lookups.length;
      f.clock.advance(effect.next_lookup_at_ms - f.clock.now() - 1);
      expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 0 });
      expect(f.lookups).toHaveLength(lookupsBefore);
      f.clock.advance(1);
      expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 1, effectsResolved: 0 });
      expect(f.lookups).toHaveLength(lookupsBefore + 1);
      effect = effectRow(f.store, call.effectId);
      delays.push(effect.next_lookup_at_ms === null ? null : effect.next_lookup_at_ms - f.clock.now());
    }
    // retry's exponential backoff: 1000·2^(n-1) capped at 6000; the 6th lookup reaches the bound
    expect(delays).toEqual([1_000, 2_000, 4_000, 6_000, 6_000, null]);
    expect(effect).toMatchObject({ status: "unknown", lookup_count: 6, operator_attention: "lookup_bound_reached" });
    const records = reconciliationRecords(f.store, call.effectId);
    expect(records.map((r) => r.trigger)).toEqual(["finalization", "sweep", "sweep", "sweep", "sweep", "sweep"]);
    expect(records.every((r) => r.outcome === "still_unknown" && r.reason_code === "adapter_error")).toBe(true);
    expect(records.at(-1)!.next_lookup_at_ms).toBeNull();

    f.double.setFaults({ adapterFault: "none" });
    f.clock.advance(7 * 24 * 3_600_000);
    expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 0 });
    expect(f.lookups).toHaveLength(6);
  });

  it("honours an adapter's retry-after when it is later than the backoff", async () => {
    const f = setup({
      double: { faults: { answerOverride: () => ({ outcome: "still_unknown", reasonCode: "rate_limited", retryAfterMs: 45_000 }) } },
    });
    const call = await dispatchWrite(f);
    await finalizeDriver(f, call);
    expect(effectRow(f.store, call.effectId)).toMatchObject({ next_lookup_at_ms: START_MS + 45_000, operator_attention: null });
    expect(reconciliationRecords(f.store, call.effectId)[0]).toMatchObject({ outcome: "still_unknown", reason_code: "rate_limited" });
  });

  it("the schedule survives an API restart (SQLite file): the due effect is looked up by the new runtime", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mosoo-recon-"));
    dirs.push(dir);
    const dbFile = join(dir, "mosoo.db");
    const first = createDoubleWorld({ dbFile });
    const call = await unknownAfterFailedLookup(first);
    const dueAt = effectRow(first.store, call.effectId).next_lookup_at_ms!;
    first.close();

    const second = setup({ dbFile });
    await second.double.commit(call.idempotencyKey, call.args);
    expect(await second.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 0 });
    second.clock.advance(dueAt - second.clock.now());
    expect(await second.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 1, effectsResolved: 1 });
    expect(second.lookups.map((r) => r.idempotencyKey)).toEqual([call.idempotencyKey]);
    expectReconciled(second.store, call.runId, call.effectId, "succeeded");
  });

  it("a later confirmed outcome resolves an effect whose command is already terminal and lifts the fence", async () => {
    const f = setup();
    const call = await unknownAfterFailedLookup(f);
    await expect(f.runtime.runs.deleteRun(call.runId)).rejects.toThrow(UserFacingError);
    f.double.setFaults({ adapterFault: "none" });
    await commitAtProvider(f, call);
    f.clock.advance(1_000);
    expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 1, effectsResolved: 1 });
    expectReconciled(f.store, call.runId, call.effectId, "succeeded");
    expect(commandRow(f.store, call.commandId)).toMatchObject({ status: "failed", error: { code: "external_effect.unknown" } });
    await f.runtime.runs.deleteRun(call.runId);
    await expect(f.runtime.runs.getRunView(call.runId)).rejects.toThrow(/no run/);
    expect(f.store.sqlite.prepare("SELECT count(*) AS n FROM external_tool_effects").get()).toEqual({ n: 0 });
  });

  it("a lease left by a crashed reconciler blocks the sweep until it expires; then it is recorded lookup_interrupted and looked up after the backoff", async () => {
    const f = setup();
    const call = await unknownAfterFailedLookup(f);
    const dueAt = effectRow(f.store, call.effectId).next_lookup_at_ms!;
    f.store.sqlite
      .prepare("UPDATE external_tool_effects SET lease_owner = 'crashed', lease_expires_at_ms = ? WHERE id = ?")
      .run(dueAt + 5_000, call.effectId);
    f.double.setFaults({ adapterFault: "none" });
    f.clock.advance(dueAt - f.clock.now());
    expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 0 });
    expect(f.lookups).toHaveLength(1);
    f.clock.advance(5_001);
    expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 0 });
    expect(reconciliationRecords(f.store, call.effectId).at(-1)).toMatchObject({
      outcome: "still_unknown",
      reason_code: "lookup_interrupted",
    });
    f.clock.advance(effectRow(f.store, call.effectId).next_lookup_at_ms! - f.clock.now());
    expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 1, effectsResolved: 1 });
    expectReconciled(f.store, call.runId, call.effectId, "not_executed");
  });

  it.each([255, 256])(
    "a due effect is looked up behind %i older unknown effects that have no adapter",
    async (unbound) => {
      const f = setup();
      // older unknown effects on an unbound server: the baseline fence, never looked up, never resolved
      const { driver, runId } = await dispatchWrite(f, { serverId: "wiki", args: issueArgs("unbound 0") });
      for (let i = 1; i < unbound; i++) {
        await f.runtime.runs.enqueueToolCall(runId, { serverId: "wiki", toolName: "createIssue", arguments: issueArgs(`unbound ${i}`) });
        expect((await deliverAcceptClaim(f.runtime, driver)).claim.kind).toBe("execute");
      }
      await f.runtime.repair.finalize(driver.instance.id, "driver_request");
      f.clock.advance(1);
      const call = await unknownAfterFailedLookup(f);
      f.double.setFaults({ adapterFault: "none" });
      f.clock.advance(1_000);
      const report = await f.runtime.sweep.sweepOnce();
      expect(f.lookups).toHaveLength(2);
      expect(report).toMatchObject({ effectsLookedUp: 1, effectsResolved: 1 });
      expect(effectRow(f.store, call.effectId).status).toBe("not_executed");
    },
    30_000,
  ); // 256 effects through the Driver protocol: over vitest's 5 s default on a loaded 2-core machine
});

describe("reconciliation sweep: streaming", () => {
  it("one pass looks up every due effect across many pages (a page is two lease batches of the concurrency), never more than the concurrency at once", async () => {
    const f = setup({ concurrency: 8 });
    f.double.setFaults({ adapterFault: "rejects" });
    const first = await dispatchWrite(f);
    const total = 261;
    for (let i = 1; i < total; i++) {
      await f.runtime.runs.enqueueToolCall(first.runId, {
        serverId: "tracker",
        toolName: "createIssue",
        arguments: issueArgs(`streamed ${i}`),
      });
      expect((await deliverAcceptClaim(f.runtime, first.driver)).claim.kind).toBe("execute");
    }
    await finalizeDriver(f, first); // every first lookup fails: all unknown, next lookup due after the backoff
    expect(f.lookups).toHaveLength(total);
    let inFlight = 0;
    let peak = 0;
    f.double.setFaults({
      adapterFault: "none",
      answerOverride: undefined,
      lookupDelayMs: 0,
    });
    const lookup = f.adapter.lookup.bind(f.adapter);
    f.adapter.lookup = async (request, context) => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 1));
      try {
        return await lookup(request, context);
      } finally {
        inFlight -= 1;
      }
    };
    f.clock.advance(1_000);
    const report = await f.runtime.sweep.sweepOnce();
    expect(report).toMatchObject({ effectsLookedUp: total, effectsResolved: total });
    expect(peak).toBe(8);
    expect(f.store.sqlite.prepare("SELECT count(*) AS n FROM external_tool_effects WHERE status = 'unknown'").get()).toEqual({ n: 0 });
    expect(f.store.sqlite.prepare("SELECT count(*) AS n FROM external_tool_effects WHERE lease_owner IS NOT NULL").get()).toEqual({ n: 0 });
  }, 30_000); // 522 lookups and outcome transactions: over vitest's 5 s default on a 2-core machine under load
});

describe("racing reconcilers and metrics", () => {
  it("two reconcilers racing on one effect: one confirmed outcome, one superseded record, one committed receipt", async () => {
    const f = setup();
    const call = await unknownAfterFailedLookup(f);
    f.double.setFaults({ adapterFault: "none" });
    await commitAtProvider(f, call);
    f.clock.advance(1_000); // the sweep only looks up when the next lookup is due
    const results = await Promise.all([
      f.runtime.reconciler.reconcile(call.effectId, "sweep"),
      f.runtime.reconciler.reconcile(call.effectId, "operator"),
    ]);
    expect(results.map((r) => r.kind).sort()).toEqual(["confirmed_succeeded", "superseded"]);
    const records = reconciliationRecords(f.store, call.effectId).slice(1);
    expect(records.map((r) => r.outcome).sort()).toEqual(["confirmed_succeeded", "superseded"]);
    expect(records.filter((r) => r.receipt_json !== null)).toHaveLength(1);
    expectReconciled(f.store, call.runId, call.effectId, "succeeded");
    expect(effectRow(f.store, call.effectId).lookup_count).toBe(2);
    expect(f.lookups).toHaveLength(2);
  });

  it("GET /metrics counts lookups by adapter, outcome and reason code", async () => {
    const f = setup();
    const call = await unknownAfterFailedLookup(f);
    f.double.setFaults({ adapterFault: "none" });
    await commitAtProvider(f, call);
    f.clock.advance(1_000);
    await f.runtime.sweep.sweepOnce();
    await f.runtime.reconciler.reconcile(call.effectId, "operator"); // not unknown any more: no lookup, not counted

    const res = await buildHttpApp(f.runtime, { metricsPublic: true }).request("/metrics");
    expect(res.status).toBe(200);
    const samples = (await res.text())
      .split("\n")
      .filter((line) => line.startsWith("mosoo_effect_reconciliation_lookups_total{"))
      .map((line) => {
        const [, labels, value] = /^[a-z_]+\{(.*)\} (\S+)$/.exec(line)!;
        return { labels: Object.fromEntries([...labels!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]])), value: Number(value) };
      });
    expect(samples).toHaveLength(2);
    expect(samples).toEqual(
      expect.arrayContaining([
        { labels: { adapter: "provider-double", outcome: "still_unknown", reason_code: "adapter_error" }, value: 1 },
        { labels: { adapter: "provider-double", outcome: "confirmed_succeeded", reason_code: "" }, value: 1 },
      ]),
    );
  });
});
