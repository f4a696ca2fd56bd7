/**
 * The system under test of `ledger-model.property.test.ts`: a real runtime (reconciliation ON) on a
 * file-backed SQLite store (an API restart reopens it; the default), or on PGlite or a real PostgreSQL
 * server (helpers/ledger-model/model-store.ts: an API restart opens a new store on the same database), the provider double bound as server `tracker` (tool `createIssue`), a second
 * provider double for writes no adapter may look up, one manual clock for everything, and a model
 * Driver. Test-only audit triggers log every status change of effects and commands, so each single
 * transition (also the intermediate ones inside one service call) is checked, not only end states.
 */
import type { EffectDbRow } from "./reconciliation-db.js";
import { EFFECT_STEPS, SETTLED_EFFECT, TERMINAL_COMMAND } from "./lifecycle-oracle.js";
import { type EffectClaim, type McpToolResult } from "@mosoo/contracts";
import type { LookupRequest, ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import {
  createProviderDouble,
  createProviderDoubleAdapter,
  type AdapterFault,
  type ProviderDouble,
  type ProviderWriteResult,
} from "@mosoo/effect-reconciliation/testing";
import { CrashInjector } from "./crash-injector.js";
import { checkTurnAccounts } from "./turn-account-check.js";
import {
  START_MS,
  buildRuntime,
  copyMigratedStoreFile,
  createManualClock,
  createTestWorld,
  type ManualClock,
  type ReconciliationSettings,
  type Runtime,
  type Store,
} from "../kit/index.js";
import type { DriverInstanceRow } from "../../src/modules/drivers/infrastructure/driver-instance.repository.js";
import type { Store as PortStore } from "../../src/platform/db/store.port.js";
import {
  clockStampedStore,
  closePgWorldStore,
  openPgWorldStore,
  pgRows,
  sqliteRows,
  type ModelRows,
  type ModelStoreTarget,
} from "./ledger-model/model-store.js";
import { TASK_SERVER, createTaskWorld, type TaskWorld } from "./ledger-model/task-provider.js";
import { checkTaskEffect, checkTaskQuiescence, isTaskRecordOfEffect } from "./ledger-model/task-invariants.js";

export const BOUND_SERVER = "tracker";
export const WRITE_TOOL = "createIssue";
export { START_MS };
/** Real-time bound of one lookup (ms): a hanging adapter costs this much wall time. */
const LOOKUP_TIMEOUT_MS = 50;
/**
 * The same bound on a PostgreSQL target (ms): there the adapter wrapper first reads the effect row
 * (one unit of work on the server, a few ms, far more on a loaded machine) inside the lookup's time, and
 * a read slower than the bound would turn an adapter's own answer (e.g. `adapter_error`) into
 * `lookup_timeout`, a false counterexample. A hanging adapter costs this much wall time there.
 */
const PG_LOOKUP_TIMEOUT_MS = 250;
/**
 * The bound of a lookup of an effect of the task provider (ms, real time): the real `mcp-tasks` reconciler
 * talks MCP over loopback HTTP (connect, `tasks/get`, `tasks/result`: 40–150 ms measured at a load average
 * of 9), so the in-process double's bound would turn most answers into `lookup_timeout`. That provider
 * never hangs, so the longer bound costs no wall time.
 */
const TASK_LOOKUP_TIMEOUT_MS = 2_000;
export const LEASE_MS = 30_000;
const HEARTBEAT_TTL_MS = 60_000;
const MAX_LOOKUPS = 8;
/** Send-by deadline of execute claims in the model (ms; docs/DESIGN.md §3 rule 12). */
export const SEND_DEADLINE_MS = 10_000;

/**
 * The provider's capability profile (research/reliability.md "P2": an authoritative lookup by key).
 * - `lookup_fences_key`: a "not found" lookup fences the key. Lookup lag is NOT honest here (a
 *   lagging read would fence a committed key and lie), so it is never switched on.
 * - `max_in_flight`: a request can commit and become visible (read lag included) for at most
 *   `maxInFlightMs` after it was sent: network delay + lookup lag <= maxInFlightMs. The model Driver
 *   sends only within the claim's send-by deadline (docs/DESIGN.md §3 rule 12, measured from when it sent
 *   the claim request), so nothing becomes visible after claim + sendWithinMs + maxInFlightMs.
 */
export type Profile =
  { fencing: "lookup_fences_key" } | { fencing: "max_in_flight"; maxInFlightMs: number; lagMs: number; maxDelayMs: number };

/** Adapter faults that still answer honestly (the double's knobs), versus lying/broken adapters. */
export type FaultSetting = { adapterFault: AdapterFault; lag: boolean; slow: boolean };

/** One tool call the model enqueued. */
export interface CallRec {
  idx: number;
  runId: string;
  commandId: string;
  effectId: string;
  key: string;
  driverInstanceId: string;
  serverId: string;
  toolName: string;
  requestId: string;
  args: Record<string, unknown>;
  /** `tracker`/`createIssue`: the adapter may look it up. */
  bound: boolean;
  /** `jobs`/`createIssue`: sent as an MCP task, looked up by its task handle (ledger-model/task-provider.ts). */
  task: boolean;
}

/** What happened to one provider send of the model Driver. */
type SendState =
  | { kind: "not_sent" }
  /** The send-by deadline passed before the Driver sent: it never sends, it reports (rule 12). */
  | { kind: "deadline_missed" }
  | { kind: "pending" }
  | { kind: "answered"; write: ProviderWriteResult }
  | { kind: "lost" }
  /** A task-augmented call: the provider answered a task id at once (ledger-model/task-provider.ts). */
  | { kind: "task"; taskId: string };

/** One claim answer the model Driver received. */
export interface ClaimRec {
  idx: number;
  callIdx: number;
  instance: DriverInstanceRow;
  connectionId: string;
  claim: EffectClaim;
  /** When the Driver SENT the claim request (ms): its send-by deadline counts from here (a slow answer arrives later). */
  atMs: number;
  send: SendState;
  /** The effect completion the Driver got `applied` for this claim. */
  completedResult: McpToolResult | null;
}

/** A Driver process: its registration, its current connection and what it received on it. */
export interface DriverRec {
  instance: DriverInstanceRow;
  token: string;
  connectionId: string;
  /** commandIds delivered on `connectionId`, in order. */
  inbox: string[];
}

/**
 * The model: what the test Driver did and saw, what the provider said it committed per key, and
 * what the ledger said (last observed status/version per effect).
 */
export interface Model {
  calls: CallRec[];
  claims: ClaimRec[];
  /** Provider sends the model Driver performed, per idempotency key. */
  sends: Map<string, number>;
  /** `execute` claims handed out, per effect. */
  executeClaims: Map<string, number>;
  /** operationId the provider answered `committed` with, per key (when the answer was not lost). */
  committed: Map<string, string>;
  /** Last observed ledger state per effect. */
  ledger: Map<string, { status: string; version: number }>;
  /** Confirmed reconciliation records already seen (ids). */
  seenConfirmed: Set<string>;
  /** Records of any outcome already seen (ids). */
  seenRecords: Set<string>;
  /** not_executed effects whose late commit was already tried. */
  probed: Set<string>;
  fault: FaultSetting;
  /** The task id the ledger took first for an effect (set once: any later id is refused), per effect. */
  taskIds: Map<string, string>;
  /** When (model clock, ms) the ledger accepted each effect's task id. */
  taskIdAtMs: Map<string, number>;
  /** Reconciliation records of task effects already judged (ids). */
  seenTaskRecords: Set<string>;
}

export function newModel(): Model {
  return {
    calls: [],
    claims: [],
    sends: new Map(),
    executeClaims: new Map(),
    committed: new Map(),
    ledger: new Map(),
    seenConfirmed: new Set(),
    seenRecords: new Set(),
    probed: new Set(),
    fault: { adapterFault: "none", lag: false, slow: false },
    taskIds: new Map(),
    taskIdAtMs: new Map(),
    seenTaskRecords: new Set(),
  };
}

/** Aggregated figures over all runs (printed by the test). */
export const figures = {
  runs: 0,
  commands: new Map<string, number>(),
  runtimeErrors: new Map<string, number>(),
  effects: new Map<string, number>(),
  records: new Map<string, number>(),
  claims: new Map<string, number>(),
  providerWrites: 0,
  lateCommitProbes: 0,
  raceOps: 0,
  transitionsChecked: 0,
  apiRestarts: 0,
  apiCrashes: 0,
  /** Task-handle lookups judged, by the task's state at the lookup and the outcome. */
  taskRecords: new Map<string, number>(),
  /** Task-id reports made, by variant and answer. */
  taskReports: new Map<string, number>(),
};
export function bump(map: Map<string, number>, key: string, by = 1): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

export interface World {
  profile: Profile;
  /** The current "API process"'s store, raw (on PostgreSQL the runtime gets a clock-stamping wrapper of it). */
  store: PortStore;
  runtime: Runtime;
  clock: ManualClock;
  double: ProviderDouble;
  /** Provider of writes on unbound servers / undeclared tools: nothing may ever look them up. */
  unboundProvider: ProviderDouble;
  /** The task provider bound as `jobs` (the real `mcp-tasks` reconciler) and this world's tasks. */
  tasks: TaskWorld;
  /** Effects of task-augmented calls (their lookups get {@link TASK_LOOKUP_TIMEOUT_MS}). */
  taskEffects: Set<string>;
  settings: ReconciliationSettings;
  lookups: Array<{ request: LookupRequest; effectStatus: string | undefined; leaseOwner: string | null | undefined }>;
  /** When set (race commands), every adapter lookup, and every reconciler between its lease and its adapter call, first waits for this gate (a scheduler task). */
  gate: ((label: string) => Promise<void>) | null;
  driver: DriverRec | null;
  runId: string | null;
  /** Problems found inside callbacks (adapter wrapper, provider settlements); thrown by the next check. */
  violations: string[];
  /** Human-readable trace of the run (printed with a violation). */
  trace: string[];
  auditCursor: { effects: number; commands: number };
  checks: CheckOptions;
  /** Counts durable writes of the current store and crashes at a planned one (ApiCrashCmd). */
  injector: CrashInjector;
  /** Raw SQL reads of the checks on the current store (helpers/ledger-model/model-store.ts). */
  rows: ModelRows;
  /** The API process died: close the store, open the same file (database) in a new runtime (expired leases ended). */
  restart(): Promise<void>;
  /** Ends the world (its SQLite file removed; a PostgreSQL target stays for the next world). */
  close(): Promise<void>;
}

/**
 * Checks that can be switched off while a known src bug is pinned by a regression test (so the
 * exploring property keeps guarding everything else). Switch them back on once the bug is fixed.
 */
export interface CheckOptions {
  /** DESIGN §3 rule 6 / §6.2: a finalization confirmation commits with the command's matching terminal state. */
  finalizationSettlesCommand: boolean;
}

/**
 * A new world on `target` (default: a SQLite file of its own; see helpers/ledger-model/model-store.ts
 * for PGlite and the real PostgreSQL server, which are emptied first). Call {@link World.close} after.
 */
export async function createWorld(
  profile: Profile,
  checks: CheckOptions = { finalizationSettlesCommand: true },
  target: ModelStoreTarget = { kind: "sqlite" },
): Promise<World> {
  const clock = createManualClock(START_MS);
  const keyFencing =
    profile.fencing === "lookup_fences_key"
      ? ({ kind: "lookup_fences_key" } as const)
      : ({ kind: "max_in_flight", maxInFlightMs: profile.maxInFlightMs } as const);
  const double = createProviderDouble({ clock, toolName: WRITE_TOOL, keyFencing });
  const unboundProvider = createProviderDouble({ clock, toolName: "sendEmail" });
  const inner = createProviderDoubleAdapter(double);
  const tasks = await createTaskWorld(clock);
  const world = {} as World;
  const LEASE_ROW = "SELECT status, resolution, lease_owner FROM external_tool_effects WHERE id = ?";
  type LeaseRow = { status: string; resolution: string | null; lease_owner: string | null } | undefined;
  /**
   * Settled by the Driver's evidence (DESIGN §3 rules 12, 13): it settles the effect whoever holds the
   * lease, so it may land between a reconciler's lease and its adapter call (DESIGN §7); the provider
   * has already answered for that key, and the lookup's outcome loses its compare-and-set.
   */
  const EVIDENCE = new Set(["reported_late", "deadline_missed"]);
  // The resolutions a retention canary may carry: successes the provider itself showed (docs/DESIGN.md §4).
  const CANARY_RESOLUTIONS = new Set(["provider_result", "reconciled", "reported_late"]);
  const wrap = (inner: ReconciliationAdapter): ReconciliationAdapter => ({
    declaration: inner.declaration,
    lookup(request, context) {
      const look = (row: LeaseRow) => {
        world.lookups.push({ request, effectStatus: row?.status, leaseOwner: row?.lease_owner });
        // Rule 4 and the lease: a lookup happens only for an `unknown` effect whose lease is held
        // (never after an operator's or a reconciler's settlement), unless the Driver's evidence settled it meanwhile,
        // or as the retention canary of a fence-less miss (docs/DESIGN.md §4): a `succeeded` effect the provider
        // itself showed (never an operator's resolution), read-only, so it needs no lease.
        const evidenceRace = row !== undefined && row.status !== "unknown" && EVIDENCE.has(row.resolution ?? "");
        const canary = row?.status === "succeeded" && CANARY_RESOLUTIONS.has(row.resolution ?? "");
        if (!evidenceRace && !canary && (row?.status !== "unknown" || row.lease_owner === null)) {
          world.violations.push(
            `lookup of effect ${request.effectId} while it is ${row?.status ?? "missing"} (lease ${row?.lease_owner ?? "none"})`,
          );
        }
        const gate = world.gate;
        if (!gate) return inner.lookup(request, context);
        return gate(`lookup ${request.effectId.slice(-6)}`).then(() => inner.lookup(request, context));
      };
      // SQLite reads the row synchronously (as before the PostgreSQL stores); a PostgreSQL store answers a read later
      const sync = world.rows.sync;
      return sync
        ? look(sync.get<LeaseRow>(LEASE_ROW, request.effectId))
        : world.rows.get<LeaseRow>(LEASE_ROW, request.effectId).then(look);
    },
  });
  const adapter = wrap(inner);
  /** The bound of the lookup about to start, set by `beforeLookup` (the reconciler reads it in the same synchronous step). */
  let lookupTimeoutMs = target.kind === "sqlite" ? LOOKUP_TIMEOUT_MS : PG_LOOKUP_TIMEOUT_MS;
  const baseTimeoutMs = lookupTimeoutMs;
  const settings: ReconciliationSettings = {
    enabled: true,
    bindings: new Map([
      [BOUND_SERVER, adapter],
      [TASK_SERVER, wrap(tasks.adapter)],
    ]),
    get lookupTimeoutMs() {
      return lookupTimeoutMs;
    },
    leaseMs: LEASE_MS,
    concurrency: 4,
    backoff: { initialMs: 1_000, maxMs: 8_000, factor: 2 },
    maxLookups: MAX_LOOKUPS,
    // A race command's scheduler also decides what runs between a reconciler's lease commit and its
    // adapter call (an operator's resolve, a lease expiry, a Driver's report, finalization).
    beforeLookup: async (effectId) => {
      if (world.gate) await world.gate(`leased ${effectId.slice(-6)}`);
      lookupTimeoutMs = world.taskEffects.has(effectId) ? TASK_LOOKUP_TIMEOUT_MS : baseTimeoutMs;
    },
  };
  const runtimeOptions = { heartbeatTtlMs: HEARTBEAT_TTL_MS, sendDeadlineMs: SEND_DEADLINE_MS, reconciliation: settings };
  Object.assign(world, {
    profile,
    clock,
    double,
    unboundProvider,
    tasks,
    taskEffects: new Set(),
    settings,
    lookups: [],
    gate: null,
    driver: null,
    runId: null,
    violations: [],
    trace: [],
    auditCursor: { effects: 0, commands: 0 },
    checks,
  } satisfies Omit<World, "store" | "runtime" | "injector" | "rows" | "restart" | "close">);
  if (target.kind === "sqlite") Object.assign(world, createSqliteProcess(clock, runtimeOptions, world));
  else Object.assign(world, await createPgProcess(target, clock, runtimeOptions, world));
  const closeProcess = world.close;
  world.close = async () => {
    tasks.close();
    await closeProcess();
  };
  return world;
}

type RuntimeOptions = Parameters<typeof buildRuntime>[2];

/** The "API process" parts of a world on its own SQLite file: store, runtime, injector, rows, restart, close. */
function createSqliteProcess(
  clock: ManualClock,
  runtimeOptions: RuntimeOptions,
  world: World,
): Pick<World, "store" | "runtime" | "injector" | "rows" | "restart" | "close"> {
  // A file-backed store (a copy of a migrated template), so an "API process" can die and a new
  // one open the same file (ApiCrashCmd). synchronous=OFF only for speed: a simulated crash never
  // loses what the OS already holds.
  const temp = copyMigratedStoreFile("ledger-model-", "ledger.db");
  let injector!: CrashInjector;
  const tw = createTestWorld({
    dbFile: temp.file,
    clock,
    ...runtimeOptions,
    onStoreOpened: (store) => {
      store.sqlite.pragma("synchronous = OFF");
      // The audit triggers stamp each row change with the manual clock (test-only SQL function).
      store.sqlite.function("ledger_model_now", { deterministic: false }, () => clock.now());
      installAudit(store);
      injector = new CrashInjector();
      injector.attach(store);
    },
  });
  return {
    store: tw.store,
    runtime: tw.runtime,
    injector,
    rows: sqliteRows(() => tw.store),
    restart: async () => {
      // the store is closed, the same file opened in a new runtime, and (what server.ts does at
      // startup) the leases that expired are ended (a live one is left to expire, docs/DESIGN.md §11)
      await tw.restart();
      Object.assign(world, { store: tw.store, runtime: tw.runtime, injector });
    },
    close: async () => {
      tw.close();
      temp.remove();
    },
  };
}

/**
 * The "API process" parts of a world on a PostgreSQL target (emptied first): the runtime gets a
 * clock-stamping store that is refused once this process crashed or was replaced; a restart opens a
 * new store on the same database (PGlite: the same one), a new injector and runtime, and ends the
 * expired leases as at startup.
 */
async function createPgProcess(
  target: Exclude<ModelStoreTarget, { kind: "sqlite" }>,
  clock: ManualClock,
  runtimeOptions: RuntimeOptions,
  world: World,
): Promise<Pick<World, "store" | "runtime" | "injector" | "rows" | "restart" | "close">> {
  const boot = async (reset: boolean) => {
    const store = await openPgWorldStore(target, reset);
    const injector = new CrashInjector();
    injector.attach(store);
    let replaced: Error | null = null;
    const runtimeStore = clockStampedStore(
      store,
      () => clock.now(),
      () => injector.crashed ?? replaced,
    );
    const runtime = buildRuntime(runtimeStore, clock, runtimeOptions);
    const end = async () => {
      replaced = new Error("this API process was replaced (restart)");
      await closePgWorldStore(target, store);
    };
    return { store, runtime, injector, end };
  };
  let current = await boot(true);
  return {
    store: current.store,
    runtime: current.runtime,
    injector: current.injector,
    rows: pgRows(() => world.store),
    restart: async () => {
      await current.end();
      current = await boot(false);
      Object.assign(world, { store: current.store, runtime: current.runtime, injector: current.injector });
      await current.runtime.reconciler.endExpiredLeases({ startup: true });
    },
    close: () => current.end(),
  };
}

/** Removes the migrated template the worlds copy (call in `afterAll`); kept here for model-shard.ts and the property test. */
export { removeMigratedTemplate } from "../kit/index.js";

/** Test-only audit of every effect and command row change, kept in the test's own store file (survives a restart). */
function installAudit(store: Store): void {
  store.sqlite.exec(`
    CREATE TABLE IF NOT EXISTS audit_effect (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, op TEXT,
      old_status TEXT, new_status TEXT, old_version INTEGER, new_version INTEGER,
      old_resolution TEXT, new_resolution TEXT, old_result TEXT, new_result TEXT,
      old_rreceipt TEXT, new_rreceipt TEXT, old_preceipt TEXT, new_preceipt TEXT,
      old_attempts INTEGER, new_attempts INTEGER,
      old_lease_owner TEXT, new_lease_owner TEXT, old_lease_exp INTEGER, new_lease_exp INTEGER, at_ms INTEGER);
    CREATE TRIGGER IF NOT EXISTS audit_effect_insert AFTER INSERT ON external_tool_effects BEGIN
      INSERT INTO audit_effect (id, op, new_status, new_version, new_resolution, new_result, new_rreceipt, new_preceipt, new_attempts)
      VALUES (NEW.id, 'insert', NEW.status, NEW.version, NEW.resolution, NEW.result_json, NEW.reconciliation_receipt_json, NEW.provider_receipt_json, NEW.attempt_count);
    END;
    CREATE TRIGGER IF NOT EXISTS audit_effect_update AFTER UPDATE ON external_tool_effects BEGIN
      INSERT INTO audit_effect (id, op, old_status, new_status, old_version, new_version, old_resolution, new_resolution,
        old_result, new_result, old_rreceipt, new_rreceipt, old_preceipt, new_preceipt, old_attempts, new_attempts,
        old_lease_owner, new_lease_owner, old_lease_exp, new_lease_exp, at_ms)
      VALUES (NEW.id, 'update', OLD.status, NEW.status, OLD.version, NEW.version, OLD.resolution, NEW.resolution,
        OLD.result_json, NEW.result_json, OLD.reconciliation_receipt_json, NEW.reconciliation_receipt_json,
        OLD.provider_receipt_json, NEW.provider_receipt_json, OLD.attempt_count, NEW.attempt_count,
        OLD.lease_owner, NEW.lease_owner, OLD.lease_expires_at_ms, NEW.lease_expires_at_ms, ledger_model_now());
    END;
    CREATE TRIGGER IF NOT EXISTS audit_effect_delete AFTER DELETE ON external_tool_effects BEGIN
      INSERT INTO audit_effect (id, op, old_status) VALUES (OLD.id, 'delete', OLD.status);
    END;
    CREATE TABLE IF NOT EXISTS audit_command (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, op TEXT, old_status TEXT, new_status TEXT,
      old_result TEXT, new_result TEXT, old_error TEXT, new_error TEXT, old_terminal INTEGER, new_terminal INTEGER);
    CREATE TRIGGER IF NOT EXISTS audit_command_insert AFTER INSERT ON driver_commands BEGIN
      INSERT INTO audit_command (id, op, new_status) VALUES (NEW.id, 'insert', NEW.status);
    END;
    CREATE TRIGGER IF NOT EXISTS audit_command_update AFTER UPDATE ON driver_commands BEGIN
      INSERT INTO audit_command (id, op, old_status, new_status, old_result, new_result, old_error, new_error, old_terminal, new_terminal)
      VALUES (NEW.id, 'update', OLD.status, NEW.status, OLD.result_json, NEW.result_json, OLD.error_json, NEW.error_json, OLD.terminal_at_ms, NEW.terminal_at_ms);
    END;
  `);
}

// ---------------------------------------------------------------------------------------------
// Row readers (raw SQL on the store: the test never trusts the services' own views)

/** An effect row as stored: {@link EffectDbRow} plus the columns the model reads to find its call. */
export interface EffectDb extends EffectDbRow {
  command_id: string;
  run_id: string;
  driver_instance_id: string;
  server_id: string;
  tool_name: string;
  request_id: string;
  idempotency_key: string;
  tool_call_id: string;
  created_at_ms: number;
  compensates_effect_id: string | null;
  /** The provider's MCP task id (set once), or null. */
  task_id: string | null;
}
export interface CommandDb {
  id: string;
  driver_instance_id: string;
  run_id: string;
  status: string;
  result_json: string | null;
  error_json: string | null;
}
interface RecordDb {
  id: string;
  effect_id: string;
  trigger: string;
  outcome: string;
  reason_code: string | null;
  receipt_json: string | null;
  result_json: string | null;
  started_at_ms: number;
  next_lookup_at_ms: number | null;
}

const effects = (w: World) => w.rows.all<EffectDb>("SELECT * FROM external_tool_effects ORDER BY id");
export const effectById = (w: World, id: string) => w.rows.get<EffectDb>("SELECT * FROM external_tool_effects WHERE id = ?", id);
const commands = (w: World) => w.rows.all<CommandDb>("SELECT * FROM driver_commands ORDER BY id");
export const commandById = (w: World, id: string) => w.rows.get<CommandDb>("SELECT * FROM driver_commands WHERE id = ?", id);
const records = (w: World) => w.rows.all<RecordDb>("SELECT * FROM effect_reconciliations ORDER BY id");
export const runStatus = async (w: World, runId: string) =>
  (await w.rows.get<{ status: string }>("SELECT status FROM session_runs WHERE id = ?", runId))?.status;
export const driverStatus = async (w: World, id: string) =>
  (await w.rows.get<{ status: string }>("SELECT status FROM driver_instances WHERE id = ?", id))?.status;

// ---------------------------------------------------------------------------------------------
// Invariants

/** The command lifecycle (command-lifecycle.machine.ts); redelivery keeps the status. */
const COMMAND_STEPS: Record<string, readonly string[]> = {
  queued: ["delivered", "accepted", "failed", "cancelled", "expired"],
  delivered: ["accepted", "completed", "failed", "cancelled", "expired"],
  accepted: ["completed", "failed", "cancelled", "expired"],
};
/** docs/DESIGN.md §5: what a lying/broken adapter must be turned into (reason codes of `still_unknown`). */
const FAULT_REASONS: Partial<Record<AdapterFault, readonly string[]>> = {
  throws: ["adapter_error"],
  rejects: ["adapter_error"],
  hangs_ignoring_signal: ["lookup_timeout"],
  garbage: ["invalid_adapter_output"],
  oversized_receipt: ["invalid_adapter_output"],
  wrong_key: ["answer_mismatch"],
  conflicting_fingerprint: ["key_conflict"],
};

class InvariantViolation extends Error {
  override readonly name = "InvariantViolation";
}

function fail(w: World, where: string, message: string): never {
  const tail = w.trace.slice(-25).join("\n    ");
  throw new InvariantViolation(`[${where}] ${message}\n  trace (last 25):\n    ${tail}`);
}

/** The provider result as the run must see it: what the double recorded for `key`, converted. */
function expectedResultOf(w: World, e: EffectDb) {
  const record = w.double.record(e.idempotency_key);
  if (!record) return undefined;
  return { record, outputText: `created ${record.operationId}` };
}

/**
 * Checks every invariant on the store, the audit log, the doubles and the model. Call after every
 * command (and during quiescence). Records created while `m.fault` is a lying/broken adapter must
 * never confirm (I7) and must carry the §5 reason code for that fault.
 */
export async function checkInvariants(w: World, m: Model, where: string): Promise<void> {
  if (w.violations.length > 0) fail(w, where, w.violations.join("; "));
  await checkAudit(w, where);
  const effs = await effects(w);
  const cmds = new Map((await commands(w)).map((c) => [c.id, c]));
  const recs = await records(w);
  // attempt rows per effect, in one read (one query instead of one per effect: a round trip each on PostgreSQL)
  const attemptsByEffect = new Map(
    (
      await w.rows.all<{ effect_id: string; n: number }>(
        "SELECT effect_id, count(*) AS n FROM external_tool_effect_attempts GROUP BY effect_id",
      )
    ).map((r) => [r.effect_id, Number(r.n)]),
  );
  const recsByEffect = new Map<string, RecordDb[]>();
  for (const r of recs) recsByEffect.set(r.effect_id, [...(recsByEffect.get(r.effect_id) ?? []), r]);
  const callsByEffect = new Map(m.calls.map((c) => [c.effectId, c]));
  const dishonest = m.fault.adapterFault !== "none";

  // I7: a new record created under a lying adapter never confirms, and carries the §5 reason code.
  for (const r of recs) {
    if (m.seenRecords.has(r.id)) continue;
    m.seenRecords.add(r.id);
    // the task provider's reconciler is not the faulty double (its records are judged by checkTaskEffect)
    if (isTaskRecordOfEffect(m, r.effect_id)) continue;
    const expected = FAULT_REASONS[m.fault.adapterFault];
    if (r.outcome === "confirmed_succeeded" || r.outcome === "confirmed_not_executed") {
      if (dishonest)
        fail(w, where, `record ${r.id} of effect ${r.effect_id} is ${r.outcome} while the adapter fault is ${m.fault.adapterFault} (I7)`);
    } else if (
      r.outcome === "still_unknown" &&
      expected &&
      !expected.includes(r.reason_code ?? "") &&
      !(m.fault.slow && r.reason_code === "lookup_timeout") &&
      // a lookup the API process died in (recorded at the next start, whatever the adapter would have answered; DESIGN §4)
      r.reason_code !== "lookup_interrupted" &&
      // the sweep's lookup-bound flag: no lookup was made, nothing the adapter answered
      r.reason_code !== "lookup_bound_reached"
    ) {
      fail(
        w,
        where,
        `record ${r.id}: fault ${m.fault.adapterFault} gave still_unknown/${r.reason_code}, expected ${expected.join("|")} (DESIGN §5)`,
      );
    }
  }

  for (const e of effs) {
    const call = callsByEffect.get(e.id);
    if (!call) fail(w, where, `effect ${e.id} was never enqueued by the model`);
    const provider = call.bound ? w.double : call.task ? w.tasks.double : w.unboundProvider;
    const writes = provider.writeCount(e.idempotency_key);
    const sends = m.sends.get(e.idempotency_key) ?? 0;
    const execClaims = m.executeClaims.get(e.id) ?? 0;
    const attempts = attemptsByEffect.get(e.id) ?? 0;
    const cmd = cmds.get(e.command_id);
    if (!cmd) fail(w, where, `effect ${e.id} has no command`);
    const effRecs = recsByEffect.get(e.id) ?? [];
    const confirmed = effRecs.filter((r) => r.outcome === "confirmed_succeeded" || r.outcome === "confirmed_not_executed");

    // I1 at most once.
    if (e.attempt_count > 1 || attempts > 1 || execClaims > 1) {
      fail(
        w,
        where,
        `effect ${e.id}: attempt_count ${e.attempt_count}, ${attempts} attempt rows, ${execClaims} execute claims (I1: at most one dispatch)`,
      );
    }
    if (writes > 1) fail(w, where, `key ${e.idempotency_key}: ${writes} provider writes (I1)`);
    if (sends > execClaims) fail(w, where, `key ${e.idempotency_key}: ${sends} provider sends after ${execClaims} execute claims (I1)`);
    if (writes > sends) fail(w, where, `key ${e.idempotency_key}: provider wrote ${writes} times but was sent ${sends} requests`);

    // I4 versions never decrease (also checked per row change in the audit).
    const last = m.ledger.get(e.id);
    if (last && e.version < last.version) fail(w, where, `effect ${e.id}: version went ${last.version} → ${e.version} (I4)`);
    m.ledger.set(e.id, { status: e.status, version: e.version });

    // Settled effects and their evidence (I3, I7).
    if (confirmed.length > 1) fail(w, where, `effect ${e.id}: ${confirmed.length} confirmed reconciliation records (I4)`);
    if (!call.bound && !call.task && effRecs.length > 0)
      fail(w, where, `effect ${e.id} on ${e.server_id}/${e.tool_name} has reconciliation records but no eligible adapter (rule 4)`);
    // The late-commit invariant, after EVERY step: no effect is not_executed while the provider holds a
    // commit for its key (whatever the resolution: reconciled, operator, deadline_missed).
    if (e.status === "not_executed" && writes > 0) {
      fail(
        w,
        where,
        `effect ${e.id} is not_executed (${e.resolution}) while the provider holds a commit for key ${e.idempotency_key} (phantom non-execution)`,
      );
    }
    if (call.task) {
      // Tasks (docs/MCP-TASKS.md): the set-once handle and every lookup by it, judged in ledger-model/task-invariants.ts.
      checkTaskEffect(w.tasks, m, e, effRecs, figures.taskRecords, (message) => fail(w, where, message));
    } else if (e.status === "succeeded") {
      if (writes !== 1)
        fail(w, where, `effect ${e.id} succeeded (${e.resolution}) but the provider wrote its key ${writes} times (I3 phantom success)`);
      const result = JSON.parse(e.result_json ?? "null") as { outputText?: string } | null;
      const answered = m.committed.get(e.idempotency_key);
      if ((e.resolution === "provider_result" || e.resolution === "reported_late") && result?.outputText !== `created ${answered}`) {
        fail(
          w,
          where,
          `effect ${e.id} succeeded with ${e.result_json}, but the provider answered the Driver ${answered ?? "nothing"} (I3)`,
        );
      }
      if (call.bound) {
        const exp = expectedResultOf(w, e);
        if (!exp || result?.outputText !== exp.outputText)
          fail(w, where, `effect ${e.id} succeeded with ${e.result_json}, provider holds ${exp?.outputText ?? "nothing"} (I3 result hash)`);
      }
      if (e.resolution === "reconciled") {
        if (!e.reconciliation_receipt_json) fail(w, where, `effect ${e.id} succeeded/reconciled without a receipt (I7)`);
        const rec = confirmed[0];
        if (!rec || rec.outcome !== "confirmed_succeeded" || rec.receipt_json !== e.reconciliation_receipt_json) {
          fail(w, where, `effect ${e.id} succeeded/reconciled without a matching confirmed_succeeded record (I7/I8)`);
        }
        const receipt = JSON.parse(e.reconciliation_receipt_json) as { providerOperationId?: string };
        const exp = expectedResultOf(w, e);
        if (receipt.providerOperationId !== exp?.record.operationId)
          fail(w, where, `effect ${e.id}: receipt names ${receipt.providerOperationId}, provider holds ${exp?.record.operationId} (I3)`);
      } else if (e.resolution === "operator") {
        const rec = provider.record(e.idempotency_key);
        if (!rec || result?.outputText !== `created ${rec.operationId}`)
          fail(
            w,
            where,
            `effect ${e.id} resolved succeeded by the operator with ${e.result_json}, provider holds ${rec?.operationId ?? "nothing"} (I3)`,
          );
      } else if (e.resolution !== "provider_result" && e.resolution !== "reported_late") {
        fail(w, where, `effect ${e.id} succeeded with resolution ${e.resolution}`);
      }
    } else if (e.status === "not_executed" && e.resolution === "operator") {
      // the honest operator fenced the key at the provider before resolving
      if (writes !== 0) fail(w, where, `effect ${e.id} resolved not_executed by the operator but the provider committed its key (I3)`);
      if (!provider.isFenced(e.idempotency_key)) fail(w, where, `effect ${e.id} resolved not_executed while its key can still commit`);
    } else if (e.status === "not_executed" && e.resolution === "deadline_missed") {
      // rule 12: only a Driver whose claim answer came after the deadline reports it, and it never sent
      if (sends !== 0) fail(w, where, `effect ${e.id} is not_executed/deadline_missed but the Driver sent ${sends} requests with its key`);
      if (!m.claims.some((c) => c.claim.effectId === e.id && c.send.kind === "deadline_missed")) {
        fail(w, where, `effect ${e.id} is not_executed/deadline_missed but no claim of the model Driver missed its deadline`);
      }
    } else if (e.status === "not_executed") {
      if (e.resolution !== "reconciled" || !e.reconciliation_receipt_json)
        fail(w, where, `effect ${e.id} not_executed with resolution ${e.resolution}, receipt ${e.reconciliation_receipt_json} (I7)`);
      const rec = confirmed[0];
      if (!rec || rec.outcome !== "confirmed_not_executed" || rec.receipt_json !== e.reconciliation_receipt_json) {
        fail(w, where, `effect ${e.id} not_executed without a matching confirmed_not_executed record (I7/I8)`);
      }
      if (writes !== 0) fail(w, where, `effect ${e.id} is not_executed but the provider committed its key (I3 phantom non-execution)`);
      if (w.profile.fencing === "lookup_fences_key") {
        if (!w.double.isFenced(e.idempotency_key))
          fail(w, where, `effect ${e.id} is not_executed but its key is not fenced at the provider (I3)`);
        if (!m.probed.has(e.id)) {
          m.probed.add(e.id);
          figures.lateCommitProbes += 1;
          const late = await w.double.commit(e.idempotency_key, call.args);
          if (late.status !== "refused")
            fail(w, where, `a late commit of not_executed effect ${e.id} was ${JSON.stringify(late)}, expected refused (I3)`);
        }
      }
    } else {
      if (e.resolution !== null || e.result_json !== null || e.reconciliation_receipt_json !== null) {
        fail(w, where, `effect ${e.id} is ${e.status} yet holds resolution ${e.resolution} / result / receipt (I7)`);
      }
      if (confirmed.length > 0) fail(w, where, `effect ${e.id} is ${e.status} but has a confirmed record (I4)`);
    }
    // DESIGN §6.3: an effect parked at the lookup bound has used every lookup it may make.
    if (e.operator_attention === "lookup_bound_reached" && e.lookup_count < MAX_LOOKUPS)
      fail(
        w,
        where,
        `effect ${e.id} is flagged lookup_bound_reached with ${e.lookup_count} of ${MAX_LOOKUPS} lookups counted (lookup bound)`,
      );

    // DESIGN §3 rule 6 / §6.2: a confirmation made by finalization repair commits together with the
    // command's matching terminal state (completed with the result, or failed not_executed).
    const finalConfirm = confirmed.find((r) => r.trigger === "finalization");
    if (finalConfirm && w.checks.finalizationSettlesCommand) {
      const code = cmd.error_json ? (JSON.parse(cmd.error_json) as { code?: string }).code : undefined;
      const matches =
        finalConfirm.outcome === "confirmed_succeeded"
          ? cmd.status === "completed"
          : cmd.status === "failed" && code === "external_effect.not_executed";
      if (!matches) {
        fail(
          w,
          where,
          `effect ${e.id} was ${finalConfirm.outcome} by finalization repair, but its command is ${cmd.status}${code ? `/${code}` : ""} (rule 6: outcome and command terminal state in one transaction)`,
        );
      }
    }

    // Commands vs effects.
    if (cmd.status === "completed") {
      if (e.status !== "succeeded") fail(w, where, `command ${cmd.id} completed while its effect is ${e.status}`);
      if (cmd.result_json !== e.result_json)
        fail(w, where, `command ${cmd.id} completed with ${cmd.result_json}, effect holds ${e.result_json}`);
    }
    if (TERMINAL_COMMAND.has(cmd.status) && e.status === "executing")
      fail(w, where, `command ${cmd.id} is ${cmd.status} while its effect is executing`);
    // Rule 14: a command that ended while its effect is unknown says so (an effect never becomes unknown after its command ended).
    if (cmd.status === "failed" && e.status === "unknown" && !isHonestUnknownAnswer(cmd.error_json, [e.id])) {
      fail(
        w,
        where,
        `command ${cmd.id} failed ${cmd.error_json} while its effect ${e.id} is unknown (rule 14: external_effect.unknown, not retryable, naming it)`,
      );
    }
    if (e.status === "executing" && (await driverStatus(w, e.driver_instance_id)) === "finalized") {
      fail(w, where, `effect ${e.id} is executing behind finalized Driver ${e.driver_instance_id} (rule 10)`);
    }
  }

  // Rule 14: a run that ended while effects of its turn are unknown says so, naming them (the model queues no compensations).
  for (const run of await w.rows.all<{ id: string; error_json: string }>(
    "SELECT id, error_json FROM session_runs WHERE status = 'failed'",
  )) {
    const unknownIds = effs.filter((e) => e.run_id === run.id && e.status === "unknown").map((e) => e.id);
    if (unknownIds.length > 0 && !isHonestUnknownAnswer(run.error_json, unknownIds)) {
      fail(w, where, `run ${run.id} failed ${run.error_json} while its effects ${unknownIds.join(", ")} are unknown (rule 14)`);
    }
  }

  // Rules 14 and 16 after every step: each failed run's error carries the turn's account, true to the ledger.
  const accountViolations = checkTurnAccounts(
    (
      await w.rows.all<{ id: string; updated_at_ms: number; error_json: string | null }>(
        "SELECT id, updated_at_ms, error_json FROM session_runs WHERE status = 'failed'",
      )
    ).map((r) => ({ id: r.id, updatedAtMs: Number(r.updated_at_ms), errorJson: r.error_json })),
    effs.map((e) => ({
      id: e.id,
      runId: e.run_id,
      status: e.status,
      toolCallId: e.tool_call_id,
      createdAtMs: Number(e.created_at_ms),
      compensatesEffectId: e.compensates_effect_id ?? null,
      commandStatus: cmds.get(e.command_id)?.status ?? "missing",
      commandErrorJson: cmds.get(e.command_id)?.error_json ?? null,
    })),
  );
  if (accountViolations.length > 0) fail(w, where, accountViolations.join("; "));

  // Runs: at most one terminal event; a failed run leaves no command without a terminal receipt.
  // `WHERE terminal`: SQLite stores 0/1, PostgreSQL a boolean
  const terminalEvents = await w.rows.all(
    "SELECT run_id, count(*) AS n FROM run_events WHERE terminal GROUP BY run_id HAVING count(*) > 1",
  );
  if (terminalEvents.length > 0) fail(w, where, `runs with more than one terminal event: ${JSON.stringify(terminalEvents)} (I4)`);
  const orphans = await w.rows.all(
    `SELECT c.id, c.status, r.status AS run_status, d.status AS driver_status FROM driver_commands c
       JOIN session_runs r ON r.id = c.run_id JOIN driver_instances d ON d.id = c.driver_instance_id
       WHERE c.status IN ('queued','delivered','accepted') AND (r.status <> 'active' OR d.status = 'finalized')`,
  );
  if (orphans.length > 0) {
    fail(
      w,
      where,
      `commands without a terminal receipt on a failed run / finalized Driver (rule 10, finalization step 2): ${JSON.stringify(orphans)}`,
    );
  }
}

/** DESIGN §3 rule 14: `errorJson` is `external_effect.unknown`, not retryable, and its `details.effectIds` include every id of `effectIds`. */
function isHonestUnknownAnswer(errorJson: string | null, effectIds: string[]): boolean {
  const err = errorJson ? (JSON.parse(errorJson) as { code?: string; retryable?: boolean; details?: { effectIds?: unknown } }) : null;
  const named = err?.details?.effectIds;
  return (
    err?.code === "external_effect.unknown" &&
    err.retryable === false &&
    Array.isArray(named) &&
    effectIds.every((id) => named.includes(id))
  );
}

/** Every single row change since the last check is a legal step (I4). */
async function checkAudit(w: World, where: string): Promise<void> {
  type AuditRow = Record<string, string | number | null> & { seq: number };
  const effRows = await w.rows.all<AuditRow>("SELECT * FROM audit_effect WHERE seq > ? ORDER BY seq", w.auditCursor.effects);
  for (const a of effRows) {
    w.auditCursor.effects = a.seq;
    figures.transitionsChecked += 1;
    const id = String(a.id);
    if (a.op === "insert") {
      if (a.new_status !== "intent" || a.new_attempts !== 0)
        fail(w, where, `effect ${id} inserted as ${a.new_status} with ${a.new_attempts} attempts`);
      continue;
    }
    if (a.op === "delete") fail(w, where, `effect ${id} was deleted while ${a.old_status}`);
    // every change is stamped with the model clock (PostgreSQL: by the runtime's clock-stamping store; a NULL is a write that bypassed it)
    if (a.at_ms === null) fail(w, where, `effect ${id}: a row change without the model clock (a write outside the runtime's store)`);
    const from = String(a.old_status);
    const to = String(a.new_status);
    if (from !== to && !EFFECT_STEPS[from]?.includes(to)) fail(w, where, `effect ${id}: illegal transition ${from} → ${to} (I4)`);
    if (Number(a.new_version) < Number(a.old_version)) fail(w, where, `effect ${id}: version ${a.old_version} → ${a.new_version} (I4)`);
    if (from !== to && Number(a.new_version) <= Number(a.old_version))
      fail(w, where, `effect ${id}: ${from} → ${to} without a version bump (rule 7)`);
    if (Number(a.new_attempts) > 1) fail(w, where, `effect ${id}: attempt ${a.new_attempts} (I1: unknown never re-dispatches)`);
    // R1/rule 7: a live lease is never taken over; only its owner (or expiry) ends it.
    if (
      a.old_lease_owner !== null &&
      a.new_lease_owner !== null &&
      a.old_lease_owner !== a.new_lease_owner &&
      Number(a.old_lease_exp) >= Number(a.at_ms)
    ) {
      fail(
        w,
        where,
        `effect ${id}: lease of ${a.old_lease_owner} (live until ${a.old_lease_exp}) taken over by ${a.new_lease_owner} at ${a.at_ms} (R1)`,
      );
    }
    if (from !== to && a.old_lease_owner !== null && Number(a.old_lease_exp) >= Number(a.at_ms) && a.new_lease_owner !== null) {
      fail(w, where, `effect ${id}: ${from} → ${to} left lease ${a.new_lease_owner} in place`);
    }
    if (SETTLED_EFFECT.has(from)) {
      const same = (k: string) => a[`old_${k}`] === a[`new_${k}`];
      if (from !== to || !same("resolution") || !same("result") || !same("rreceipt") || !same("preceipt")) {
        fail(w, where, `settled effect ${id} (${from}) changed: ${JSON.stringify(a)} (I4 terminal states never change)`);
      }
    }
  }
  const cmdRows = await w.rows.all<AuditRow>("SELECT * FROM audit_command WHERE seq > ? ORDER BY seq", w.auditCursor.commands);
  for (const a of cmdRows) {
    w.auditCursor.commands = a.seq;
    figures.transitionsChecked += 1;
    if (a.op !== "update") continue;
    const from = String(a.old_status);
    const to = String(a.new_status);
    if (TERMINAL_COMMAND.has(from)) {
      if (from !== to || a.old_result !== a.new_result || a.old_error !== a.new_error || a.old_terminal !== a.new_terminal) {
        fail(w, where, `terminal command ${a.id} changed: ${from} → ${to} (I4)`);
      }
    } else if (from !== to && !COMMAND_STEPS[from]?.includes(to)) {
      fail(w, where, `command ${a.id}: illegal transition ${from} → ${to}`);
    }
  }
}

/** Lets provider settlements and other queued callbacks run. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Quiescence (I2, I10): faults off, the clock moves well past the heartbeat TTL, the in-flight
 * window and the lookup backoff, the sweep runs repeatedly. Then: no effect is `executing`; no
 * bound effect stays `unknown` without operator attention; every committed key is `succeeded` or
 * waits for an operator; every command has a terminal receipt.
 */
export async function quiesce(w: World, m: Model): Promise<void> {
  w.gate = null;
  w.double.setFaults({ adapterFault: "none", lookupLagMs: 0, lookupDelayMs: 0 });
  m.fault = { adapterFault: "none", lag: false, slow: false };
  for (let i = 0; i < 14; i++) {
    w.clock.advance(15_000);
    await flush();
    await w.runtime.sweep.sweepOnce();
    await checkInvariants(w, m, `quiescence#${i}`);
  }
  for (const e of await effects(w)) {
    const call = m.calls.find((c) => c.effectId === e.id)!;
    bump(
      figures.effects,
      `${call.bound ? "bound" : call.task ? "task" : "unbound"}:${e.status}${e.resolution ? `/${e.resolution}` : ""}${e.operator_attention ? `/${e.operator_attention}` : ""}`,
    );
    if (e.status === "executing") fail(w, "quiescence", `effect ${e.id} is still executing after every Driver was finalized (I10)`);
    const committed = call.bound && w.double.writeCount(e.idempotency_key) > 0;
    if (call.bound && e.status === "unknown" && e.operator_attention === null) {
      fail(
        w,
        "quiescence",
        `bound effect ${e.id} (key committed: ${committed}) is still unknown with no operator attention after quiescence (I2/I10); lookups ${e.lookup_count}, next ${e.next_lookup_at_ms}`,
      );
    }
    if (committed && e.status !== "succeeded" && e.operator_attention === null)
      fail(w, "quiescence", `committed key of effect ${e.id} ended ${e.status} (I2)`);
    if (call.task) checkTaskQuiescence(w.tasks, e, (message) => fail(w, "quiescence", message));
  }
  for (const r of await records(w)) bump(figures.records, `${r.trigger}:${r.outcome}${r.reason_code ? `/${r.reason_code}` : ""}`);
  const open = (await commands(w)).filter((c) => !TERMINAL_COMMAND.has(c.status));
  if (open.length > 0)
    fail(w, "quiescence", `commands without a terminal receipt after quiescence: ${open.map((c) => `${c.id}:${c.status}`).join(", ")}`);
}
