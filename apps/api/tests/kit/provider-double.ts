/**
 * The test world with reconciliation on and the in-memory provider double bound as server
 * `tracker` ({@link createDoubleWorld}): one manual clock drives the runtime and the double.
 */
import { expect } from "vitest";
import type { AdapterDeclaration, LookupRequest, ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import {
  createProviderDouble,
  createProviderDoubleAdapter,
  type ProviderDouble,
  type ProviderDoubleOptions,
} from "@mosoo/effect-reconciliation/testing";
import type { LookupBackoff } from "../../src/modules/reconciliation/domain/lookup-schedule.js";
import { createManualClock } from "./clock.js";
import { BOUND_SERVER, connectDriver, dispatchWrite, WRITE_TOOL, type DispatchedCall } from "./driver.js";
import {
  createTestWorld,
  openTestWorld,
  type AnyStoreWorld,
  type AnyStoreWorldOptions,
  type ReconciliationSettings,
  type TestWorld,
} from "./world.js";

/** Default lookup backoff of these tests (ms). */
const TEST_BACKOFF: LookupBackoff = { initialMs: 1_000, maxMs: 8_000, factor: 2 };

/**
 * Options of {@link createDoubleWorld}: the flag (default on), a SQLite file (default in-memory),
 * where the clock starts, the provider double's options (its clock is always the world's),
 * overrides of the double adapter's declaration, whether `tracker` is bound at all (default yes),
 * and the reconciliation settings: `lookupTimeoutMs` (default 2 000), `leaseMs` (30 000),
 * `concurrency` (4), `backoff` ({@link TEST_BACKOFF}), `maxLookups` (8); the runtime's
 * `heartbeatTtlMs` (default 3 600 000 ms, so no Driver goes stale by accident) and `sendDeadlineMs`
 * (default the runtime's 10 000 ms).
 */
export interface DoubleWorldOptions {
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
  sendDeadlineMs?: number;
  /** Per MCP server id, the repeat guard's window in ms (default: off). */
  repeatGuard?: ReadonlyMap<string, number>;
}

/**
 * A {@link TestWorld} with reconciliation wired to a provider double: moving the clock moves
 * everything but real-time lookup timeouts. `lookups` lists every call the runtime made to the
 * bound adapter (whatever the fault knob), in order.
 */
export interface DoubleWorld extends TestWorld {
  double: ProviderDouble;
  adapter: ReconciliationAdapter;
  settings: ReconciliationSettings;
  lookups: LookupRequest[];
}

/** Wraps `inner` so that every lookup request is pushed to `lookups` before it is answered. */
function recordingAdapter(inner: ReconciliationAdapter, lookups: LookupRequest[]): ReconciliationAdapter {
  return {
    declaration: inner.declaration,
    lookup(request, context) {
      lookups.push(request);
      return inner.lookup(request, context);
    },
  };
}

/** The clock, provider double, recording adapter and reconciliation settings of a double world (shared by both constructors). */
function doubleParts(opts: DoubleWorldOptions) {
  const clock = createManualClock(opts.startMs);
  const double = createProviderDouble({ ...opts.double, clock, toolName: WRITE_TOOL });
  const lookups: LookupRequest[] = [];
  const adapter = recordingAdapter(createProviderDoubleAdapter(double, opts.declaration), lookups);
  const settings: ReconciliationSettings = {
    enabled: opts.enabled ?? true,
    bindings: new Map(opts.bind === false ? [] : [[BOUND_SERVER, adapter]]),
    lookupTimeoutMs: opts.lookupTimeoutMs ?? 2_000,
    leaseMs: opts.leaseMs ?? 30_000,
    concurrency: opts.concurrency ?? 4,
    backoff: opts.backoff ?? TEST_BACKOFF,
    maxLookups: opts.maxLookups ?? 8,
  };
  const runtimeOpts = {
    clock,
    heartbeatTtlMs: opts.heartbeatTtlMs ?? 3_600_000,
    reconciliation: settings,
    ...(opts.sendDeadlineMs === undefined ? {} : { sendDeadlineMs: opts.sendDeadlineMs }),
    ...(opts.repeatGuard === undefined ? {} : { repeatGuard: opts.repeatGuard }),
  };
  return { double, adapter, settings, lookups, runtimeOpts };
}

/** Creates a {@link DoubleWorld} (SQLite). */
export function createDoubleWorld(opts: DoubleWorldOptions = {}): DoubleWorld {
  const { runtimeOpts, ...parts } = doubleParts(opts);
  const world = createTestWorld({ ...runtimeOpts, ...(opts.dbFile === undefined ? {} : { dbFile: opts.dbFile }) });
  return Object.assign(world, parts);
}

/** A {@link DoubleWorld} on a store of any kind ({@link openTestWorld}): same provider double, same settings. */
export interface AnyStoreDoubleWorld extends AnyStoreWorld {
  double: ProviderDouble;
  adapter: ReconciliationAdapter;
  settings: ReconciliationSettings;
  lookups: LookupRequest[];
}

/** Opens an {@link AnyStoreDoubleWorld} on `store` (a kind to open fresh, or an open store the caller owns); `dbFile` is ignored. */
export async function openDoubleWorld(
  opts: Omit<DoubleWorldOptions, "dbFile"> & Pick<AnyStoreWorldOptions, "store" | "prefix"> = {},
): Promise<AnyStoreDoubleWorld> {
  const { runtimeOpts, ...parts } = doubleParts(opts);
  const world = await openTestWorld({
    ...runtimeOpts,
    ...(opts.store === undefined ? {} : { store: opts.store }),
    ...(opts.prefix === undefined ? {} : { prefix: opts.prefix }),
  });
  return Object.assign(world, parts);
}

/** The provider receives the write under the effect's key with the same arguments (it commits; asserted). */
export async function commitAtProvider(fx: { double: ProviderDouble }, call: DispatchedCall): Promise<void> {
  const res = await fx.double.commit(call.idempotencyKey, call.args);
  expect(res.status).toBe("committed");
}

/**
 * A write that committed at the provider and completed as `succeeded` (`provider_result`) on its own
 * Driver and run, dispatched now: the retention canary a later fence-less miss of the same server and
 * tool needs (docs/DESIGN.md §4). Its Driver stays connected; its command is left accepted. `sendWithinMs`:
 * the world's send-by deadline when it is not the default 10 000 ms.
 */
export async function seedRetentionCanary(
  fx: Pick<DoubleWorld, "runtime" | "clock" | "double">,
  opts: { sendWithinMs?: number } = {},
): Promise<DispatchedCall> {
  const driver = await connectDriver(fx.runtime, "canary-driver");
  const call = await dispatchWrite(fx, { driver, args: { title: "canary" }, requestId: "req-canary", ...opts });
  await commitAtProvider(fx, call);
  const done = await fx.runtime.ledger.complete(driver.instance, call.effectId, {
    connectionId: driver.connectionId,
    attempt: 1,
    result: { outputText: "created", requestId: "req-canary", serverId: BOUND_SERVER, toolName: WRITE_TOOL },
    receipt: null,
  });
  expect(done).toMatchObject({ outcome: "applied", status: "succeeded" });
  return call;
}

/**
 * Makes the bound adapter's lookups wait until the returned `open()` is called: a reconciler started
 * meanwhile holds the effect's lease while its lookup waits at the gate (a race made an event).
 */
export function gateLookups(fx: { adapter: ReconciliationAdapter }): () => void {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const inner = fx.adapter.lookup.bind(fx.adapter);
  fx.adapter.lookup = async (req, ctx) => {
    await gate;
    return inner(req, ctx);
  };
  return open;
}
