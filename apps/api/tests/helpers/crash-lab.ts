/**
 * The crash lab of `crash-point-matrix.test.ts`: one tool call driven step by step through
 * the Driver protocol against a real runtime on a FILE-backed SQLite store, with a provider double
 * that outlives every crash (it is another process). A crash abandons the in-memory runtime and the
 * model Driver's memory, closes the store and opens the same file in a new runtime (expired leases
 * ended, as `server.ts` does at startup); recovery is then driven by a reconnecting Driver
 * (redelivery) or by the Driver's heartbeat expiring (sweep → finalization repair), then quiescence.
 */
import { join } from "node:path";
import {
  effectNotExecutedError,
  effectUnknownError,
  toMcpExecuteCommandResult,
  type DriverCommandEnvelope,
  type EffectClaim,
  type McpExecuteCommandResult,
  type McpToolResult,
} from "@mosoo/contracts";
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import { createProviderDouble, createProviderDoubleAdapter, type ProviderDouble } from "@mosoo/effect-reconciliation/testing";
import { eq } from "drizzle-orm";
import {
  START_MS,
  buildRuntime,
  createManualClock,
  createTempDir,
  createTestWorld,
  truncatePgStore,
  type ManualClock,
  type ReconciliationSettings,
  type Runtime,
  type Store,
  type TestWorld,
} from "../kit/index.js";
import type { Store as PortStore } from "../../src/platform/db/store.port.js";
import { openPostgresStore } from "../../src/platform/db/postgres/postgres-store.js";
import { CrashInjector, SimulatedCrash, isSimulatedCrash, type CrashPlan } from "./crash-injector.js";
import { leaseMsFor } from "../../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { installLabAudit, installLabAuditPg, resetLabAuditPg } from "./crash-lab-checks.js";

const SERVER = "tracker";
const TOOL = "createIssue";
/** Real-time bound of one lookup (ms) in the lab; a hanging adapter costs this much wall time. */
const LAB_LOOKUP_TIMEOUT_MS = 30;
/** Declared maximum in-flight time of the `lookup_only` profile (ms, manual clock). */
const LAB_MAX_IN_FLIGHT_MS = 10_000;
/** How late a `late_commit` provider call lands (ms, manual clock; within the in-flight window). */
const LATE_COMMIT_MS = 2_000;
/** The lab API's Driver heartbeat TTL (ms, manual clock). */
export const HEARTBEAT_TTL_MS = 60_000;

/**
 * Provider capability profiles (research/reliability.md P1–P3):
 * - `dedupe_lookup`: dedupes on our key; its lookup fences a key it does not hold (bound adapter);
 * - `lookup_only`: no dedupe (every applied send counts as a commit); lookup with a declared
 *   maximum in-flight time (bound adapter);
 * - `neither`: no dedupe, no lookup: the server is bound to no adapter (the baseline fence).
 */
export type ProviderProfile = "dedupe_lookup" | "lookup_only" | "neither";
export const PROFILES: readonly ProviderProfile[] = ["dedupe_lookup", "lookup_only", "neither"];

/**
 * Behaviours during recovery: the adapter's lookups answer `ok`, hang past the lookup timeout
 * (`timeout`), `throw`, answer schema-invalid data (`malformed`) or answer after a real-time delay
 * within the timeout (`slow_ok`); with `late_commit` the Driver's provider call is answered by
 * nobody (it times out) and the provider applies the write {@link LATE_COMMIT_MS} later.
 * Faults hold for the first recovery phase, then quiescence switches them off.
 */
export type Behaviour = "ok" | "timeout" | "late_commit" | "throw" | "malformed" | "slow_ok";
export const BEHAVIOURS: readonly Behaviour[] = ["ok", "timeout", "late_commit", "throw", "malformed", "slow_ok"];

/** Named crash points of the flow. */
export type CrashPoint =
  | "before_intent"
  | "after_intent"
  | "after_claim"
  | "after_provider_commit_before_response"
  | "after_response_before_persist"
  | "after_persist_before_receipt"
  | "reconcile_after_lookup_before_persist";

/** How the system recovers after the crash: the same Driver instance reconnects, or it never comes back. */
export type RecoveryMode = "reconnect" | "driver_gone";

/** The model Driver: what a Driver process keeps in its state file (token) and in memory (connection). */
interface LabDriver {
  token: string;
  instanceId: string;
  connectionId: string;
}

