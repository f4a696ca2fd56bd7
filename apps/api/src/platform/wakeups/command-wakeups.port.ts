/**
 * The unit of work a wake-up is queued in: a store transaction (`StoreTx`). Only
 * the PostgreSQL implementation reads it (its `db` is that dialect's query builder); typed loosely so
 * this port does not depend on a store.
 */
export interface WakeupTx {
  readonly db: unknown;
}

/**
 * Wakes long-polling Drivers when a command is queued for their instance (across instances:
 * `PgCommandWakeups` in pg-command-wakeups.ts). The database stays the source of truth: a wake-up only
 * shortens a wait, and a missed one costs at most one long-poll period (the waiter reads the store
 * again when its wait ends). A queuing service calls BOTH notify methods:
 * - {@link notifyInTransaction} inside the transaction that queues the command: on PostgreSQL a
 *   `pg_notify`, delivered to every instance at COMMIT and never if the transaction rolls back;
 *   in-process, nothing;
 * - {@link notifyCommitted} after that commit: wakes this instance's own waiters at once.
 * {@link wait} resolves (never rejects) when the Driver instance is woken, after `waitMs` (ms), or
 * when a signal aborts, whichever comes first; nothing of a wait (listener, timer) outlives it.
 * {@link close} stops cross-instance delivery (the PostgreSQL listener connection); idempotent.
 */
export interface CommandWakeups {
  notifyInTransaction(tx: WakeupTx, driverInstanceId: string): Promise<void>;
  notifyCommitted(driverInstanceId: string): void;
  wait(driverInstanceId: string, waitMs: number, signals?: readonly AbortSignal[]): Promise<void>;
  close(): Promise<void>;
}
