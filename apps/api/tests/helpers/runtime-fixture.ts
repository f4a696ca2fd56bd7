import pino from "pino";
import { openStore, type Store } from "../../src/platform/db/database.js";
import { createRuntime, type Runtime } from "../../src/composition-root.js";
import type { DriverInstanceRow } from "../../src/modules/ledger/infrastructure/driver-instance.repository.js";
import type { Clock } from "../../src/platform/clock.js";
import type { ReconciliationSettings } from "../../src/modules/reconciliation/application/reconciliation-settings.js";

/** A clock the test moves by hand (ms). */
export class ManualClock implements Clock {
  constructor(public now = Date.UTC(2026, 10, 29, 12, 0, 0)) {}
  nowMs(): number {
    return this.now;
  }
  advance(ms: number): void {
    this.now += ms;
  }
}

/** A runtime on an in-memory SQLite store, with a manual clock and a silent logger. */
export interface RuntimeFixture {
  store: Store;
  runtime: Runtime;
  clock: ManualClock;
  close(): void;
}

/** Creates a {@link RuntimeFixture}; `heartbeatTtlMs` defaults to 10 000 ms. */
export function createRuntimeFixture(opts: { heartbeatTtlMs?: number; dbFile?: string; reconciliation?: ReconciliationSettings } = {}): RuntimeFixture {
  const store = openStore(opts.dbFile ?? ":memory:");
  const clock = new ManualClock();
  const runtime = createRuntime({
    db: store.db,
    logger: pino({ level: "silent" }),
    heartbeatTtlMs: opts.heartbeatTtlMs ?? 10_000,
    clock,
    ...(opts.reconciliation ? { reconciliation: opts.reconciliation } : {}),
  });
  return { store, runtime, clock, close: () => store.close() };
}

/** A registered and connected Driver instance as the services see it. */
export interface ConnectedDriver {
  instance: DriverInstanceRow;
  token: string;
  connectionId: string;
}

/** Registers and connects a Driver instance. */
export function connectDriver(runtime: Runtime, name = "driver-a"): ConnectedDriver {
  const { driverToken } = runtime.drivers.register({ name }, { kind: "enrollment" });
  const instance = runtime.drivers.authenticate(driverToken);
  const { connectionId } = runtime.drivers.connect(instance);
  return { instance: runtime.drivers.authenticate(driverToken), token: driverToken, connectionId };
}

/** Reconnects the same instance (a restarted Driver process): a new connection id. */
export function reconnectDriver(runtime: Runtime, driver: ConnectedDriver): ConnectedDriver {
  const instance = runtime.drivers.authenticate(driver.token);
  const { connectionId } = runtime.drivers.connect(instance);
  return { instance: runtime.drivers.authenticate(driver.token), token: driver.token, connectionId };
}

/** Creates a run on `driver` and enqueues one `createIssue` tool call on server `tracker`. */
export function enqueueCreateIssue(runtime: Runtime, driver: ConnectedDriver, title = "Disk full on db-1") {
  const { runId, sessionId } = runtime.runs.createRun({ driverInstanceId: driver.instance.id });
  const call = runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { title, body: "seen at 03:12" }, requestId: "req-1" });
  return { runId, sessionId, ...call };
}

/** A provider result as a Driver would report it. */
export function issueResult(title = "Disk full on db-1") {
  return { outputText: `Created issue #1: ${title}`, requestId: "req-1", serverId: "tracker", toolName: "createIssue" };
}
