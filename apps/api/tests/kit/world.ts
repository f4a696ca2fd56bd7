/**
 * The test world: a migrated store, the manual clock and the runtime built on them, with a silent
 * logger. Every API test that needs a runtime gets it here ({@link createTestWorld}); the provider
 * double and the real fixture provider are added on top (provider-double.ts, fixture-provider.ts).
 */
import pino from "pino";
import { createRuntime, type Runtime } from "../../src/composition-root.js";
import type { ReconciliationSettings } from "../../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { createManualClock, type ManualClock } from "./clock.js";
import { openStoreOfKind, openTestStore, type OpenedStore, type PortStore, type Store, type StoreKind } from "./store.js";

export type { Runtime, ReconciliationSettings };

/**
 * Options of {@link createTestWorld}; every one is optional:
 * - `dbFile`: the SQLite file (default `:memory:`; a file is needed for `restart()`);
 * - `clock`: a clock made by the caller (e.g. shared with a provider double first); else a new one
 *   at `startMs` (default START_MS);
 * - `heartbeatTtlMs` (default 10 000 ms), `sendDeadlineMs` (default the runtime's 10 000 ms),
 *   `driverUnconnectedTtlMs` (default the runtime's): the runtime's settings;
 * - `reconciliation`: the reconciliation settings (default the runtime's: off);
 * - `onStoreOpened`: runs on each store right after it is opened and migrated, before the runtime
 *   is built (test-only triggers, a crash injector).
 */
export interface TestWorldOptions {
  dbFile?: string;
  clock?: ManualClock;
  startMs?: number;
  heartbeatTtlMs?: number;
  sendDeadlineMs?: number;
  driverUnconnectedTtlMs?: number;
  reconciliation?: ReconciliationSettings;
  /** Per MCP server id, the repeat guard's window in ms (default: off for every server). */
  repeatGuard?: ReadonlyMap<string, number>;
  onStoreOpened?: (store: Store) => void;
}

/**
 * A runtime on a migrated store with a manual clock. `store` and `runtime` are replaced by
 * `restart()`: the "API process" dies (the store is closed; its memory is gone), a new one opens
 * the same file and, as `server.ts` does at startup, ends the leases that expired (a live one is left to expire: docs/DESIGN.md §11) (rejects
 * with Error on an in-memory world). `close()` closes the store at once (`closeNow`, as a process exit would).
 */
export interface TestWorld {
  store: Store;
  runtime: Runtime;
  clock: ManualClock;
  restart(): Promise<void>;
  close(): void;
}

/** Builds a runtime the way the API does, on `store` and `clock`, with a silent logger. */
export function buildRuntime(
  store: PortStore,
  clock: ManualClock,
  opts: Omit<TestWorldOptions, "dbFile" | "clock" | "startMs" | "onStoreOpened"> = {},
): Runtime {
  return createRuntime({
    store,
    logger: pino({ level: "silent" }),
    heartbeatTtlMs: opts.heartbeatTtlMs ?? 10_000,
    ...(opts.driverUnconnectedTtlMs === undefined ? {} : { driverUnconnectedTtlMs: opts.driverUnconnectedTtlMs }),
    ...(opts.sendDeadlineMs === undefined ? {} : { sendDeadlineMs: opts.sendDeadlineMs }),
    clock,
    ...(opts.reconciliation ? { reconciliation: opts.reconciliation } : {}),
    ...(opts.repeatGuard ? { repeatGuard: opts.repeatGuard } : {}),
  });
}

/** Creates a {@link TestWorld}. */
export function createTestWorld(opts: TestWorldOptions = {}): TestWorld {
  const file = opts.dbFile ?? ":memory:";
  const clock = opts.clock ?? createManualClock(opts.startMs);
  const boot = (): { store: Store; runtime: Runtime } => {
    const store = openTestStore(file);
    opts.onStoreOpened?.(store);
    return { store, runtime: buildRuntime(store, clock, opts) };
  };
  const world: TestWorld = {
    ...boot(),
    clock,
    async restart() {
      if (file === ":memory:") throw new Error("restart() needs a file-backed world (dbFile)");
      try {
        world.store.closeNow();
      } catch {
        // already closed
      }
      Object.assign(world, boot());
      await world.runtime.reconciler.endExpiredLeases({ startup: true });
    },
    close: () => world.store.closeNow(),
  };
  return world;
}

/**
 * Options of {@link openTestWorld}: those of {@link createTestWorld} except the SQLite-only ones
 * (`dbFile`, `onStoreOpened`), plus `store`: the kind of store to open fresh (default "sqlite"; each
 * PostgreSQL world gets its own database, `prefix` names it), or an open store the caller owns
 * (reused between tests, e.g. emptied with `truncatePgStore`; `close()` leaves it open).
 */
export interface AnyStoreWorldOptions extends Omit<TestWorldOptions, "dbFile" | "onStoreOpened"> {
  store?: StoreKind | OpenedStore;
  prefix?: string;
}

/** A runtime on a store of any kind behind the port (no raw handle: read rows through `store.read`). `close()` ends the store when the world opened it. */
export interface AnyStoreWorld {
  kind: StoreKind;
  store: PortStore;
  runtime: Runtime;
  clock: ManualClock;
  close(): Promise<void>;
}

/** Opens an {@link AnyStoreWorld}: the same runtime as {@link createTestWorld}, on SQLite, PGlite or the real PostgreSQL server. */
export async function openTestWorld(opts: AnyStoreWorldOptions = {}): Promise<AnyStoreWorld> {
  const given = typeof opts.store === "object" ? opts.store : undefined;
  const opened = given ?? (await openStoreOfKind(typeof opts.store === "string" ? opts.store : "sqlite", opts.prefix));
  const clock = opts.clock ?? createManualClock(opts.startMs);
  return {
    kind: opened.kind,
    store: opened.store,
    runtime: buildRuntime(opened.store, clock, opts),
    clock,
    close: async () => {
      if (!given) await opened.close();
    },
  };
}
