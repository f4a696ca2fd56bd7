/**
 * GET run view reads a run in a fixed number of statements, whatever its number of tool calls: the
 * attempts and the reconciliation records of the whole run are each read once and grouped by
 * effect, and the view is the one the per-effect reads gave (same effects, attempts and records, in
 * the same order). Statements are counted as the bench counts them: every `run`/`get`/`all`/`iterate`
 * of better-sqlite3's statements, BEGIN and COMMIT included.
 */
import type Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { RunView } from "../src/modules/runs/application/run-view.query.js";
import { effectRepository } from "../src/modules/ledger/infrastructure/effect.repository.js";
import { reconciliationRecordsService } from "../src/modules/reconciliation/application/reconciliation-records.service.js";
import { connectDriver, createDoubleWorld, deliverAcceptClaim, type DoubleWorld, issueArgs, openDoubleWorld } from "./kit/index.js";

const worlds: DoubleWorld[] = [];
afterEach(() => {
  for (const w of worlds.splice(0)) w.close();
});

/** Runs `work` while counting the statements run on any better-sqlite3 connection of this process; the prototype is restored after. */
async function countStatements(sqlite: Database.Database, work: () => Promise<unknown>): Promise<number> {
  const proto = Object.getPrototypeOf(sqlite.prepare("SELECT 1")) as Record<string, (...args: unknown[]) => unknown>;
  const methods = ["run", "get", "all", "iterate"] as const;
  const originals = methods.map((m) => proto[m]!);
  let count = 0;
  methods.forEach((m, i) => {
    const original = originals[i]!;
    proto[m] = function counted(this: unknown, ...args: unknown[]) {
      count += 1;
      return original.apply(this, args);
    };
  });
  try {
    await work();
  } finally {
    methods.forEach((m, i) => (proto[m] = originals[i]!));
  }
  return count;
}

/**
 * A run with `toolCalls` writes, each claimed (attempt 1), then left unknown by its Driver's loss and
 * looked up twice (the adapter fails both times): two reconciliation records per effect, the second
 * ones written after every first one (records of different effects interleave by id).
 */
async function runWithToolCalls(
  f: Pick<DoubleWorld, "runtime" | "clock" | "double">,
  toolCalls: number,
): Promise<{ runId: string; effectIds: string[] }> {
  const driver = await connectDriver(f.runtime, `driver-${toolCalls}`);
  const { runId } = await f.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
  const effectIds: string[] = [];
  for (let i = 0; i < toolCalls; i++) {
    const call = await f.runtime.runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: issueArgs(`issue ${i}`),
    });
    expect((await deliverAcceptClaim(f.runtime, driver)).claim).toMatchObject({ kind: "execute", effectId: call.effectId });
    effectIds.push(call.effectId);
  }
  f.double.setFaults({ adapterFault: "rejects" });
  await f.runtime.repair.finalize(driver.instance.id, "driver_request");
  f.clock.advance(60_000);
  expect(await f.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: toolCalls });
  return { runId, effectIds };
}

/**
 * `view`'s effects are `effectIds`, each with the attempts and records the per-effect reads answer,
 * in the same order (one attempt and two records each, see {@link runWithToolCalls}).
 */
async function expectPerEffectReads(f: { store: Pick<DoubleWorld["store"], "read"> }, view: RunView, effectIds: string[]): Promise<void> {
  expect(view.effects.map((e) => e.id)).toEqual(effectIds);
  const perEffect = await f.store.read(async (tx) =>
    Promise.all(
      effectIds.map(async (id) => ({
        attempts: (await effectRepository.listAttempts(tx, id)).map((a) => ({
          attempt: a.attempt,
          status: a.status,
          startedAtMs: a.startedAtMs,
        })),
        records: (await reconciliationRecordsService.listRecords(tx, id)).map((r) => r.id),
      })),
    ),
  );
  expect(
    view.effects.map((e) => ({
      attempts: e.attempts.map(({ attempt, status, startedAtMs }) => ({ attempt, status, startedAtMs })),
      records: e.reconciliations.map((r) => r.id),
    })),
  ).toEqual(perEffect);
  expect(perEffect.every((p) => p.attempts.length === 1 && p.records.length === 2)).toBe(true);
}

describe("run view: reads independent of the number of tool calls", () => {
  it("a run of 1 tool call and a run of 12 cost the same number of statements, and each view matches the per-effect reads", async () => {
    const runs = [];
    for (const toolCalls of [1, 12]) {
      const f = createDoubleWorld();
      worlds.push(f);
      runs.push({ f, ...(await runWithToolCalls(f, toolCalls)) });
    }

    const costs: number[] = [];
    for (const { f, runId, effectIds } of runs) {
      let view!: RunView;
      costs.push(await countStatements(f.store.sqlite, async () => (view = await f.runtime.runs.getRunView(runId))));
      await expectPerEffectReads(f, view, effectIds);
    }
    expect(costs[1]).toBe(costs[0]);
  });

  it("on PostgreSQL (PGlite) the run-wide reads answer the same view as the per-effect reads", async () => {
    const f = await openDoubleWorld({ store: "pglite" });
    try {
      const { runId, effectIds } = await runWithToolCalls(f, 5);
      await expectPerEffectReads(f, await f.runtime.runs.getRunView(runId), effectIds);
    } finally {
      await f.close();
    }
  }, 60_000);
});
