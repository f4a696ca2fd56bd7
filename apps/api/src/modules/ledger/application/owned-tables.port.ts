/** The ports of the rows the ledger's transactions write but other modules own: runs and their events (runs), commands and Driver instances (drivers). */
import type { CommandStatus, DriverInstanceStatus, RunEventType, RunStatus } from "@mosoo/contracts";
import type { driverCommands, driverInstances, runEvents, sessionRuns } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { AttemptRow, EffectRow } from "../infrastructure/effect.repository.js";

/** A session run row (`session_runs`, owned by the runs module). Times in ms since the epoch. */
type RunRow = typeof sessionRuns.$inferSelect;
/** A run event row (`run_events`, owned by the runs module). */
type RunEventRow = typeof runEvents.$inferSelect;
/** A Driver command row (`driver_commands`, owned by the drivers module). */
export type CommandRow = typeof driverCommands.$inferSelect;
/** A Driver instance row (`driver_instances`, owned by the drivers module). Times in ms since the epoch. */
export type DriverInstanceRow = typeof driverInstances.$inferSelect;

/**
 * The runs module's rows as the ledger's transactions (a run event with an intent, a settlement, a
 * fence) and the modules beside runs (drivers, reconciliation, operator) write and read them, always
 * inside the caller's transaction `tx`. Implemented by `runs/infrastructure/run.repository.ts`.
 */
export interface RunTablesPort {
  /** Appends one event to the run's stream with the next `seq`; throws on a missing run or a second terminal event. */
  appendEvent(tx: StoreTx, runId: string, type: RunEventType, payload: Record<string, unknown>, nowMs: number): Promise<RunEventRow>;
  /**
   * Appends many events (each to its `runId`'s stream) in the order given, with the `seq`s one
   * {@link appendEvent} per event would give: one `seq` reservation per run, multi-row INSERTs. Throws as it does.
   */
  appendEvents(
    tx: StoreTx,
    events: ReadonlyArray<{ runId: string; type: RunEventType; payload: Record<string, unknown> }>,
    nowMs: number,
  ): Promise<RunEventRow[]>;
  /** {@link appendEvent}, also returning the run's `status` as seen under the write lock (PostgreSQL: the `seq` bump's row lock). */
  appendEventSeeingRun(
    tx: StoreTx,
    runId: string,
    type: RunEventType,
    payload: Record<string, unknown>,
    nowMs: number,
  ): Promise<{ event: RunEventRow; runStatus: RunStatus }>;
  /** The run with this id, or undefined. */
  findRun(tx: StoreTx, id: string): Promise<RunRow | undefined>;
  /** The Driver instance's `active` run, or undefined. */
  findActiveRunOfDriver(tx: StoreTx, driverInstanceId: string): Promise<RunRow | undefined>;
  /** Compare-and-set of a run's status from `from` to `to` at `nowMs` (ms); true when it changed. */
  transitionRun(tx: StoreTx, id: string, from: RunStatus, to: RunStatus, nowMs: number, errorJson?: string): Promise<boolean>;
}

/**
 * A new command as the enqueue writes it (`queued`, not yet delivered): every column but its `seq`, which the
 * INSERT takes from the Driver instance's counter (`last_command_seq + 1`). `traceParent`/`traceState`: absent or
 * null when the enqueue was not traced. Times in ms since the epoch.
 */
export type QueuedCommand = Pick<
  typeof driverCommands.$inferInsert,
  "id" | "driverInstanceId" | "runId" | "type" | "payloadJson" | "traceParent" | "traceState" | "createdAtMs" | "updatedAtMs"
> & { status: "queued" };

/** The Driver instance with its command, and that command's effect (undefined: none, or another instance's). */
interface CommandContext {
  driver: DriverInstanceRow | undefined;
  command: CommandRow | undefined;
  effect: EffectRow | undefined;
}

/** The Driver instance with its effect, and that effect's attempt (undefined: none, or another instance's). */
interface AttemptReportContext {
  driver: DriverInstanceRow | undefined;
  effect: EffectRow | undefined;
  attempt: AttemptRow | undefined;
}

/**
 * The drivers module's command queue (`driver_commands`) as the ledger's transactions (an intent
 * commits with its command; a settlement ends it) and the runs and operator modules reach it, inside
 * the caller's transaction `tx`. Implemented by `drivers/infrastructure/command.repository.ts`.
 */
