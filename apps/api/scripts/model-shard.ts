/**
 * One shard of an offline ledger model run (used by `scripts/model-runs.ts`): the exploring property
 * of `tests/helpers/ledger-model-property.ts` run by `fc.check` in this process, outside vitest,
 * with no per-test timeout, progress reports, an optional wall-clock budget and a stall watchdog.
 */
import fc from "fast-check";
import { figures, removeMigratedTemplate } from "../tests/helpers/ledger-model-world.js";
import { EXPLORING_OPTIONS, figuresReport, ledgerProperty, runsSettled } from "../tests/helpers/ledger-model-property.js";
import type { ModelStoreTarget } from "../tests/helpers/ledger-model/model-store.js";

/**
 * How a shard ended:
 * - `passed`: every run held every invariant;
 * - `counterexample`: an invariant failed; `report` is fast-check's report (with the violated
 *   invariant), `path` the counterexample path to replay with `seed`, and `replayPath` the
 *   `fc.commands` replay path of the shrunk command list (from the report), when it has one;
 * - `timed_out`: the `timeLimitMs` budget ran out before all runs: no counterexample in the runs made,
 *   NOT an invariant failure;
 * - `stalled`: one run made no progress for `stallMs` (a hang, or a badly overloaded machine);
 *   `path` replays that run alone. Not an invariant failure either.
 * `runs` is the number of runs made (fast-check's count; for `stalled`, the ones started).
 */
export type ShardOutcome =
  | { kind: "passed"; runs: number; seed: number; elapsedMs: number }
  | { kind: "counterexample"; runs: number; seed: number; elapsedMs: number; path: string; replayPath: string | null; report: string }
  | { kind: "timed_out"; runs: number; seed: number; elapsedMs: number }
  | { kind: "stalled"; runs: number; seed: number; elapsedMs: number; path: string };

/**
 * Options of {@link runShard}: `runs` and `seed`; `path` replays a counterexample (or one run) only;
 * `timeLimitMs` (ms, optional) stops starting runs after it; `stallMs` (ms) is how long one run may
 * go without finishing before the shard is declared stalled; `progressEveryMs` (ms) the period of
 * `onProgress(runsStarted)`.
 */
export interface ShardOptions {
  runs: number;
  seed: number;
  path?: string | undefined;
  /** `fc.commands`' replay path of a counterexample (`replayPath="…"` in its report), with `path`. */
  replayPath?: string | undefined;
  timeLimitMs?: number | undefined;
  stallMs: number;
  progressEveryMs: number;
  onProgress: (runsStarted: number) => void;
  /** Where the worlds live (opened by the caller, `openModelTarget`); default a SQLite file per world. */
  store?: ModelStoreTarget | undefined;
}

/**
 * Runs one shard and resolves with how it ended (see {@link ShardOutcome}). Never rejects for an
 * invariant failure (that is a `counterexample`); the temporary migrated store template is removed
 * at the end.
 */
export async function runShard(opts: ShardOptions): Promise<ShardOutcome> {
  const startedAt = Date.now();
  const base = figures.runs;
  const started = () => figures.runs - base;
  let lastCount = 0;
  let lastChangeAt = startedAt;
  let stalled: ((o: ShardOutcome) => void) | undefined;
  const stall = new Promise<ShardOutcome>((resolve) => (stalled = resolve));
  const timer = setInterval(
    () => {
      const n = started();
      if (n !== lastCount) {
        lastCount = n;
        lastChangeAt = Date.now();
      }
      opts.onProgress(n);
      if (Date.now() - lastChangeAt >= opts.stallMs && n > 0) {
        // the run that started last (index n - 1) has not finished: fast-check's path for it is its index
        stalled?.({ kind: "stalled", runs: n, seed: opts.seed, elapsedMs: Date.now() - startedAt, path: String(n - 1) });
      }
    },
    Math.min(opts.progressEveryMs, opts.stallMs),
  );
  try {
    const check = fc
      .check(
        ledgerProperty({
          ...EXPLORING_OPTIONS,
          ...(opts.replayPath ? { replayPath: opts.replayPath } : {}),
          ...(opts.store ? { store: opts.store } : {}),
        }),
        {
          numRuns: opts.runs,
          seed: opts.seed,
          includeErrorInReport: true,
          ...(opts.path ? { path: opts.path, endOnFailure: true } : {}),
          ...(opts.timeLimitMs !== undefined ? { interruptAfterTimeLimit: opts.timeLimitMs, markInterruptAsFailure: false } : {}),
        },
      )
      .then(async (details): Promise<ShardOutcome> => {
        const elapsedMs = Date.now() - startedAt;
        if (details.failed) {
          const report = (await fc.asyncDefaultReportMessage(details)) ?? String(details.errorInstance);
          const replayPath = /replayPath="([^"]+)"/.exec(report)?.[1] ?? null;
          return {
            kind: "counterexample",
            runs: details.numRuns,
            seed: opts.seed,
            elapsedMs,
            path: details.counterexamplePath ?? "",
            replayPath,
            report,
          };
        }
        if (details.interrupted) {
          await runsSettled(); // the run the time limit cut off still holds its world (and, on PostgreSQL, connections)
          return { kind: "timed_out", runs: details.numRuns, seed: opts.seed, elapsedMs };
        }
        return { kind: "passed", runs: details.numRuns, seed: opts.seed, elapsedMs };
      });
    return await Promise.race([check, stall]);
  } finally {
    clearInterval(timer);
    removeMigratedTemplate();
  }
}

/** The figures the property collected in this process, as printable lines. */
export { figuresReport };