/** What the flow learned, kept across crashes by the test (not by the crashed processes). */
export interface FlowFacts {
  effectId?: string;
  commandId?: string;
  key?: string;
  /** Provider sends made by any Driver, per key. */
  sends: Map<string, number>;
  /** Applied commits per key as the provider saw them (a replay counts for non-deduping profiles). */
  commits: Map<string, number>;
  /** The provider result of the commit, per key. */
  results: Map<string, McpToolResult>;
  /** Adapter lookups made. */
  lookups: number;
  /** The most lookups of the lab's adapter in progress at the same time (a lease admits one per effect). */
  maxConcurrentLookups: number;
  /** Named points and write indexes at which a crash fired. */
  crashes: string[];
}

/**
 * Where a lab's ledger lives: a SQLite file in the lab's temp dir (default), or a database of a real
 * PostgreSQL server (`url`), shared by the labs of one test file one after the other: each lab
 * empties it (TRUNCATE) in `setup()`, and each "API process" is a new `PostgresStore` (its own pool)
 * on that database.
 */
export type LabStore = { kind: "sqlite" } | { kind: "postgres"; url: string };

/** One lab: the ledger (a SQLite file in a temp dir, or a PostgreSQL database), the surviving provider double and clock, the current "API process". */
export class CrashLab {
  private readonly temp = createTempDir("mosoo-crash-");
  readonly dir = this.temp.dir;
  readonly file = join(this.dir, "mosoo.db");
  readonly clock: ManualClock = createManualClock(START_MS);
  readonly double: ProviderDouble;
  readonly facts: FlowFacts = {
    sends: new Map(),
    commits: new Map(),
    results: new Map(),
    lookups: 0,
    maxConcurrentLookups: 0,
    crashes: [],
  };
  /** SQLite: the test world on {@link file}: its `restart()` is this lab's "new API process" (null on PostgreSQL). */
  private readonly world: TestWorld | null = null;
  /** The current "API process"'s store (any kind; {@link sqlite} for the SQLite handle). */
  store!: PortStore;
  runtime!: Runtime;
  injector!: CrashInjector;
  driver: LabDriver | null = null;
  runId: string | null = null;
  /** Adapter answers are held until the gate resolves (race rows). */
  gate: (() => Promise<void>) | null = null;
  /** Arms the injector for the next durable write once an adapter lookup answered (crash point C6). */
  crashAfterLookup = false;
  faultsOn = true;
  /** The retention canary's effect (profile `lookup_only`), excluded from the flow's checks; null otherwise. */
  canaryEffectId: string | null = null;
  /** Lookups of the lab's adapter in progress now (see {@link FlowFacts.maxConcurrentLookups}). */
  private lookupsInProgress = 0;

  /**
   * @param options.adapter a ready adapter handle bound in place of the provider double's adapter
   *   (the "adapter misbehaves" axis binds handles of the real isolated worker host); it survives
   *   the lab's crashes like the provider does. @param options.lookupTimeoutMs the lookup bound (ms,
   *   real time; default {@link LAB_LOOKUP_TIMEOUT_MS}). @param options.maxLookups the lookup bound (default 50).
   */
  constructor(
    readonly profile: ProviderProfile,
    readonly behaviour: Behaviour,
    readonly options: { adapter?: ReconciliationAdapter; lookupTimeoutMs?: number; maxLookups?: number; store?: LabStore } = {},
  ) {
    this.double = createProviderDouble({
      clock: this.clock,
      toolName: TOOL,
      keyFencing:
        profile === "dedupe_lookup" ? { kind: "lookup_fences_key" } : { kind: "max_in_flight", maxInFlightMs: LAB_MAX_IN_FLIGHT_MS },
    });
    if (options.store?.kind === "postgres") return; // booted in setup() (opening is async)
    this.world = createTestWorld({
      dbFile: this.file,
      clock: this.clock,
      heartbeatTtlMs: HEARTBEAT_TTL_MS,
      reconciliation: this.settings(),
      onStoreOpened: (store) => {
        this.store = store;
        installLabAudit(this);
        this.injector = new CrashInjector();
        this.injector.attach(store);
      },
    });
    this.runtime = this.world.runtime;
  }

  /** The raw SQLite handle of the current store. @throws Error on a PostgreSQL lab. */
  get sqlite(): Store["sqlite"] {
    if (this.store.dialect !== "sqlite") throw new Error("this lab runs on PostgreSQL: no raw SQLite handle");
    return (this.store as Store).sqlite;
  }

