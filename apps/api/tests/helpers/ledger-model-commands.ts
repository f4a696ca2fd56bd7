/**
 * Commands of the ledger model test (`fc.commands` + `fc.asyncModelRun`), split by family under
 * ledger-model/: driver-commands.ts (the Driver), provider-commands.ts (the provider, its faults,
 * the clock), reconciliation-commands.ts (finalization, sweep), operator-commands.ts,
 * crash-commands.ts (the API process dies), race-command.ts (concurrent interleavings), over the
 * shared steps.ts (step/guard/trace) and driver-actions.ts. Each command drives the real runtime as
 * a Driver, the provider, an operator or the clock would, records what it saw in the
 * {@link Model}, then {@link checkInvariants} runs on the store, the audit log and the doubles.
 * Commands that find nothing to act on are no-ops (so shrinking stays simple). This file holds the
 * weighted arbitraries over all families.
 */
import fc from "fast-check";
import type { AdapterFault } from "@mosoo/effect-reconciliation/testing";
import { SEND_DEADLINE_MS, type checkInvariants, type Model } from "./ledger-model-world.js";
import { ApiCrashCmd, type CrashOp } from "./ledger-model/crash-commands.js";
import type { ToolKind } from "./ledger-model/driver-actions.js";
import {
  ClaimCmd,
  CommandUpdateCmd,
  CrashReconnectCmd,
  DeliverCmd,
  DriverTurnCmd,
  EnqueueCmd,
  ReportCmd,
  SlowDriverTurnCmd,
} from "./ledger-model/driver-commands.js";
import { OperatorCmd } from "./ledger-model/operator-commands.js";
import { AdvanceClockCmd, ProviderExecuteCmd, SetFaultsCmd } from "./ledger-model/provider-commands.js";
import { RaceCmd, type RaceOp } from "./ledger-model/race-command.js";
import { FinalizeCmd, SweepCmd } from "./ledger-model/reconciliation-commands.js";
import type { Cmd } from "./ledger-model/steps.js";
import { TaskReportCmd, TaskStateCmd, type TaskReport } from "./ledger-model/task-commands.js";
import type { ModelTaskState } from "./ledger-model/task-provider.js";

// ---------------------------------------------------------------------------------------------
// Arbitraries

const FAULTS: AdapterFault[] = [
  "none",
  "throws",
  "rejects",
  "garbage",
  "hangs_ignoring_signal",
  "wrong_key",
  "conflicting_fingerprint",
  "oversized_receipt",
];

/**
 * The weighted command arbitraries. `raceEnqueue` lets race commands enqueue a tool call
 * concurrently with the other operations (finalization included): that is how the
 * enqueue-during-finalization bug was found (see the pinned regression in the test file).
 */
