/**
 * Crash points of GROUP COMMIT (docs/DESIGN.md §3 rule 6: several outcomes may share one
 * transaction, each whole inside it). A Driver with several executing effects is finalized; the
 * finalization repair looks them up and their outcomes (effect, receipt, result, reconciliation
 * record, command terminal state, run events) commit in ONE batch, on a FILE-backed store:
 * - a crash before the batch commits leaves none of the batch; after it, all of it; never part of
 *   one outcome; recovery (restart on the same file, the repair resumed) then settles every effect whole;
 * - a compare-and-set loser inside a batch changes nothing and records `superseded`, the others commit;
 * - a batch whose transaction fails is retried outcome by outcome, each alone: no outcome is lost,
 *   the failing one alone reports its error (and keeps its effect `unknown`).
 * Batches are formed by COUNT (`maxBatch` = the number of effects, a long window), so which timer
 * fires first never matters.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import {
  createManualClock,
  createProviderDouble,
  createProviderDoubleAdapter,
  type ProviderDouble,
} from "@mosoo/effect-reconciliation/testing";
import { openSqliteStore, type SqliteStore as Store } from "../src/platform/db/sqlite/sqlite-store.js";
import { createRuntime, type Runtime } from "../src/composition-root.js";
import type { ReconciliationSettings } from "../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { effectRepository } from "../src/modules/ledger/infrastructure/effect.repository.js";
import { CrashInjector, isSimulatedCrash } from "./helpers/crash-injector.js";
import { connectDriver, deliverAcceptClaim, issueArgs, type ConnectedDriver } from "./kit/index.js";
import { commandRow, effectRow, reconciliationRecords, runEvents } from "./helpers/reconciliation-db.js";

const SERVER = "tracker";
const TOOL = "createIssue";
/** Effects per Driver, and the batch size: the batch commits when the last outcome is queued. */
const N = 6;

/** One "API process" on the lab's file; the provider double and the clock outlive it. */
interface Lab {
  dir: string;
  file: string;
  clock: ReturnType<typeof createManualClock>;
  double: ProviderDouble;
  store: Store;
  runtime: Runtime;
  injector: CrashInjector;
  /** Called after each lookup answered (before the runtime sees the answer). */
  onAnswer: ((request: { idempotencyKey: string }) => void) | null;
  answers: number;
  /** The group commit window (ms); batches of N form by count, a lone outcome waits this long. */
  windowMs: number;
}

const labs: Lab[] = [];
afterEach(() => {
  for (const lab of labs.splice(0)) {
    try {
      lab.store.closeNow();
    } catch {
      // already closed
    }
    rmSync(lab.dir, { recursive: true, force: true });
  }
});

async function boot(lab: Omit<Lab, "store" | "runtime" | "injector"> & Partial<Lab>): Promise<Lab> {
  const store = openSqliteStore(lab.file);
  const injector = new CrashInjector();
  injector.attach(store);
  const inner = createProviderDoubleAdapter(lab.double);
  const full = lab as Lab;
  const adapter: ReconciliationAdapter = {
    declaration: inner.declaration,
    lookup: async (request, context) => {
      const answer = await inner.lookup(request, context);
      full.answers += 1;
      full.onAnswer?.(request);
      return answer;
    },
  };
  const settings: ReconciliationSettings = {
    enabled: true,
    bindings: new Map([[SERVER, adapter]]),
    lookupTimeoutMs: 5_000,
    leaseMs: 30_000,
    concurrency: N,
    backoff: { initialMs: 1_000, maxMs: 8_000, factor: 2 },
    maxLookups: 8,
    groupCommit: { maxBatch: N, windowMs: lab.windowMs },
  };
  const runtime = createRuntime({
    store,
    logger: pino({ level: "silent" }),
    heartbeatTtlMs: 3_600_000,
    clock: { nowMs: () => lab.clock.now() },
    reconciliation: settings,
  });
  await runtime.reconciler.endExpiredLeases({ startup: true });
  return Object.assign(full, { store, runtime, injector });
}

async function newLab(windowMs = 60_000): Promise<Lab> {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-group-commit-"));
  const clock = createManualClock(Date.UTC(2026, 10, 30, 12, 0, 0));
  const double = createProviderDouble({ clock, toolName: TOOL, keyFencing: { kind: "lookup_fences_key" } });
  const lab = await boot({ dir, file: join(dir, "mosoo.db"), clock, double, onAnswer: null, answers: 0, windowMs });
  labs.push(lab);
  return lab;
}

/** The process died (memory gone, file kept); a new one starts on the same file. */
async function restart(lab: Lab): Promise<void> {
  try {
    lab.store.closeNow();
  } catch {
    // already closed
  }
  lab.onAnswer = null;
  await boot(lab);
}

