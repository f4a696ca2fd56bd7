// Wakes long-polling Drivers across API instances on one PostgreSQL database, with LISTEN/NOTIFY delivered at commit.
import { sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import pg from "pg";
import pRetry, { AbortError } from "p-retry";
import type { Logger } from "pino";
import type { CommandWakeups, WakeupTx } from "../../wakeups/command-wakeups.port.js";
import { InProcessWakeups } from "../../wakeups/in-process-wakeups.js";

/** The one channel every API instance LISTENs on; the payload is the Driver instance id (a ULID, far below the 8000-byte payload limit). */
const COMMAND_WAKEUP_CHANNEL = "mosoo_command_queued";

/** Options of {@link PgCommandWakeups}. */
export interface PgCommandWakeupsOptions {
  /** The database URL (the same database as the store). */
  connectionString: string;
  /** `application_name` of the listener connection (shows in `pg_stat_activity`); default `mosoo-command-wakeups`. */
  applicationName?: string;
  /** Reconnect backoff (ms): first delay, and the cap (p-retry, factor 2, randomized). Defaults 100 and 5 000. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  logger?: Pick<Logger, "warn" | "info">;
}

/**
 * {@link CommandWakeups} across API instances on one PostgreSQL database (docs/DESIGN.md §11), with
 * `LISTEN/NOTIFY`:
 * - {@link notifyInTransaction} runs `SELECT pg_notify('mosoo_command_queued', <id>)` on the queuing
 *   transaction's own connection, so PostgreSQL delivers it to every listener at COMMIT (and never
 *   after a ROLLBACK); {@link notifyCommitted} also wakes this instance's waiters at once;
 * - one dedicated `pg.Client` (not a pool connection) LISTENs on the channel and wakes the local
 *   waiters of the notified id ({@link InProcessWakeups});
 * - when that connection drops, it reconnects with exponential backoff (p-retry, until
 *   {@link close}); once it LISTENs again it wakes EVERY local waiter once, so a notification sent
 *   while it was away is never waited out (each waiter reads the store again);
 * - {@link start} resolves once the first LISTEN is in place (call it before serving long-polls);
 *   it retries like a reconnect and rejects only when {@link close} is called first.
 */
export class PgCommandWakeups implements CommandWakeups {
  private readonly local = new InProcessWakeups();
  private client: pg.Client | undefined;
  private reconnecting: Promise<void> | undefined;
  private readonly closed = new AbortController();
  /** How many times the listener connection was (re)established; tests wait on it. */
  connects = 0;

  constructor(private readonly opts: PgCommandWakeupsOptions) {}

  /** Connects and LISTENs (retried with backoff); resolves once listening. */
  start(): Promise<void> {
    return this.connectWithRetry();
  }

  async notifyInTransaction(tx: WakeupTx, driverInstanceId: string): Promise<void> {
    await (tx.db as NodePgDatabase).execute(sql`SELECT pg_notify(${COMMAND_WAKEUP_CHANNEL}, ${driverInstanceId})`);
  }

  notifyCommitted(driverInstanceId: string): void {
    this.local.notifyCommitted(driverInstanceId);
  }

  wait(driverInstanceId: string, waitMs: number, signals: readonly AbortSignal[] = []): Promise<void> {
    return this.local.wait(driverInstanceId, waitMs, signals);
  }

  /** How many waits are pending on this instance. */
  pendingWaits(): number {
    return this.local.pendingWaits();
  }

  /** Stops reconnecting and closes the listener connection. Idempotent. Waiters are left to their timers and signals. */
  async close(): Promise<void> {
    this.closed.abort();
    const client = this.client;
    this.client = undefined;
    await this.reconnecting?.catch(() => undefined);
    await client?.end().catch(() => undefined);
  }

  private connectWithRetry(): Promise<void> {
    if (this.reconnecting) return this.reconnecting;
    const attempt: Promise<void> = pRetry(() => this.connectOnce(), {
      retries: Number.POSITIVE_INFINITY,
      factor: 2,
      minTimeout: this.opts.reconnectMinMs ?? 100,
      maxTimeout: this.opts.reconnectMaxMs ?? 5_000,
      randomize: true,
      signal: this.closed.signal,
      onFailedAttempt: ({ error, attemptNumber }) =>
        this.opts.logger?.warn({ err: String(error), attemptNumber }, "wakeups.listen_failed: retrying the LISTEN connection"),
    }).finally(() => {
      if (this.reconnecting === attempt) this.reconnecting = undefined;
    });
    this.reconnecting = attempt;
    return attempt;
  }

  private async connectOnce(): Promise<void> {
    if (this.closed.signal.aborted) throw new AbortError("closed");
    const client = new pg.Client({
      connectionString: this.opts.connectionString,
      application_name: this.opts.applicationName ?? "mosoo-command-wakeups",
    });
    // Until it is current, a failing client only fails this attempt (p-retry tries again).
    client.on("error", () => undefined);
    try {
      await client.connect();
      await client.query(`LISTEN ${COMMAND_WAKEUP_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed.signal.aborted) {
      await client.end().catch(() => undefined);
      throw new AbortError("closed");
    }
    client.on("notification", (msg) => {
      if (msg.channel === COMMAND_WAKEUP_CHANNEL && msg.payload) this.local.notifyCommitted(msg.payload);
    });
    const lost = (err?: unknown) => this.onLost(client, err);
    client.on("error", lost);
    client.on("end", () => lost());
    this.client = client;
    this.reconnecting = undefined; // a loss from here on starts a new reconnect
    this.connects += 1;
    // Listening again: whatever was notified while no LISTEN was in place is found by reading the store.
    this.local.wakeAll();
  }

  private onLost(client: pg.Client, err?: unknown): void {
    if (this.client !== client || this.closed.signal.aborted) return;
    this.client = undefined;
    this.opts.logger?.warn({ err: err === undefined ? undefined : String(err) }, "wakeups.listen_lost: reconnecting");
    client.end().catch(() => undefined);
    this.connectWithRetry().catch(() => undefined);
  }
}
