// What every runtime service shares: the store, clock, logger, instance id, long-poll wake-ups and runtime settings.
import type { Logger } from "pino";
import type { Store } from "../platform/db/store.port.js";
import type { Clock } from "../platform/clock.js";
import type { CommandWakeups } from "../platform/wakeups/command-wakeups.port.js";
import type { StoreBusyWatch } from "../platform/db/store-busy-watch.js";

/**
 * What every runtime service shares: the store (the async store port), the clock, the logger,
 * `instanceId` (this API instance's ULID, fresh per process: it names the holder of its work claims),
 * the long-poll wake-ups (`notifier`: in-process on SQLite, LISTEN/NOTIFY across instances on PostgreSQL),
 * the runtime settings (`heartbeatTtlMs`: a Driver whose last heartbeat is older is finalized by the
 * sweep; `sendDeadlineMs`: the send-by deadline of an `execute` claim, default 10 000 ms, see `decideDeadlineMissed` in effect-lifecycle.machine.ts; `driverUnconnectedTtlMs`: a registration that never connected is purged by the sweep this
 * long after it was made), `storeBusy` (when the API last found its own store busy: the sweep gives
 * Drivers a full heartbeat TTL after that), and `shutdown`, aborted when the API stops (long-polls then answer at once).
 */
export interface RuntimeContext {
  shutdown: AbortController;
  store: Store;
  clock: Clock;
  logger: Logger;
  instanceId: string;
  notifier: CommandWakeups;
  storeBusy: StoreBusyWatch;
  settings: { heartbeatTtlMs: number; sendDeadlineMs?: number; driverUnconnectedTtlMs: number };
}
