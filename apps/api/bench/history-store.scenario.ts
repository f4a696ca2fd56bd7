/**
 * Scenario 4 (SQLite): the costs that follow a store's history. The same measurements on a store with no
 * history and on one filled by {@link fillHistory} (finished effects with their runs, events, commands and
 * lookups, finalized Driver instances, one long-lived Driver with a long command history), side by side in
 * the same rounds (`history-store.measure.ts`): store open, a lifecycle on the long-lived Driver, an empty
 * delivery check (what a long-poll runs on each wake-up), the console overview's reads, an idle sweep pass
 * and recovery per outcome.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore, type SqliteStore } from "../src/platform/db/sqlite/sqlite-store.js";
import { createBenchRuntime, progress, seedEffects } from "./bench-store.harness.js";
import { fillHistory } from "./history-store.generator.js";
import { NO_HISTORY, type HistoryCounts } from "./history-store.rows.js";
import { captureSqlite, checkSqlitePlans, reportPlanCheck, type CapturedQuery, type PlanCheck } from "./history-plans.js";
import {
  fillProgress,
  HISTORY_TASKS,
  measureHistory,
  type HistoryOptions,
  type HistoryResult,
  type PreparedHistoryStore,
} from "./history-store.measure.js";

export type { HistoryOptions, HistoryResult } from "./history-store.measure.js";

/** A store file built for the scenario: the prepared store, its folder (deleted after), row counts, file size (bytes) and fill time (ms). */
interface BuiltStore {
  prepared: PreparedHistoryStore<SqliteStore>;
  dir: string;
  counts: HistoryCounts;
  fileBytes: number;
  fillMs: number;
}

/** Builds one store file (filled or not) with its long-lived Driver registered through the API, checkpointed and closed. */
async function buildStore(opts: HistoryOptions, filled: boolean): Promise<BuiltStore> {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-bench-history-"));
  const file = join(dir, "history.db");
  try {
    const store = openSqliteStore(file);
    const { driverToken } = await createBenchRuntime(store, {
      reconciliation: true,
      lookupLatencyMs: 10,
      concurrency: 64,
    }).drivers.register({ name: "long-lived" }, { kind: "enrollment" });
    const longLivedId = store.sqlite.prepare("SELECT id FROM driver_instances WHERE name = 'long-lived'").pluck().get() as string;
    const t0 = performance.now();
    const counts = filled
      ? fillHistory(
          store.sqlite,
          {
            effects: opts.effects,
            finalizedDrivers: opts.finalizedDrivers,
            longLived: { driverInstanceId: longLivedId, commands: opts.longLivedCommands },
          },
          fillProgress(opts.effects, t0),
        )
      : { ...NO_HISTORY };
    const fillMs = performance.now() - t0;
    store.sqlite.pragma("wal_checkpoint(TRUNCATE)");
    store.closeNow();
    const fileBytes = statSync(file).size;
    if (filled)
      progress(`history: filled ${JSON.stringify(counts)} in ${(fillMs / 1000).toFixed(1)} s, ${(fileBytes / 1e6).toFixed(0)} MB`);
    return {
      prepared: {
        open: async () => openSqliteStore(file),
        close: async (s) => s.closeNow(),
        driverToken,
        seedUnknown: async (s, n) => {
          seedEffects(s.sqlite, { count: n, status: "unknown" });
        },
      },
      dir,
      counts,
      fileBytes,
      fillMs,
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Runs the scenario: builds the filled store and the empty one, measures them side by side, deletes both. */
export async function runHistory(opts: HistoryOptions): Promise<HistoryResult> {
  progress(`history: filling ${opts.effects} effects`);
  const filled = await buildStore(opts, true);
  try {
    const empty = await buildStore(opts, false);
    try {
      progress("history: measuring the empty and the filled store side by side");
      let planCheck: PlanCheck | undefined;
      const sides = await measureHistory(empty.prepared, filled.prepared, opts, {
        beforeRounds: async (both) => {
          const captured = new Map<string, CapturedQuery>();
          for (const task of HISTORY_TASKS) await captureSqlite(captured, task, both.filled.fns[task]);
          await captureSqlite(captured, "recovery", () => both.filled.recover(20));
          planCheck = checkSqlitePlans(both.filled.store.sqlite, captured);
          reportPlanCheck(planCheck);
        },
      });
      return {
        longLivedCommands: opts.longLivedCommands,
        recoveryEffects: opts.recoveryEffects,
        ...sides,
        counts: filled.counts,
        fileBytes: filled.fileBytes,
        fillMs: filled.fillMs,
        planCheck: planCheck!,
      };
    } finally {
      rmSync(empty.dir, { recursive: true, force: true });
    }
  } finally {
    rmSync(filled.dir, { recursive: true, force: true });
  }
}