  /** PostgreSQL: opens a new "API process" on the lab's database (store, audit trigger, injector, runtime). */
  private async bootPg(url: string): Promise<void> {
    const store = await openPostgresStore(url);
    this.store = store;
    await installLabAuditPg(store);
    this.injector = new CrashInjector();
    this.injector.attach(store);
    this.runtime = buildRuntime(store, this.clock, { heartbeatTtlMs: HEARTBEAT_TTL_MS, reconciliation: this.settings() });
  }

  /** The effect written for command `commandId` (its id and idempotency key), read through the port. @throws Error when absent. */
  async effectOfCommand(commandId: string): Promise<{ id: string; idempotency_key: string }> {
    const row = await this.store.read(async (tx) => {
      const t = tx.tables.externalToolEffects;
      return (await tx.db.select({ id: t.id, key: t.idempotencyKey }).from(t).where(eq(t.commandId, commandId)))[0];
    });
    if (!row) throw new Error(`no effect for command ${commandId}`);
    return { id: row.id, idempotency_key: row.key };
  }

  /** The reconciliation settings of every "API process" of the lab: `tracker` bound (unless profile `neither`) to the counting, faulty adapter. */
  private settings(): ReconciliationSettings {
    const inner = createProviderDoubleAdapter(this.double);
    const hostile = this.options.adapter;
    const adapter: ReconciliationAdapter = hostile
      ? {
          declaration: hostile.declaration,
          lookup: (request, context) => {
            this.facts.lookups += 1;
            return hostile.lookup(request, context);
          },
        }
      : {
          declaration: inner.declaration,
          lookup: async (request, context) => {
            this.facts.lookups += 1;
            // lookups in progress at once (a lookup ends when it settles or the runtime aborts it at its bound)
            this.lookupsInProgress += 1;
            this.facts.maxConcurrentLookups = Math.max(this.facts.maxConcurrentLookups, this.lookupsInProgress);
            let ended = false;
            const end = () => {
              if (!ended) this.lookupsInProgress -= 1;
              ended = true;
            };
            context.signal.addEventListener("abort", end, { once: true });
            if (this.gate) await this.gate();
            try {
              return await this.faultyLookup(() => inner.lookup(request, context));
            } finally {
              end();
              if (this.crashAfterLookup) {
                this.crashAfterLookup = false;
                this.injector.armNext();
              }
            }
          },
        };
    const settings: ReconciliationSettings = {
      enabled: true,
      bindings: new Map(this.profile === "neither" ? [] : [[SERVER, adapter]]),
      lookupTimeoutMs: this.options.lookupTimeoutMs ?? LAB_LOOKUP_TIMEOUT_MS,
      // as the API derives it, at least 30 s
      leaseMs: Math.max(30_000, leaseMsFor(this.options.lookupTimeoutMs ?? LAB_LOOKUP_TIMEOUT_MS)),
      concurrency: 2,
      backoff: { initialMs: 1_000, maxMs: 8_000, factor: 2 },
      maxLookups: this.options.maxLookups ?? 50,
    };
    return settings;
  }

  private async faultyLookup(answer: () => Promise<unknown>): Promise<never> {
    const fault = this.faultsOn ? this.behaviour : "ok";
    switch (fault) {
      case "timeout":
        return new Promise<never>(() => {}); // hangs, ignores the signal
      case "throw":
        throw new Error("adapter exploded");
      case "malformed":
        return { outcome: "confirmed_succeeded", result: 42 } as never;
      case "slow_ok":
        await new Promise((resolve) => setTimeout(resolve, 5));
        return (await answer()) as never;
      default:
        return (await answer()) as never;
    }
  }

  /** The process died: its memory is gone, the file stays. The Driver's state file (token) survives. */
  async crash(reason: string): Promise<void> {
    this.facts.crashes.push(reason);
    this.crashAfterLookup = false;
    this.injector.crashed ??= new SimulatedCrash(reason);
    if (this.world) {
      await this.world.restart(); // closes the store, opens the file in a new runtime, ends expired leases
      this.runtime = this.world.runtime;
    } else {
      const url = (this.options.store as { url: string }).url;
      await this.store.close(); // the dead process's pool: its connections end (an open transaction would roll back)
      await this.bootPg(url);
      await this.runtime.reconciler.endExpiredLeases({ startup: true }); // as server.ts does at startup
    }
    if (this.driver) this.driver = { ...this.driver, connectionId: "" };
  }