export interface CommandTablesPort {
  /**
   * SQLite only (throws on PostgreSQL, which numbers a command in its intent's `WITH`): inserts the `queued`
   * command `row` numbered `last_command_seq + 1` of its Driver instance inside the INSERT (the counter follows
   * by the trigger of migration 0029); returns the `seq` and the instance's `status` as the statement saw it.
   * Throws on a missing instance (nothing written).
   */
  insertNumbered(tx: StoreTx, row: QueuedCommand): Promise<{ seq: number; status: DriverInstanceStatus }>;
  /**
   * SQLite only (undefined on PostgreSQL, nothing written): {@link insertNumbered} for run `runId` only when that
   * run is `active`, on the run's Driver instance, in one statement with the run's read; the `seq`, the
   * instance's id and `status`, the run's `sessionId`. Undefined, nothing written, when there is no such active run.
   */
  insertOfActiveRun(
    tx: StoreTx,
    runId: string,
    row: Omit<QueuedCommand, "driverInstanceId" | "runId">,
  ): Promise<{ seq: number; driverInstanceId: string; driverStatus: DriverInstanceStatus; sessionId: string } | undefined>;
  /** The command with this id, or undefined. */
  findById(tx: StoreTx, id: string): Promise<CommandRow | undefined>;
  /** Every command of run `runId`, oldest first. */
  listByRun(tx: StoreTx, runId: string): Promise<CommandRow[]>;
  /** Compare-and-set of a command's status from `from` to `to` at `nowMs` (ms); terminal targets set `terminal_at_ms`. True when it changed. */
  transition(
    tx: StoreTx,
    id: string,
    from: CommandStatus,
    to: CommandStatus,
    nowMs: number,
    extra: { resultJson?: string; errorJson?: string; terminal: boolean },
  ): Promise<boolean>;
  /**
   * {@link transition} of many commands to the terminal `to` at `nowMs` (ms), each a compare-and-set on its
   * own `from`, `json` written to `column`, in multi-row UPDATEs; returns the ids that changed.
   */
  transitionManyToTerminal(
    tx: StoreTx,
    to: CommandStatus,
    column: "resultJson" | "errorJson",
    items: ReadonlyArray<{ id: string; from: CommandStatus; json: string }>,
    nowMs: number,
  ): Promise<Set<string>>;
}

/**
 * What a Driver's claim or attempt report judges, read in one statement across the drivers module's
 * rows and the ledger's (the instance with its command and effect, or with its effect and attempt),
 * inside the caller's transaction `tx`. Implemented by `drivers/infrastructure/command-context.repository.ts`.
 */
export interface CommandContextTablesPort {
  /** The instance, its command `commandId` and that command's effect, in one read. */
  read(tx: StoreTx, driverInstanceId: string, commandId: string): Promise<CommandContext>;
  /** The instance, its effect `effectId` and that effect's attempt `attempt`, in one read. */
  readAttemptReport(tx: StoreTx, driverInstanceId: string, effectId: string, attempt: number): Promise<AttemptReportContext>;
}

/**
 * The drivers module's `driver_instances` as the ledger (the connection fence a claim or report
 * checks) and the runs and operator modules read them, inside the caller's transaction `tx`.
 * Implemented by `drivers/infrastructure/driver-instance.repository.ts`.
 */
export interface DriverInstanceTablesPort {
  /** The instance with this id, or undefined. */
  findById(tx: StoreTx, id: string): Promise<DriverInstanceRow | undefined>;
  /** Deletes the instance (children by ON DELETE CASCADE unless the fence trigger refuses: `effect.fence_retained`). */
  delete(tx: StoreTx, id: string): Promise<void>;
}

/** Every owned-table port, as the composition root binds them. */
export interface OwnedTables {
  runs: RunTablesPort;
  commands: CommandTablesPort;
  commandContext: CommandContextTablesPort;
  driverInstances: DriverInstanceTablesPort;
}

let bound: OwnedTables | undefined;

/**
 * Binds the owners' implementations (the stateless repository objects themselves, the same for every runtime and store);
 * called once by the composition root (`composition-root.ts`) when it loads.
 */
export function bindOwnedTables(tables: OwnedTables): void {
  bound = tables;
}

/** The bound ports. @throws Error when nothing bound them (code that skipped the composition root). */
function owned(): OwnedTables {
  if (bound === undefined) throw new Error("the owned-table ports are not bound: import composition-root.ts (it binds them)");
  return bound;
}

/** The runs module's rows ({@link RunTablesPort}). */
export function runTables(): RunTablesPort {
  return owned().runs;
}

/** The drivers module's command queue ({@link CommandTablesPort}). */
export function commandTables(): CommandTablesPort {
  return owned().commands;
}

/** The drivers module's one-read claim and report context ({@link CommandContextTablesPort}). */
export function commandContextTables(): CommandContextTablesPort {
  return owned().commandContext;
}

/** The drivers module's Driver instances ({@link DriverInstanceTablesPort}). */
export function driverInstanceTables(): DriverInstanceTablesPort {
  return owned().driverInstances;
}