interface Call {
  commandId: string;
  effectId: string;
  key: string;
  committedAtProvider: boolean;
}

/** One Driver, one run, N claimed (executing) writes; the provider committed every other one. */
async function executingWrites(lab: Lab): Promise<{ driver: ConnectedDriver; runId: string; calls: Call[] }> {
  const driver = await connectDriver(lab.runtime);
  const { runId } = await lab.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
  const calls: Call[] = [];
  for (let i = 0; i < N; i++) {
    const args = issueArgs(`issue ${i}`);
    const call = await lab.runtime.runs.enqueueToolCall(runId, { serverId: SERVER, toolName: TOOL, arguments: args });
    const { claim } = await deliverAcceptClaim(lab.runtime, driver);
    expect(claim.kind).toBe("execute");
    const committedAtProvider = i % 2 === 0;
    if (committedAtProvider) expect((await lab.double.commit(call.idempotencyKey, args)).status).toBe("committed");
    calls.push({ commandId: call.commandId, effectId: call.effectId, key: call.idempotencyKey, committedAtProvider });
  }
  return { driver, runId, calls };
}

/** Whether one outcome is there (all of it) or not (none of it); throws on a part of one. */
function outcomeOf(lab: Lab, runId: string, call: Call): "settled" | "absent" {
  const effect = effectRow(lab.store, call.effectId);
  const records = reconciliationRecords(lab.store, call.effectId).filter(
    (r) => r.outcome !== "superseded" && r.reason_code !== "lookup_interrupted",
  );
  const command = commandRow(lab.store, call.commandId);
  const reconciledEvents = runEvents(lab.store, runId, "effect.reconciled").filter((e) => e.payload["effectId"] === call.effectId);
  const commandEvents = runEvents(lab.store, runId).filter(
    (e) => (e.type === "tool_call.completed" || e.type === "tool_call.failed") && e.payload["commandId"] === call.commandId,
  );
  const parts = [
    effect.status !== "unknown",
    records.length === 1,
    command.status === "completed" || command.status === "failed",
    reconciledEvents.length === 1,
    commandEvents.length === 1,
  ];
  if (parts.every(Boolean)) {
    expect(effect.status).toBe(call.committedAtProvider ? "succeeded" : "not_executed");
    expect(command.status).toBe(call.committedAtProvider ? "completed" : "failed");
    return "settled";
  }
  if (parts.every((p) => !p)) {
    expect(effect.status).toBe("unknown");
    return "absent";
  }
  throw new Error(`part of one outcome for effect ${call.effectId}: ${JSON.stringify(parts)}`);
}

describe("group commit: a crash inside a batch leaves all or none of the batch (crash-point matrix)", () => {
  it.each(["before_commit", "after_commit"] as const)(
    "crash %s of the batch's transaction, then the repair resumes after a restart",
    async (phase) => {
      const lab = await newLab();
      const { driver, runId, calls } = await executingWrites(lab);
      // the next durable write after the last lookup answered is the batch of all N outcomes
      lab.onAnswer = () => {
        if (lab.answers === N) lab.injector.arm({ atWrite: lab.injector.writes + 1, phase });
      };
      const finalized = await lab.runtime.repair.finalize(driver.instance.id, "operator").then(
        () => null,
        (err: unknown) => err,
      );
      expect(isSimulatedCrash(finalized)).toBe(true);
      await restart(lab);
      const seen = calls.map((c) => outcomeOf(lab, runId, c));
      expect(new Set(seen)).toEqual(new Set([phase === "before_commit" ? "absent" : "settled"]));
      // recovery: the instance is still `finalizing`; once the dead process's repair claim and
      // reconciliation leases expired (30 s: nothing releases them at startup, docs/DESIGN.md §11), the
      // repair runs again and settles everything whole
      lab.clock.advance(30_001);
      await lab.runtime.repair.finalize(driver.instance.id, "operator");
      expect(calls.map((c) => outcomeOf(lab, runId, c))).toEqual(calls.map(() => "settled"));
      expect(runEvents(lab.store, runId, "run.failed")).toHaveLength(1);
    },
  );
});