export function commandArbitraries(opts: {
  raceEnqueue: boolean;
  operator?: boolean;
  apiCrash?: boolean;
  /** Task-augmented calls (server `jobs`), task-id reports and task state changes (ledger-model/task-commands.ts). */
  tasks?: boolean;
}): Array<fc.Arbitrary<Cmd>> {
  const enqueueArb = fc
    .constantFrom<ToolKind>("bound", "bound", "bound", "bound", "unbound_server", "undeclared_tool")
    .map((k) => new EnqueueCmd(k));
  // the Driver accepts what it receives, except now and then (it crashed right after receiving)
  const deliverArb = fc.nat(5).map((n) => new DeliverCmd(n !== 0));
  const claimArb = fc.nat(7).map((p) => new ClaimCmd(p));
  const executeArb = fc
    .record({
      pick: fc.nat(7),
      delay: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }) }),
      lose: fc.boolean(),
    })
    .map((r) => new ProviderExecuteCmd(r.pick, r.delay, r.lose));
  const reportArb = fc.record({ pick: fc.nat(7), complete: fc.boolean() }).map((r) => new ReportCmd(r.pick, r.complete));
  const updateArb = fc
    .record({ pick: fc.nat(7), variant: fc.constantFrom<"honest" | "lie">("honest", "honest", "honest", "lie") })
    .map((r) => new CommandUpdateCmd(r.pick, r.variant));
  const crashArb = fc.constant(null).map(() => new CrashReconnectCmd());
  const turnArb = fc.constant(null).map(() => new DriverTurnCmd());
  // a slow Driver: the claim answer is held past any window (deadline + maxInFlight + lag), or just around the deadline
  const slowTurnArb = fc
    .record({
      hold: fc.oneof(
        fc.integer({ min: 8_000, max: SEND_DEADLINE_MS - 1 }),
        fc.integer({ min: SEND_DEADLINE_MS, max: 11_000 }),
        fc.integer({ min: 25_000, max: 70_000 }),
      ),
      heartbeat: fc.boolean(),
      sendDelay: fc.integer({ min: 0, max: 3_000 }),
      thenLost: fc.boolean(),
    })
    .map((r) => new SlowDriverTurnCmd(r.hold, r.heartbeat, r.sendDelay, r.thenLost));
  const finalizeArb = fc
    .record({ trigger: fc.constantFrom<"driver_request" | "operator">("driver_request", "operator"), same: fc.boolean() })
    .map((r) => new FinalizeCmd(r.trigger, r.same));
  const advanceArb = fc
    .record({ ms: fc.oneof(fc.integer({ min: 1, max: 2_000 }), fc.integer({ min: 2_000, max: 40_000 })), heartbeat: fc.boolean() })
    .map((r) => new AdvanceClockCmd(r.ms, r.heartbeat));
  const sweepArb = fc.constant(null).map(() => new SweepCmd());
  const faultArb = fc
    .record({
      adapterFault: fc.oneof(
        { weight: 3, arbitrary: fc.constant<AdapterFault>("none") },
        { weight: 4, arbitrary: fc.constantFrom(...FAULTS) },
      ),
      lag: fc.boolean(),
      slow: fc.nat(3).map((n) => n === 0),
    })
    .map((f) => new SetFaultsCmd(f));
  const raceArb = fc
    .record({
      s: fc.scheduler(),
      pick: fc.nat(7),
      core: fc.shuffledSubarray(
        (opts.operator
          ? ["reconcile_sweep", "reconcile_operator", "claim", "report", "sweep", "lease_expiry", "operator_resolve", "operator_lookup"]
          : ["reconcile_sweep", "reconcile_operator", "claim", "report", "sweep", "lease_expiry"]) as RaceOp[],
        { minLength: 1, maxLength: 3 },
      ),
      finalize: fc.nat(3).map((n) => n === 0),
      enqueue: fc.nat(2).map((n) => opts.raceEnqueue && n === 0),
    })
    .map(
      (r) =>
        new RaceCmd(
          r.s,
          r.pick,
          [...r.core, ...(r.finalize ? (["finalize"] as const) : []), ...(r.enqueue ? (["enqueue"] as const) : [])],
          false,
        ),
    );
  // R2: a reconciler's lookup outlives its lease, a second reconciler takes the expired lease; any
  // extra operation (a redelivery claim, a Driver report, finalization, a sweep) joins the race.
  const zombieArb = fc
    .record({
      s: fc.scheduler(),
      pick: fc.nat(7),
      first: fc.constantFrom<RaceOp>("reconcile_sweep", "reconcile_operator", "claim", "finalize"),
      second: fc.constantFrom<RaceOp>("reconcile_sweep", "reconcile_operator", "claim", "sweep"),
      extra: fc.option(fc.constantFrom<RaceOp>("report", "claim", "finalize", "sweep"), { nil: undefined }),
    })
    .map(
      (r) =>
        new RaceCmd(
          r.s,
          r.pick,
          [r.first, "lease_expiry", r.second, ...(r.extra && r.extra !== r.first && r.extra !== r.second ? [r.extra] : [])],
          true,
        ),
    );
  const weighted: Array<[number, fc.Arbitrary<Cmd>]> = [
    [2, enqueueArb],
    [3, deliverArb],
    [2, claimArb],
    [3, turnArb],
    [1, slowTurnArb],
    [3, executeArb],
    [2, reportArb],
    [2, updateArb],
    [1, crashArb],
    [1, finalizeArb],
    [2, advanceArb],
    [1, sweepArb],
    [1, faultArb],
    [2, raceArb],
    [2, zombieArb],
  ];
  if (opts.apiCrash) {
    weighted.push([
      1,
      fc
        .record({
          k: fc.integer({ min: 1, max: 3 }),
          phase: fc.constantFrom<"before_commit" | "after_commit">("before_commit", "after_commit"),
          op: fc.constantFrom<CrashOp>("none", "sweep", "finalize", "reconcile", "claim"),
          pick: fc.nat(7),
        })
        .map((r) => new ApiCrashCmd(r.k, r.phase, r.op, r.pick)),
    ]);
  }
  if (opts.operator) {
    weighted.push([
      1,
      fc
        .record({ pick: fc.nat(7), action: fc.constantFrom<"lookup" | "resolve">("lookup", "resolve") })
        .map((r) => new OperatorCmd(r.pick, r.action)),
    ]);
  }
  if (opts.tasks) {
    weighted.push(
      [2, fc.constant(null).map(() => new EnqueueCmd("task"))],
      [
        3,
        fc
          .record({ pick: fc.nat(7), variant: fc.constantFrom<TaskReport>("own", "own", "own", "other", "not_dispatched") })
          .map((r) => new TaskReportCmd(r.pick, r.variant)),
      ],
      [
        2,
        fc
          .record({
            pick: fc.nat(7),
            to: fc.constantFrom<ModelTaskState | "expire">(
              "completed",
              "completed",
              "failed_result",
              "failed_error",
              "cancelled",
              "input_required",
              "expire",
            ),
          })
          .map((r) => new TaskStateCmd(r.pick, r.to)),
      ],
    );
  }
  return weighted.flatMap(([n, arb]) => Array.from({ length: n }, () => arb));
}
