// Builds the runtime: every service on one store, with the reconciliation ports wired in when the feature is on.
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { RepeatGuardMetrics } from "./modules/runs/infrastructure/repeat-guard.metrics.js";
import { EffectReconciler } from "./modules/reconciliation/application/effect-reconciler.service.js";
import { reconciliationRecordsService } from "./modules/reconciliation/application/reconciliation-records.service.js";
import { ReconciliationSweep } from "./modules/reconciliation/application/reconciliation-sweep.service.js";
import { OperatorService } from "./modules/operator/application/operator.service.js";
import { CompensationService } from "./modules/operator/application/compensation.service.js";
import { RECONCILIATION_OFF, type ReconciliationSettings } from "./modules/reconciliation/application/reconciliation-settings.config.js";
import { ReconciliationMetrics } from "./modules/reconciliation/infrastructure/reconciliation.metrics.js";
import type { Store } from "./platform/db/store.port.js";
import { systemClock, type Clock } from "./platform/clock.js";
import { newUlid } from "@mosoo/contracts";
import type { CommandWakeups } from "./platform/wakeups/command-wakeups.port.js";
import { InProcessWakeups } from "./platform/wakeups/in-process-wakeups.js";
import { DEFAULT_WORK_CLAIM_TIMING, WorkClaimService, type WorkClaimTiming } from "./modules/drivers/application/work-claim.service.js";
import { CommandQueueService } from "./modules/drivers/application/command-queue.service.js";
import { DriverInstanceService } from "./modules/drivers/application/driver-instance.service.js";
import { EffectLedgerService } from "./modules/ledger/application/effect-ledger.service.js";
import { FinalizationRepairService } from "./modules/drivers/application/finalization-repair.service.js";
import { MaintenanceSweepService } from "./modules/drivers/application/maintenance-sweep.service.js";
import type { RuntimeContext } from "./kernel/runtime-context.js";
import { RunService } from "./modules/runs/application/run.service.js";
import { StoreBusyWatch } from "./platform/db/store-busy-watch.js";
import { bindOwnedTables } from "./modules/ledger/application/owned-tables.port.js";
import { runRepository } from "./modules/runs/infrastructure/run.repository.js";
import { commandRepository } from "./modules/drivers/infrastructure/command.repository.js";
import { commandContextRepository } from "./modules/drivers/infrastructure/command-context.repository.js";
import { driverInstanceRepository } from "./modules/drivers/infrastructure/driver-instance.repository.js";

// The rows the ledger's transactions write but the runs and drivers modules own reach the ledger (and the
// modules beside their owner) through the ledger's owned-table ports; the owners' repositories implement
// them. They are stateless (every call takes the transaction), so one binding serves every runtime and store.
bindOwnedTables({
  runs: runRepository,
  commands: commandRepository,
  commandContext: commandContextRepository,
  driverInstances: driverInstanceRepository,
});

/** Every runtime service, wired to one store. */
export interface Runtime {
  ctx: RuntimeContext;
  drivers: DriverInstanceService;
  runs: RunService;
  commands: CommandQueueService;
  ledger: EffectLedgerService;
  repair: FinalizationRepairService;
  sweep: MaintenanceSweepService;
  reconciler: EffectReconciler;
  /** The operator surface (list, show, reconcile, resolve, compensate), on only with reconciliation; HTTP exposes it only with an operator token. */
  operator: OperatorService;
  /** The prom-client registry behind `GET /metrics`. */
  metricsRegistry: Registry;
}

/**
 * Options of {@link createRuntime}: the store (any implementation of the async store port), a logger, `heartbeatTtlMs` (ms), `sendDeadlineMs`
 * (ms, the claims' send-by deadline, default 10 000; see `decideDeadlineMissed` in effect-lifecycle.machine.ts), `driverUnconnectedTtlMs`
 * (ms, default {@link DEFAULT_DRIVER_UNCONNECTED_TTL_MS}), an optional clock (tests), the
 * reconciliation settings (default: off, the baseline fence; `bindings` hold adapter handles: in
 * production only handles of the isolated adapter host, see `startApi`; tests may bind in-process
 * adapter objects) and an optional metrics registry.
 */