  /** Closes the store (SQLite at once; PostgreSQL: its pool, the database stays for the next lab) and removes the temp dir. */
  async dispose(): Promise<void> {
    try {
      if (this.world) (this.store as Store).closeNow();
      else await this.store?.close();
    } catch {
      // already closed
    }
    this.temp.remove();
  }

  // -------------------------------------------------------------------------------------------
  // The flow

  /** Ends expired leases as the API does at startup, then registers, connects the Driver and creates its run (before any crash is armed). */
  async setup(): Promise<void> {
    if (this.options.store?.kind === "postgres") {
      await this.bootPg(this.options.store.url);
      await truncatePgStore(this.store);
      await resetLabAuditPg(this.store);
    }
    await this.runtime.reconciler.endExpiredLeases({ startup: true });
    const { driverToken } = await this.runtime.drivers.register({ name: "lab-driver" }, { kind: "enrollment" });
    const instance = await this.runtime.drivers.authenticate(driverToken);
    const { connectionId } = await this.runtime.drivers.connect(instance);
    this.driver = { token: driverToken, instanceId: instance.id, connectionId };
    this.runId = (await this.runtime.runs.createRun({ driverInstanceId: instance.id })).runId;
    if (this.profile === "lookup_only") await this.seedRetentionCanary();
  }

  /**
   * A fence-less provider's miss stands only once the adapter confirmed an older committed key of the
   * same tool (the retention canary, docs/DESIGN.md §4): one write that committed and completed, on a
   * Driver and run of its own (so the lab's run and its turn account stay as they were).
   */
  private async seedRetentionCanary(): Promise<void> {
    const { driverToken } = await this.runtime.drivers.register({ name: "lab-canary" }, { kind: "enrollment" });
    const instance = await this.runtime.drivers.authenticate(driverToken);
    const { connectionId } = await this.runtime.drivers.connect(instance);
    const { runId } = await this.runtime.runs.createRun({ driverInstanceId: instance.id });
    const args = { title: "canary" };
    const call = await this.runtime.runs.enqueueToolCall(runId, {
      serverId: SERVER,
      toolName: TOOL,
      arguments: args,
      requestId: "req-canary",
    });
    this.canaryEffectId = call.effectId;
    const env = await this.runtime.commands.nextCommand(instance, connectionId, 0);
    if (!env) throw new Error("the canary command was not delivered");
    await this.runtime.commands.updateCommand(instance, env.commandId, { connectionId, status: "accepted" });
    const claim = await this.runtime.ledger.claim(instance, connectionId, env.commandId);
    if (claim.kind !== "execute") throw new Error(`canary: expected execute, got ${claim.kind}`);
    const committed = await this.double.commit(claim.idempotencyKey, args);
    if (committed.status !== "committed") throw new Error(`canary: provider ${committed.status}`);
    await this.runtime.ledger.complete(instance, call.effectId, {
      connectionId,
      attempt: claim.attempt,
      result: toMcpExecuteCommandResult(committed.result, { requestId: "req-canary", serverId: SERVER, toolName: TOOL }),
      receipt: null,
    });
  }

  /** Arms a crash at the k-th durable write from now. */
  armWrite(plan: CrashPlan): void {
    this.injector.writes = 0;
    this.injector.arm(plan);
  }

  private point(name: CrashPoint, at: CrashPoint | undefined): void {
    if (name === at) throw new SimulatedCrash(name);
  }

  /**
   * The happy path of one tool call: enqueue (intent) → deliver → accept → claim → provider call →
   * complete (result persisted) → terminal update; crashes at `at` (a named point) or wherever the
   * armed injector fires. Returns normally when the flow finished.
   */
  async runFlow(at?: CrashPoint): Promise<void> {
    if (at === "before_intent") this.injector.armNext();
    const call = await this.runtime.runs.enqueueToolCall(this.runId!, {
      serverId: SERVER,
      toolName: TOOL,
      arguments: { title: "Disk full" },
      requestId: "req-1",
    });
    this.facts.commandId = call.commandId;
    const eff = await this.effectOfCommand(call.commandId);
    this.facts.effectId = eff.id;
    this.facts.key = eff.idempotency_key;
    this.point("after_intent", at);
    const env = await this.deliver();
    if (!env) throw new Error("the command was not delivered");
    await this.handle(env, at);
  }