describe("group commit: one batch, each outcome whole", () => {
  it("commits all N outcomes of a repair in one transaction", async () => {
    const lab = await newLab();
    const { driver, runId, calls } = await executingWrites(lab);
    const commits: number[] = [];
    let writes = 0;
    lab.store.observeDurableWrites({ beforeCommit: () => void (writes += 1), afterCommit: () => void commits.push(lab.answers) });
    const summary = await lab.runtime.repair.finalize(driver.instance.id, "operator");
    expect(calls.map((c) => outcomeOf(lab, runId, c))).toEqual(calls.map(() => "settled"));
    // every command counted once: half completed (the provider committed), half failed (not executed)
    expect(summary).toMatchObject({
      effectsFenced: N,
      effectsReconciled: N,
      commandsCompleted: N / 2,
      commandsFailed: N / 2,
      runsFailed: 1,
    });
    // repair claim, fence+settle, lease batches, ONE outcome batch (after all N answers), run failed, claim released
    expect(commits.filter((answersSoFar) => answersSoFar === N)).toHaveLength(3);
    expect(writes).toBe(commits.length);
  });

  it("a compare-and-set loser inside a batch records superseded and changes nothing; the others commit", async () => {
    // window 0: the repair looks a lost effect up once more, alone, after the batch
    const lab = await newLab(0);
    const { driver, runId, calls } = await executingWrites(lab);
    const loser = calls[1]!;
    // While the batch fills, another writer changes the loser's row (a concurrent reconciler or
    // operator would; here its version moves on): its outcome's compare-and-set must lose.
    lab.onAnswer = (request) => {
      if (request.idempotencyKey === loser.key)
        lab.store.sqlite.prepare("UPDATE external_tool_effects SET version = version + 1 WHERE id = ?").run(loser.effectId);
    };
    const before = () => effectRow(lab.store, loser.effectId);
    const summary = await lab.runtime.repair.finalize(driver.instance.id, "operator");
    expect(summary.commandsCompleted + summary.commandsFailed).toBe(N);
    for (const c of calls) if (c !== loser) expect(outcomeOf(lab, runId, c)).toBe("settled");
    const after = before();
    expect(after.status).toBe("unknown");
    expect(after.resolution).toBeNull();
    const records = reconciliationRecords(lab.store, loser.effectId).map((r) => [r.outcome, r.reason_code]);
    expect(records.length).toBeGreaterThanOrEqual(1);
    expect(new Set(records.map((r) => JSON.stringify(r)))).toEqual(new Set([JSON.stringify(["superseded", "cas_lost"])]));
    expect(runEvents(lab.store, runId, "effect.reconciled").filter((e) => e.payload["effectId"] === loser.effectId)).toEqual([]);
    // its command still ends (failed external_effect.unknown, DESIGN §3 rule 14), as for any lost race
    expect(commandRow(lab.store, loser.commandId).error?.code).toBe("external_effect.unknown");
  });

  it("a batch whose transaction fails is retried alone, outcome by outcome: only the failing one is lost to its own error", async () => {
    const lab = await newLab();
    const { runId, calls } = await executingWrites(lab);
    // fence every effect (no repair): unknown effects for the reconciler
    for (const c of calls)
      lab.store.sqlite.prepare("UPDATE external_tool_effects SET status = 'unknown', version = version + 1 WHERE id = ?").run(c.effectId);
    const failing = calls[2]!;
    const commits: number[] = [];
    lab.store.observeDurableWrites({ beforeCommit: () => undefined, afterCommit: () => void commits.push(lab.answers) });
    const errors: Array<[string | undefined, string]> = [];
    const results: Array<[string | undefined, string]> = [];
    const rows = [];
    for (const c of calls) rows.push((await lab.store.read((tx) => effectRepository.findById(tx, c.effectId)))!);
    const source = rows[Symbol.iterator]();
    await lab.runtime.reconciler.reconcileMany(source, {
      trigger: "sweep",
      concurrency: N,
      settleCommand: true,
      alsoWrite: async (_tx, effect) => {
        if (effect.id === failing.effectId) throw new Error("settle failed for this outcome");
      },
      onResult: (result, effectId) => void results.push([effectId, result.kind]),
      onError: (err, effectId) => void errors.push([effectId, err instanceof Error ? err.message : String(err)]),
    });
    expect(errors).toEqual([[failing.effectId, "settle failed for this outcome"]]);
    expect(results.map(([id]) => id).sort()).toEqual(
      calls
        .filter((c) => c !== failing)
        .map((c) => c.effectId)
        .sort(),
    );
    for (const c of calls) {
      const effect = effectRow(lab.store, c.effectId);
      if (c === failing) {
        expect(effect).toMatchObject({ status: "unknown", lease_owner: null, lookup_count: 0 });
        expect(reconciliationRecords(lab.store, c.effectId)).toEqual([]);
      } else {
        expect(effect.status).toBe(c.committedAtProvider ? "succeeded" : "not_executed");
        expect(reconciliationRecords(lab.store, c.effectId)).toHaveLength(1);
      }
    }
    expect(runEvents(lab.store, runId, "effect.reconciled")).toHaveLength(N - 1);
    // after every answer: the batch rolled back (no commit), then each outcome alone: N - 1 commits, and the
    // failed outcome's lease given back (its own store transaction: every write goes through the store port now)
    expect(commits.filter((answersSoFar) => answersSoFar === N)).toHaveLength(N - 1 + 1);
  });
});