export interface CreateRuntimeOptions {
  store: Store;
  logger: Logger;
  heartbeatTtlMs: number;
  sendDeadlineMs?: number;
  driverUnconnectedTtlMs?: number;
  clock?: Clock;
  reconciliation?: ReconciliationSettings;
  /** The prom-client registry for `GET /metrics` (default: a new one); the host may have registered its own metrics on it. */
  metricsRegistry?: Registry;
  /** Per MCP server id, the repeat guard's window (ms; see `guardRepeat` in repeat-guard.policy.ts); default: none, off for every server. */
  repeatGuard?: ReadonlyMap<string, number>;
  /**
   * The long-poll wake-ups (default: in-process, for the embedded SQLite store's one API process); on
   * PostgreSQL the host passes a started `PgCommandWakeups` so wake-ups cross instances.
   */
  wakeups?: CommandWakeups;
  /** This API instance's id (a ULID; default a fresh one): the holder of its work claims. */
  instanceId?: string;
  /** TTL and renewal period (ms) of the work claims (default {@link DEFAULT_WORK_CLAIM_TIMING}: 30 s, renewed every 10 s). */
  workClaimTiming?: WorkClaimTiming;
}

/** How long (ms) a Driver registration that never connected is kept before the sweep purges it: 1 hour. */
const DEFAULT_DRIVER_UNCONNECTED_TTL_MS = 3_600_000;

/**
 * The composition root: the one place that knows every module (docs/ARCHITECTURE.md). It builds
 * each service on one store and wires the ports: the reconciler (reconciliation module) becomes the
 * ledger's and the drivers' `EffectReconciliationPort`, the reconciliation sweep the drivers'
 * `ReconciliationSweepPort`, both absent when reconciliation is off. Several runtimes may share one
 * store (several API instances): each has its own `instanceId`, claims a Driver's
 * repair and a sweep pass in the store (`work_claims`) and takes over a reconciliation lease only
 * once it expired; give them cross-instance `wakeups` (PostgreSQL) so a command queued through one
 * wakes a long-poll held on another.
 */
export function createRuntime(opts: CreateRuntimeOptions): Runtime {
  const clock = opts.clock ?? systemClock;
  const metricsRegistry = opts.metricsRegistry ?? new Registry();
  const storeBusy = new StoreBusyWatch(clock, { logger: opts.logger, metricsRegistry });
  // A store that can be unreachable (PostgreSQL) reports each unit of work's end: outages are logged once each and counted.
  opts.store.watchAvailability?.(storeBusy);
  const ctx: RuntimeContext = {
    store: opts.store,
    clock,
    logger: opts.logger,
    instanceId: opts.instanceId ?? newUlid(clock.nowMs()),
    notifier: opts.wakeups ?? new InProcessWakeups(),
    storeBusy,
    shutdown: new AbortController(),
    settings: {
      heartbeatTtlMs: opts.heartbeatTtlMs,
      driverUnconnectedTtlMs: opts.driverUnconnectedTtlMs ?? DEFAULT_DRIVER_UNCONNECTED_TTL_MS,
      ...(opts.sendDeadlineMs === undefined ? {} : { sendDeadlineMs: opts.sendDeadlineMs }),
    },
  };
  const settings = opts.reconciliation ?? RECONCILIATION_OFF;
  const reconciler = new EffectReconciler(ctx, settings, new ReconciliationMetrics(metricsRegistry));
  const active = settings.enabled ? reconciler : undefined;
  // Work two API instances on one store must never do at once (a Driver's repair, a sweep pass) is claimed in the store.
  const claims = new WorkClaimService(
    { instanceId: ctx.instanceId, clock, logger: opts.logger, unitOfWork: (fn) => opts.store.transaction(fn) },
    opts.workClaimTiming ?? DEFAULT_WORK_CLAIM_TIMING,
  );
  const repair = new FinalizationRepairService(ctx, claims, active, settings.concurrency, settings.leaseMs);
  return {
    ctx,
    drivers: new DriverInstanceService(ctx),
    runs: new RunService(ctx, reconciliationRecordsService, opts.repeatGuard ?? new Map(), new RepeatGuardMetrics(metricsRegistry)),
    commands: new CommandQueueService(ctx),
    ledger: new EffectLedgerService(ctx, active, settings.lookupTimeoutMs),
    repair,
    sweep: new MaintenanceSweepService(ctx, repair, claims, active ? new ReconciliationSweep(ctx, reconciler, settings) : undefined),
    reconciler,
    operator: new OperatorService(ctx, reconciler, new CompensationService(ctx, settings), settings.enabled),
    metricsRegistry,
  };
}