  /** Delivers the next command on the Driver's connection (null when none). */
  async deliver(): Promise<DriverCommandEnvelope | null> {
    const d = this.driver!;
    return this.runtime.commands.nextCommand(await this.runtime.drivers.authenticate(d.token), d.connectionId, 0);
  }

  /** The Driver's handling of one command (mirrors apps/driver `handleMcpExecuteCommand`). */
  async handle(env: DriverCommandEnvelope, at?: CrashPoint): Promise<void> {
    const d = this.driver!;
    const instance = () => this.runtime.drivers.authenticate(d.token);
    if (env.status === "queued" || env.status === "delivered") {
      const acc = await this.runtime.commands.updateCommand(await instance(), env.commandId, {
        connectionId: d.connectionId,
        status: "accepted",
      });
      if (acc.outcome === "rejected") return;
    } else if (env.status !== "accepted") return;
    const claim = await this.runtime.ledger.claim(await instance(), d.connectionId, env.commandId);
    await this.afterClaim(env, claim, at);
  }

  private async afterClaim(env: DriverCommandEnvelope, claim: EffectClaim, at?: CrashPoint): Promise<void> {
    const d = this.driver!;
    const instance = () => this.runtime.drivers.authenticate(d.token);
    const payload = env.payload;
    switch (claim.kind) {
      case "completed":
        await this.runtime.commands.updateCommand(await instance(), env.commandId, {
          connectionId: d.connectionId,
          status: "completed",
          result: claim.result,
        });
        return;
      case "unknown":
        await this.runtime.commands.updateCommand(await instance(), env.commandId, {
          connectionId: d.connectionId,
          status: "failed",
          error: effectUnknownError(claim.effectId),
        });
        return;
      case "not_executed":
        await this.runtime.commands.updateCommand(await instance(), env.commandId, {
          connectionId: d.connectionId,
          status: "failed",
          error: effectNotExecutedError(claim.effectId),
        });
        return;
      case "execute":
        break;
    }
    this.point("after_claim", at);
    const args = JSON.parse(payload.argumentsJson) as Record<string, unknown>;
    const sent = this.send(
      claim.idempotencyKey,
      args,
      at === "reconcile_after_lookup_before_persist" ? "lost" : this.behaviour === "late_commit" ? "late" : "now",
    );
    if (at === "after_provider_commit_before_response") {
      await sent.catch(() => undefined);
      throw new SimulatedCrash(at);
    }
    let tool: McpToolResult;
    try {
      tool = await sent;
    } catch {
      // the transport broke or the call timed out: fate unknown
      await this.runtime.ledger.markUnknown(await instance(), claim.effectId, {
        connectionId: d.connectionId,
        attempt: claim.attempt,
        reason: "mcp_call_failed: lab",
      });
      await this.runtime.commands.updateCommand(await instance(), env.commandId, {
        connectionId: d.connectionId,
        status: "failed",
        error: effectUnknownError(claim.effectId),
      });
      if (at === "reconcile_after_lookup_before_persist") {
        this.crashAfterLookup = true;
        await this.runtime.reconciler.reconcile(claim.effectId, "sweep");
      }
      return;
    }
    this.point("after_response_before_persist", at);
    const result: McpExecuteCommandResult = toMcpExecuteCommandResult(tool, payload);
    await this.runtime.ledger.complete(await instance(), claim.effectId, {
      connectionId: d.connectionId,
      attempt: claim.attempt,
      result,
      receipt: tool._meta ?? null,
    });
    this.point("after_persist_before_receipt", at);
    await this.runtime.commands.updateCommand(await instance(), env.commandId, {
      connectionId: d.connectionId,
      status: "completed",
      result,
    });
  }

