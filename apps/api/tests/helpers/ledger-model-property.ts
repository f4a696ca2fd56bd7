/**
 * The ledger model property (docs/DESIGN.md §3, §5, §6), shared by the vitest file
 * `tests/ledger-model.property.test.ts` (1,000 runs on SQLite and 80 on the real PostgreSQL server in
 * `npm test`, plus the pinned regressions)
 * and the offline runner `scripts/model-runs.ts` (`npm run verify:model`: any number of runs,
 * no per-test timeout, progress, shards). No vitest import here, so it runs in a plain Node process.
 *
 * A real runtime on a file-backed SQLite store (API crashes reopen it), or on PGlite or a real
 * PostgreSQL server (`LedgerPropertyOptions.store`), the provider double bound as `tracker`, a model Driver, provider, operator and clock driven by `fc.commands` +
 * `fc.asyncModelRun`; every invariant is checked after every command (see ledger-model-world.ts and
 * ledger-model-commands.ts), then quiescence checks I2/I10. A failure throws the violated invariant.
 */
import fc from "fast-check";
import { commandArbitraries } from "./ledger-model-commands.js";
import { createWorld, figures, newModel, quiesce, type Profile } from "./ledger-model-world.js";
import type { ModelStoreTarget } from "./ledger-model/model-store.js";

/** The provider profiles the property draws from: a provider whose lookup fences the key, and one with a max in-flight time. */
const profileArb: fc.Arbitrary<Profile> = fc.constantFrom<Profile>(
  { fencing: "lookup_fences_key" },
  { fencing: "max_in_flight", maxInFlightMs: 10_000, lagMs: 3_000, maxDelayMs: 3_000 },
);

/**
 * `raceEnqueue`: race commands may enqueue a tool call concurrently (BUG 1 of the property test);
 * `finalizationSettlesCommand`: check DESIGN §3 rule 6 for finalization confirmations (BUG 2).
 */
export interface LedgerPropertyOptions {
  raceEnqueue: boolean;
  finalizationSettlesCommand: boolean;
  /** Operator lookups and honest manual resolutions (helpers/operator-actions.ts), also inside races. */
  operator: boolean;
  /** API processes that die at a durable write (ApiCrashCmd) and restart on the same file. */
  apiCrash?: boolean;
  /** Task-augmented calls looked up by their task handle (ledger-model/task-commands.ts); off in the pinned regressions, whose paths predate them. */
  tasks?: boolean;
  /** fast-check's `replayPath` of a counterexample (printed next to it), to replay it exactly. */
  replayPath?: string;
  /** Where the worlds live (helpers/ledger-model/model-store.ts `openModelTarget`); default a SQLite file per world. */
  store?: ModelStoreTarget;
}

/** The exploring configuration: every command kind, races, operator actions and API crashes. */
export const EXPLORING_OPTIONS: LedgerPropertyOptions = {
  raceEnqueue: true,
  finalizationSettlesCommand: true,
  operator: true,
  apiCrash: true,
  tasks: true,
};

/** The run in progress (its world, commands, quiescence and close), or a settled promise. */
let running: Promise<unknown> = Promise.resolve();

/**
 * Resolves once the run in progress (if any) has ended, its world closed; never rejects. A time limit
 * (`interruptAfterTimeLimit`) ends `fc.check` without waiting for that run: wait for it before
 * closing the store target the worlds live on.
 */
export function runsSettled(): Promise<void> {
  return running.then(
    () => undefined,
    () => undefined,
  );
}

/** The async property (one run = one world, a command sequence, then quiescence). Counts runs in `figures.runs`. */
export function ledgerProperty(opts: LedgerPropertyOptions) {
  return fc.asyncProperty(
    profileArb,
    fc.commands(
      commandArbitraries({
        raceEnqueue: opts.raceEnqueue,
        operator: opts.operator,
        apiCrash: opts.apiCrash ?? false,
        tasks: opts.tasks ?? false,
      }),
      {
        maxCommands: 50,
        size: "max",
        ...(opts.replayPath ? { replayPath: opts.replayPath } : {}),
      },
    ),
    (profile, cmds) => {
      const run = (async () => {
        const world = await createWorld(profile, { finalizationSettlesCommand: opts.finalizationSettlesCommand }, opts.store);
        const model = newModel();
        try {
          figures.runs += 1;
          await fc.asyncModelRun(() => ({ model, real: world }), cmds);
          await quiesce(world, model);
          figures.providerWrites +=
            world.double.totalWriteCount() + world.unboundProvider.totalWriteCount() + world.tasks.double.totalWriteCount();
        } finally {
          await world.close();
        }
      })();
      running = run;
      return run;
    },
  );
}

/** The figures the property collected (runs incl. shrinking and replays, commands, claims, final effects…), as printable lines. */
export function figuresReport(): string {
  const fmt = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k}=${v}`)
      .join(", ");
  return [
    `ledger model: ${figures.runs} runs (incl. shrinking/replays), ${figures.transitionsChecked} row changes audited, ${figures.providerWrites} provider writes, ${figures.lateCommitProbes} late-commit probes, ${figures.raceOps} race ops, ${figures.apiRestarts} API restarts (${figures.apiCrashes} at a durable write)`,
    `  commands: ${fmt(figures.commands)}`,
    `  claims: ${fmt(figures.claims)}`,
    `  final effects: ${fmt(figures.effects)}`,
    `  reconciliation records: ${fmt(figures.records)}`,
    `  typed refusals: ${fmt(figures.runtimeErrors)}`,
    `  task-id reports: ${fmt(figures.taskReports)}`,
    `  task-handle lookups (task state→outcome): ${fmt(figures.taskRecords)}`,
  ].join("\n");
}
