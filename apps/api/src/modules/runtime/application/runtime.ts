import type { Logger } from "pino";
import type { Db } from "../../../platform/db/database.js";
import { systemClock, type Clock } from "../../../platform/clock.js";
import { CommandNotifier } from "../infrastructure/command-notifier.js";
import { CommandQueueService } from "./command-queue.service.js";
import { DriverInstanceService } from "./driver-instance.service.js";
import { EffectLedgerService } from "./effect-ledger.service.js";
import { FinalizationRepairService } from "./finalization-repair.service.js";
import { MaintenanceSweepService } from "./maintenance-sweep.service.js";
import type { RuntimeContext } from "./runtime-context.js";
import { RunService } from "./run.service.js";

/** Every runtime service, wired to one store. */
export interface Runtime {
  ctx: RuntimeContext;
  drivers: DriverInstanceService;
  runs: RunService;
  commands: CommandQueueService;
  ledger: EffectLedgerService;
  repair: FinalizationRepairService;
  sweep: MaintenanceSweepService;
}

/** Options of {@link createRuntime}: the store, a logger, `heartbeatTtlMs` (ms), and an optional clock (tests). */
export interface CreateRuntimeOptions {
  db: Db;
  logger: Logger;
  heartbeatTtlMs: number;
  clock?: Clock;
}

/** Wires the runtime services (the composition root of the runtime module). */
export function createRuntime(opts: CreateRuntimeOptions): Runtime {
  const ctx: RuntimeContext = {
    db: opts.db,
    clock: opts.clock ?? systemClock,
    logger: opts.logger,
    notifier: new CommandNotifier(),
    settings: { heartbeatTtlMs: opts.heartbeatTtlMs },
  };
  const repair = new FinalizationRepairService(ctx);
  return {
    ctx,
    drivers: new DriverInstanceService(ctx),
    runs: new RunService(ctx),
    commands: new CommandQueueService(ctx),
    ledger: new EffectLedgerService(ctx),
    repair,
    sweep: new MaintenanceSweepService(ctx, repair),
  };
}