  /**
   * One provider send with the idempotency key: `now` (answered at once), `lost` (applied, answer
   * lost), `late` (nobody answers; the provider applies it {@link LATE_COMMIT_MS} later on the clock).
   */
  send(key: string, args: Record<string, unknown>, mode: "now" | "lost" | "late"): Promise<McpToolResult> {
    this.facts.sends.set(key, (this.facts.sends.get(key) ?? 0) + 1);
    const record = (r: Awaited<ReturnType<ProviderDouble["commit"]>>) => {
      if (r.status === "committed" && (!r.replayed || this.profile !== "dedupe_lookup")) {
        this.facts.commits.set(key, (this.facts.commits.get(key) ?? 0) + 1);
        this.facts.results.set(key, r.result);
      }
      return r;
    };
    if (mode === "late") {
      void this.double.commit(key, args, { delayMs: LATE_COMMIT_MS }).then(record, () => undefined);
      return Promise.reject(new Error("tools/call timed out"));
    }
    return this.double
      .commit(key, args)
      .then(record)
      .then((r) => {
        if (mode === "lost") throw new Error("response lost");
        if (r.status !== "committed") throw new Error(`provider ${r.status}`);
        return r.result;
      });
  }

  /**
   * Brings the flow to an `unknown` effect whose provider write committed but whose answer was
   * lost (`late_commit`: the write lands later), the Driver having marked it unknown and failed
   * the command. Returns the effect id.
   */
  async toUnknownEffect(): Promise<string> {
    const call = await this.runtime.runs.enqueueToolCall(this.runId!, {
      serverId: SERVER,
      toolName: TOOL,
      arguments: { title: "Disk full" },
      requestId: "req-1",
    });
    const eff = await this.effectOfCommand(call.commandId);
    Object.assign(this.facts, { effectId: eff.id, commandId: call.commandId, key: eff.idempotency_key });
    const env = (await this.deliver())!;
    const d = this.driver!;
    const instance = await this.runtime.drivers.authenticate(d.token);
    await this.runtime.commands.updateCommand(instance, env.commandId, { connectionId: d.connectionId, status: "accepted" });
    const claim = await this.runtime.ledger.claim(instance, d.connectionId, env.commandId);
    if (claim.kind !== "execute") throw new Error(`expected execute, got ${claim.kind}`);
    await this.send(claim.idempotencyKey, { title: "Disk full" }, this.behaviour === "late_commit" ? "late" : "lost").catch(
      () => undefined,
    );
    await this.runtime.ledger.markUnknown(instance, claim.effectId, {
      connectionId: d.connectionId,
      attempt: claim.attempt,
      reason: "mcp_call_failed: lab",
    });
    await this.runtime.commands.updateCommand(instance, env.commandId, {
      connectionId: d.connectionId,
      status: "failed",
      error: effectUnknownError(claim.effectId),
    });
    return claim.effectId;
  }

