import pino from "pino";
import { expect } from "vitest";
import type { EffectClaim } from "@mosoo/contracts";
import type { AdapterDeclaration, LookupRequest, ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import {
  createManualClock,
  createProviderDouble,
  createProviderDoubleAdapter,
  type ManualClock as DoubleManualClock,
  type ProviderDouble,
  type ProviderDoubleOptions,
} from "@mosoo/effect-reconciliation/testing";
import { openStore, type Store } from "../../src/platform/db/database.js";
import { createRuntime, type Runtime } from "../../src/composition-root.js";
import type { ReconciliationSettings } from "../../src/modules/reconciliation/application/reconciliation-settings.js";
import type { LookupBackoff } from "../../src/modules/reconciliation/domain/lookup-schedule.js";
import { connectDriver, reconnectDriver, type ConnectedDriver } from "./runtime-fixture.js";

/** The server the provider double is bound to, and the write tool it serves. */
export const BOUND_SERVER = "tracker";
export const WRITE_TOOL = "createIssue";
/** Start of the shared clock (ms); same instant as the runtime fixture's ManualClock. */
export const START_MS = Date.UTC(2026, 10, 29, 12, 0, 0);
/** Default backoff of these tests (ms). */
export const TEST_BACKOFF: LookupBackoff = { initialMs: 1_000, maxMs: 8_000, factor: 2 };

/**
 * Options of {@link createReconciliationFixture}: the flag (default on), a SQLite file (default
 * in-memory), the provider double's options (its clock is always the shared one), overrides of the
 * double adapter's declaration, whether `tracker` is bound at all, and the reconciliation settings.
 */
export interface ReconciliationFixtureOptions {
  enabled?: boolean;
  dbFile?: string;
  startMs?: number;
  double?: Omit<ProviderDoubleOptions, "clock" | "toolName">;
  declaration?: Partial<AdapterDeclaration>;
  bind?: boolean;
  lookupTimeoutMs?: number;
  leaseMs?: number;
  concurrency?: number;
  backoff?: LookupBackoff;
  maxLookups?: number;
  heartbeatTtlMs?: number;
  /** Send-by deadline of execute claims (ms; default the runtime's 10 000). */
  sendDeadlineMs?: number;
}

/**
 * A runtime with reconciliation wired to a provider double: one manual clock drives both the
 * runtime (`nowMs`) and the double (`now`, its timers: lookup delay, late commits), so moving it
 * moves everything but real-time lookup timeouts. `lookups` lists every call the runtime made to
 * the bound adapter (whatever the fault knob), in order.
 */
export interface ReconciliationFixture {
  store: Store;
  runtime: Runtime;
  clock: DoubleManualClock;
  double: ProviderDouble;
  adapter: ReconciliationAdapter;
  settings: ReconciliationSettings;
  lookups: LookupRequest[];
  close(): void;
}

export function createReconciliationFixture(opts: ReconciliationFixtureOptions = {}): ReconciliationFixture {
  const clock = createManualClock(opts.startMs ?? START_MS);
  const double = createProviderDouble({ ...opts.double, clock, toolName: WRITE_TOOL });
  const inner = createProviderDoubleAdapter(double, opts.declaration);
  const lookups: LookupRequest[] = [];
  const adapter: ReconciliationAdapter = {
    declaration: inner.declaration,
    lookup(request, context) {
      lookups.push(request);
      return inner.lookup(request, context);
    },
  };
  const settings: ReconciliationSettings = {
    enabled: opts.enabled ?? true,
    bindings: new Map(opts.bind === false ? [] : [[BOUND_SERVER, adapter]]),
    lookupTimeoutMs: opts.lookupTimeoutMs ?? 2_000,
    leaseMs: opts.leaseMs ?? 30_000,
    concurrency: opts.concurrency ?? 4,
    backoff: opts.backoff ?? TEST_BACKOFF,
    maxLookups: opts.maxLookups ?? 8,
  };
  const store = openStore(opts.dbFile ?? ":memory:");
  const runtime = createRuntime({
    db: store.db,
    logger: pino({ level: "silent" }),
    heartbeatTtlMs: opts.heartbeatTtlMs ?? 3_600_000,
    ...(opts.sendDeadlineMs === undefined ? {} : { sendDeadlineMs: opts.sendDeadlineMs }),
    clock: { nowMs: () => clock.now() },
    reconciliation: settings,
  });
  return { store, runtime, clock, double, adapter, settings, lookups, close: () => store.close() };
}

/** Arguments of the write (the effect's fingerprint is over these). */
export function issueArgs(title = "Disk full on db-1"): Record<string, unknown> {
  return { title, body: "seen at 03:12", labels: ["ops"] };
}

/** A tool call that reached `execute`: the Driver may call the provider now. */
export interface DispatchedCall {
  driver: ConnectedDriver;
  runId: string;
  sessionId: string;
  commandId: string;
  effectId: string;
  idempotencyKey: string;
  args: Record<string, unknown>;
  dispatchedAtMs: number;
}

/** Delivers the next command on `driver`'s connection, accepts it and claims its effect. */
export async function deliverAcceptClaim(runtime: Runtime, driver: ConnectedDriver): Promise<{ commandId: string; claim: EffectClaim }> {
  const env = await runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
  if (!env) throw new Error("no command was delivered");
  if (env.status !== "accepted") {
    expect(runtime.commands.updateCommand(driver.instance, env.commandId, { connectionId: driver.connectionId, status: "accepted" }).outcome).toBe("applied");
  }
  return { commandId: env.commandId, claim: await runtime.ledger.claim(driver.instance, driver.connectionId, env.commandId) };
}

/**
 * As production: a Driver registers and connects, a run enqueues one write (`serverId`/`toolName`,
 * default the bound `tracker`/`createIssue`), the Driver receives it, accepts it and claims
 * `execute` (attempt 1). Nothing has reached the provider yet: use `commitAtProvider` for that.
 */
export async function dispatchWrite(
  fx: Pick<ReconciliationFixture, "runtime" | "clock">,
  opts: { serverId?: string; toolName?: string; args?: Record<string, unknown>; driver?: ConnectedDriver; sendWithinMs?: number } = {},
): Promise<DispatchedCall> {
  const { runtime } = fx;
  const driver = opts.driver ?? connectDriver(runtime);
  const args = opts.args ?? issueArgs();
  const { runId, sessionId } = runtime.runs.createRun({ driverInstanceId: driver.instance.id });
  const call = runtime.runs.enqueueToolCall(runId, { serverId: opts.serverId ?? BOUND_SERVER, toolName: opts.toolName ?? WRITE_TOOL, arguments: args });
  const { claim } = await deliverAcceptClaim(runtime, driver);
  expect(claim).toEqual({ kind: "execute", effectId: call.effectId, attempt: 1, idempotencyKey: call.idempotencyKey, sendWithinMs: opts.sendWithinMs ?? 10_000 });
  return { driver, runId, sessionId, commandId: call.commandId, effectId: call.effectId, idempotencyKey: call.idempotencyKey, args, dispatchedAtMs: fx.clock.now() };
}

/** The provider receives the write under the effect's key with the same arguments (it commits). */
export async function commitAtProvider(fx: Pick<ReconciliationFixture, "double">, call: DispatchedCall): Promise<void> {
  const res = await fx.double.commit(call.idempotencyKey, call.args);
  expect(res.status).toBe("committed");
}

/** Driver loss for good: explicit finalization repair (fences, reconciles eligible effects, settles commands). */
export function finalizeDriver(fx: Pick<ReconciliationFixture, "runtime">, call: DispatchedCall) {
  return fx.runtime.repair.finalize(call.driver.instance.id, "driver_request");
}

/** The same Driver instance restarts (new connection); the command is redelivered and claimed again. */
export async function redeliverAndClaim(fx: Pick<ReconciliationFixture, "runtime">, call: DispatchedCall): Promise<EffectClaim> {
  const restarted = reconnectDriver(fx.runtime, call.driver);
  const { commandId, claim } = await deliverAcceptClaim(fx.runtime, restarted);
  expect(commandId).toBe(call.commandId);
  return claim;
}

/** Yields to the event loop until `cond()` holds (at most ~500 turns); for work started without awaiting it. */
export async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((resolve) => setImmediate(resolve));
  if (!cond()) throw new Error("condition never held");
}