  /**
   * R1: two reconcilers (sweep and operator triggers) start on one `unknown` effect; lookups are
   * held until both started. Returns both results' kinds and the lookups they made.
   */
  async twoReconcilers(effectId: string): Promise<{ kinds: string[]; lookups: number; concurrentLookups: number }> {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    this.gate = () => held;
    const before = this.facts.lookups;
    const a = this.runtime.reconciler.reconcile(effectId, "sweep");
    const b = this.runtime.reconciler.reconcile(effectId, "operator");
    // Hold the gate until one reconciler is inside its lookup (it holds the lease) and the other has
    // answered: on a real PostgreSQL server the two lease transactions take round trips, so a fixed
    // number of event-loop turns is not enough. Polled with a generous real-time deadline.
    const deadline = Date.now() + 20_000;
    if (this.profile !== "neither") {
      while (this.facts.lookups === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      if (this.facts.lookups > before) await Promise.race([a, b]);
    } else await this.flush();
    release();
    const results = await Promise.all([a, b]);
    this.gate = null;
    return { kinds: results.map((r) => r.kind), lookups: this.facts.lookups - before, concurrentLookups: this.facts.maxConcurrentLookups };
  }

  /**
   * R2: the Driver claims `execute` and stalls; it restarts (same instance, new connection), the
   * redelivery fences the effect (inline lookup when bound); then the stalled executor resumes:
   * it sends the write (a fenced key refuses it) and reports its result on its old connection.
   * Returns the stale report's answer (`rejected`/`superseded`/an error code) and the terminal update's.
   */
  async stalledExecutor(): Promise<{ complete: string; update: string }> {
    const call = await this.runtime.runs.enqueueToolCall(this.runId!, {
      serverId: SERVER,
      toolName: TOOL,
      arguments: { title: "Disk full" },
      requestId: "req-1",
    });
    const eff = await this.effectOfCommand(call.commandId);
    Object.assign(this.facts, { effectId: eff.id, commandId: call.commandId, key: eff.idempotency_key });
    const env = (await this.deliver())!;
    const zombie = { ...this.driver! };
    const zInstance = await this.runtime.drivers.authenticate(zombie.token);
    await this.runtime.commands.updateCommand(zInstance, env.commandId, { connectionId: zombie.connectionId, status: "accepted" });
    const claim = await this.runtime.ledger.claim(zInstance, zombie.connectionId, env.commandId);
    if (claim.kind !== "execute") throw new Error(`expected execute, got ${claim.kind}`);
    await this.reconnectAndDrain(); // the restarted Driver: redelivery fences (and looks up)
    const code = (e: unknown) => (e as { code?: string }).code ?? String(e);
    let tool: McpToolResult | null = null;
    try {
      tool = await this.send(claim.idempotencyKey, { title: "Disk full" }, this.behaviour === "late_commit" ? "late" : "now");
    } catch {
      tool = null;
    }
    let complete = "not_sent";
    const inst = await this.runtime.drivers.authenticate(zombie.token);
    try {
      complete = tool
        ? (
            await this.runtime.ledger.complete(inst, claim.effectId, {
              connectionId: zombie.connectionId,
              attempt: claim.attempt,
              result: toMcpExecuteCommandResult(tool, env.payload),
              receipt: null,
            })
          ).outcome
        : (
            await this.runtime.ledger.markUnknown(inst, claim.effectId, {
              connectionId: zombie.connectionId,
              attempt: claim.attempt,
              reason: "late",
            })
          ).outcome;
    } catch (e) {
      complete = code(e);
    }
    let update: string;
    try {
      update = (
        await this.runtime.commands.updateCommand(inst, env.commandId, {
          connectionId: zombie.connectionId,
          status: "failed",
          error: effectUnknownError(claim.effectId),
        })
      ).outcome;
    } catch (e) {
      update = code(e);
    }
    return { complete, update };
  }

  // -------------------------------------------------------------------------------------------
  // Recovery

  /** The same Driver instance reconnects (new connection) and handles every redelivered command. */
  async reconnectAndDrain(): Promise<void> {
    const d = this.driver;
    if (!d) return;
    try {
      const instance = await this.runtime.drivers.authenticate(d.token);
      const { connectionId } = await this.runtime.drivers.connect(instance);
      this.driver = { ...d, connectionId };
    } catch {
      this.driver = null; // finalized: it would register anew with no commands
      return;
    }
    for (let i = 0; i < 10; i++) {
      const env = await this.deliver();
      if (!env) return;
      await this.handle(env);
    }
  }

  /** Lets queued callbacks run (late commits scheduled on the manual clock fire inside `advance`). */
  async flush(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
  }

  /**
   * Recovery after a crash (or the end of the flow): `reconnect` → the Driver reconnects and drains
   * its redeliveries, then finalizes itself; `driver_gone` → its heartbeat expires and the sweep
   * finalizes it. Faults hold during the first sweeps; then quiescence: faults off, the clock moves
   * past every window and backoff, the sweep runs until nothing changes.
   */
  async recover(mode: RecoveryMode): Promise<void> {
    // crashes are injected into the flow only; recovery runs unarmed
    this.injector.disarm();
    this.crashAfterLookup = false;
    if (mode === "reconnect") {
      await this.reconnectAndDrain();
      if (this.driver) await this.runtime.repair.finalize(this.driver.instanceId, "driver_request");
    } else {
      this.clock.advance(HEARTBEAT_TTL_MS + 1);
      await this.flush();
    }
    for (let i = 0; i < 2; i++) {
      await this.runtime.sweep.sweepOnce();
      this.clock.advance(1_500);
      await this.flush();
    }
    this.faultsOn = false;
    for (let i = 0; i < 8; i++) {
      this.clock.advance(10_000);
      await this.flush();
      await this.runtime.sweep.sweepOnce();
    }
    if (this.injector.crashed) throw new Error(`a simulated crash fired during recovery: ${this.injector.crashed.message}`);
  }
}

/** Runs `fn`; a {@link SimulatedCrash} crashes the lab (restart on the same file) and returns its text. */
export async function crashing(lab: CrashLab, fn: () => Promise<void>): Promise<string | null> {
  try {
    await fn();
    return null;
  } catch (error) {
    if (!isSimulatedCrash(error)) throw error;
    await lab.crash(error.message);
    return error.message;
  }
}
