// The unit of work both PostgreSQL stores share: BEGIN to COMMIT on one connection, whole-unit retry, observer seam, nesting refusal.
import pRetry from "p-retry";
import { isInUnitOfWork, runInUnitOfWork } from "../unit-of-work-scope.js";
import { traceUnitOfWork } from "../store-tracing.js";
import { isStoreWaitedOut, noteCommit, StoreBusyError } from "../store-busy.js";
import {
  StoreNestedTransactionError,
  type DurableWriteObserver,
  type Store,
  type StoreAvailabilityObserver,
  type StoreTx,
  type TransactionOptions,
} from "../store.port.js";
import { StoreCommitUnknownError, StoreTransactionAbortedError } from "../store-errors.js";
import { classifyPgError, isPgUniqueViolation } from "./pg-errors.js";

/**
 * The unit of work shared by the two PostgreSQL stores (`postgres-store.ts` on a `pg` pool,
 * `pglite-store.ts` on PGlite): BEGIN … `fn(tx)` … COMMIT on ONE connection, the retry of a whole
 * unit of work after a concurrency failure, the durable-write observer and the nested-call refusal.
 */

/**
 * Write transactions run at READ COMMITTED, asked for explicitly (a managed server may default to
 * another level). That is enough because no guarantee of the runtime rests on the isolation level:
 * - every state change is a compare-and-set `UPDATE … WHERE id = $1 AND status = $2 AND version = $3`
 *   (see `effectRepository.updateIfCurrent` in effect.repository.ts). Under READ COMMITTED an UPDATE that finds its row locked by a
 *   concurrent writer waits for it, then re-evaluates its WHERE on the NEWEST committed version
 *   (EvalPlanQual): the loser matches 0 rows and records `superseded`; two writers never both win;
 * - counters (`attempt_count`, `version`) are written by that same CAS, so a value computed from a
 *   stale read never lands;
 * - sequence numbers (a command's `seq`, a run event's `seq`) come from a counter column on the
 *   parent row (`driver_instances.last_command_seq`, `session_runs.last_event_seq`) bumped with
 *   `UPDATE … RETURNING` inside the inserting unit of work: the row lock serialises writers of one
 *   parent, so two never get the same value. The unique index on (parent, seq) stays as the last
 *   guard; should it ever refuse a row (23505), the unit of work is run again (`SEQUENCE_INDEXES`),
 *   so a duplicate is never committed and nothing is lost;
 * - the one-compensation-in-flight rule and idempotency keys are partial unique indexes.
 * What READ COMMITTED does not give, a consistent snapshot across several statements, no write
 * depends on: a read that decides a write is re-checked by that write's CAS.
 */
const BEGIN_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE";
/**
 * `Store.read` runs in a READ ONLY transaction at REPEATABLE READ: its statements share one snapshot
 * of committed rows (a list and its count agree), it never sees an uncommitted row of any other
 * transaction, a write in it fails (SQLSTATE 25006), and a read-only transaction never gets a
 * serialization failure. It takes no row locks, so it never blocks a writer.
 */
const BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/**
 * Retries of ONE unit of work that PostgreSQL rolled back for concurrency (40001
 * serialization_failure, 40P01 deadlock_detected) or whose connection was lost before COMMIT was
 * sent (55P03 lock_not_available is answered `StoreBusyError` at once: it already waited): 4 more attempts, 5 → 80 ms apart with jitter (two writers that
 * deadlocked must not retry in lock step). Nothing of the failed attempt was committed, so `fn`
 * runs again from the start on a fresh transaction. When they run out: `StoreBusyError` (503).
 */
const PG_CONFLICT_RETRY = { retries: 4, minTimeout: 5, factor: 2, maxTimeout: 80, randomize: true } as const;
/** Retries at startup (`{startup: true}`: migrations and startup work, nothing served yet): more patient. */
const PG_STARTUP_CONFLICT_RETRY = { retries: 8, minTimeout: 20, factor: 2, maxTimeout: 1_000, randomize: true } as const;

const CONNECTION_ERROR_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "ENOTCONN", "EHOSTUNREACH", "ECONNABORTED"]);
/** 57P01 admin_shutdown (pg_terminate_backend, a fast shutdown), 57P02 crash_shutdown, 57P03 cannot_connect_now. */
const SERVER_GONE_SQLSTATES = new Set(["57P01", "57P02", "57P03"]);

/**
 * True when `err` (or a `cause` of it: drizzle wraps driver errors) says the connection to the
 * server is gone: a socket error code, SQLSTATE class 08 (connection exception) or 57P01–57P03 (the
 * server ended the session), or `pg`'s own "Connection terminated" / "not queryable" errors, which
 * carry no code (the only test here that reads a message).
 */
function isConnectionLoss(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (CONNECTION_ERROR_CODES.has(code) || SERVER_GONE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)))
      return true;
    const message = (e as { message?: unknown }).message;
    if (typeof message === "string" && /^Connection terminated|is not queryable|Client was closed/.test(message)) return true;
  }
  return false;
}

/** 57014 query_canceled: the server cancelled a statement past `statement_timeout`. */
const QUERY_CANCELED = "57014";
/** 53300 too_many_connections: the server has no connection slot left. */
const TOO_MANY_CONNECTIONS = "53300";

/**
 * How a statement that outlived its bound failed: `client` when `pg`'s client-side `query_timeout`
 * fired ("Query read timeout": the server did not answer at all, e.g. frozen; the connection is in
 * an unknown protocol state and must be discarded), `server` for SQLSTATE 57014 (the server itself
 * cancelled it at `statement_timeout`; the connection is fine), else undefined.
 */
function timeoutKind(err: unknown): "client" | "server" | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    if ((e as { code?: unknown }).code === QUERY_CANCELED) return "server";
    const message = (e as { message?: unknown }).message;
    if (typeof message === "string" && message.startsWith("Query read timeout")) return "client";
  }
  return undefined;
}

/** True when `err` (an acquire failure) is the server refusing for want of connection slots (53300). */
function isOutOfConnections(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    if ((e as { code?: unknown }).code === TOO_MANY_CONNECTIONS) return true;
  }
  return false;
}

/** One connection of a unit of work, as the two drivers offer it. */
export interface PgConnection {
  /** Runs one statement without parameters; resolves with its command tag when the driver reports one. */
  query(text: string): Promise<{ command?: string | undefined }>;
  /** The unit-of-work handle (query builder, tables, prepared-query cache) bound to THIS connection. */
  readonly handle: StoreTx;
  /** An error the connection reported while no statement was running (the server went away). */
  readonly brokenBy: Error | undefined;
}

/** How a store lends connections to {@link PgUnitOfWork}. */
export interface PgConnectionSource {
  /** A connection for one unit of work (may wait; rejects with `StoreBusyError` when none comes in time). */
  acquire(): Promise<PgConnection>;
  /** Gives it back; `broken` (the connection failed) makes the source discard it instead of reusing it. */
  release(conn: PgConnection, broken: boolean): void;
  /** True when the driver cannot report the command tag of COMMIT (PGlite): the aborted-transaction check then runs a `SELECT 1` first. */
  readonly probeBeforeCommit: boolean;
}

/** A failed attempt that may run again (nothing of it committed). */
const retryable = new WeakSet<object>();

function retryableBusy(cause: unknown): StoreBusyError {
  const err = new StoreBusyError(false, { cause });
  retryable.add(err);
  return err;
}

/**
 * The shared machinery of the PostgreSQL stores: `transaction`, `read`, the observer seam, the
 * nested-call refusal and `close` bookkeeping. A store class extends it with its connection source.
 */
export abstract class PgUnitOfWork implements Pick<Store, "transaction" | "read" | "isUniqueViolation" | "observeDurableWrites"> {
  private readonly inFlight = new Set<Promise<unknown>>();
  private observer: DurableWriteObserver | null = null;
  private availability: StoreAvailabilityObserver | null = null;
  /** Set by {@link beginClose}: new units of work are refused with `store.closed`. */
  protected closing = false;

  protected abstract readonly source: PgConnectionSource;

  /**
   * See `Store.transaction`. One connection, {@link BEGIN_WRITE} … `fn(tx)` … COMMIT; ROLLBACK when
   * `fn` (or `beforeCommit`) throws, and the error is rethrown. Observer: `beforeCommit` after
   * `fn`'s work and before COMMIT (a throw rolls back), `afterCommit` once COMMIT returned;
   * `noteCommit()` between them, as on SQLite.
   *
   * `fn` MAY RUN MORE THAN ONCE: after 40001 / 40P01, a 23505 on a sequence index
   * (`SEQUENCE_INDEXES`), or a connection lost before COMMIT was
   * sent, the whole unit of work runs again on a new transaction ({@link PG_CONFLICT_RETRY}); so
   * `fn` must have no effect outside `tx` (no delivery, no in-memory state) until it returns.
   * @throws StoreNestedTransactionError `store.nested_transaction` when called inside a unit of work of this store.
   * @throws StoreBusyError `store.busy` (nothing written) when no connection came in time, a row lock
   *   wait ran past `lock_timeout` (55P03), or the retries ran out.
   * @throws StoreCommitUnknownError `store.commit_unknown` when the connection was lost during COMMIT.
   * @throws StoreTransactionAbortedError `store.transaction_aborted` when `fn` swallowed a failed statement.
   */
  async transaction<T>(fn: (tx: StoreTx) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    this.refuseNested();
    const policy = opts.startup ? PG_STARTUP_CONFLICT_RETRY : PG_CONFLICT_RETRY;
    return traceUnitOfWork("transaction", "postgres", () =>
      this.track(() =>
        pRetry(() => this.attempt(BEGIN_WRITE, fn, true), {
          ...policy,
          shouldRetry: ({ error }) => retryable.has(error),
        }),
      ),
    );
  }

  /**
   * See `Store.read`: `fn` in a {@link BEGIN_READ} transaction on one connection (one snapshot, no
   * writes, no locks). Retried like a transaction when the connection was lost.
   * @throws StoreNestedTransactionError / StoreBusyError as {@link transaction}.
   */
  async read<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    this.refuseNested();
    return traceUnitOfWork("read", "postgres", () =>
      this.track(() =>
        pRetry(() => this.attempt(BEGIN_READ, fn, false), {
          ...PG_CONFLICT_RETRY,
          shouldRetry: ({ error }) => retryable.has(error),
        }),
      ),
    );
  }

  /** True for SQLSTATE 23505 (unique_violation), also when drizzle wrapped the driver's error in a `cause`. */
  isUniqueViolation(err: unknown): boolean {
    return isPgUniqueViolation(err);
  }

  /** See `Store.observeDurableWrites`. Test-only. */
  observeDurableWrites(observer: DurableWriteObserver | null): void {
    this.observer = observer;
  }

  /** See `Store.watchAvailability`. */
  watchAvailability(observer: StoreAvailabilityObserver | null): void {
    this.availability = observer;
  }

  /** Refuses new units of work and waits until the ones in progress have settled. */
  protected async beginClose(): Promise<void> {
    this.closing = true;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private refuseNested(): void {
    if (isInUnitOfWork(this)) throw new StoreNestedTransactionError();
  }

  private track<T>(work: () => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(new Error("store.closed: the store was closed"));
    const p = work();
    this.inFlight.add(p);
    const forget = () => this.inFlight.delete(p);
    p.then(forget, forget);
    return p;
  }

  private async attempt<T>(begin: string, fn: (tx: StoreTx) => Promise<T>, write: boolean): Promise<T> {
    let conn: PgConnection;
    try {
      conn = await this.source.acquire();
    } catch (err) {
      // No connection: the pool stayed full, or the server refused / did not answer the connect.
      // Lock contention inside our own pool is not an outage; a refused or timed-out connect is.
      if (isConnectionLoss(err) || isOutOfConnections(err) || isStoreWaitedOut(err)) this.availability?.failed(err);
      throw err;
    }
    let committing = false;
    let out: T;
    try {
      await conn.query(begin);
      out = await runInUnitOfWork(this, () => fn(conn.handle));
      if (conn.brokenBy) throw conn.brokenBy;
      if (write) this.observer?.beforeCommit();
      if (this.source.probeBeforeCommit) await conn.query("SELECT 1");
      committing = true;
      const done = await conn.query("COMMIT");
      if (done.command !== undefined && done.command !== "COMMIT") throw new StoreTransactionAbortedError();
    } catch (err) {
      const lost = isConnectionLoss(err) || (conn.brokenBy !== undefined && isConnectionLoss(conn.brokenBy));
      const timedOut = timeoutKind(err);
      if (lost || timedOut === "client") {
        // Gone, or silent past the query timeout (frozen): the connection is discarded, not rolled
        // back (a ROLLBACK would wait behind the stuck statement); the server rolls back on its own.
        this.source.release(conn, true);
        this.availability?.failed(err);
        if (committing && write) throw new StoreCommitUnknownError({ cause: err });
        if (timedOut === "client") throw new StoreBusyError(false, { cause: err, waitedOut: true });
        throw retryableBusy(err);
      }
      let broken = false;
      try {
        await conn.query("ROLLBACK");
      } catch {
        broken = true;
      }
      this.source.release(conn, broken);
      const failure = classifyPgError(err);
      if (failure?.kind === "unique_violation" && failure.constraint !== undefined && SEQUENCE_INDEXES.has(failure.constraint))
        throw retryableBusy(err);
      if (failure?.kind === "retryable") {
        // 55P03: the statement already waited lock_timeout for a row lock; running it again here would
        // multiply that wait inside one request, so it is answered store.busy at once (nothing written).
        if (failure.sqlstate === LOCK_NOT_AVAILABLE) throw new StoreBusyError(false, { cause: err, waitedOut: true });
        throw retryableBusy(err);
      }
      if ((err as { code?: unknown } | null)?.code === PG_SQLSTATE_IN_FAILED_TX) throw new StoreTransactionAbortedError();
      if (timedOut === "server") {
        this.availability?.failed(err);
        throw new StoreBusyError(false, { cause: err, waitedOut: true });
      }
      throw err;
    }
    this.source.release(conn, false);
    this.availability?.succeeded();
    if (write) {
      noteCommit();
      this.observer?.afterCommit();
    }
    return out;
  }
}

/** 25P02 in_failed_sql_transaction: a statement sent after an earlier one of the same transaction failed (PGlite's answer to the probe). */
const PG_SQLSTATE_IN_FAILED_TX = "25P02";
/**
 * The unique indexes on (parent, seq) of the two per-parent sequences: a driver command's `seq` per
 * Driver instance and a run event's `seq` per run. Their next value comes from the parent row's
 * counter (`UPDATE … RETURNING`, a row lock), so this index should never refuse a row; it is kept as
 * a fallback: a unit of work refused by it wrote nothing and runs again with a fresh counter value.
 * A 23505 on any other index is a real refusal and is never retried.
 */
const SEQUENCE_INDEXES: ReadonlySet<string> = new Set(["driver_commands_instance_seq", "run_events_run_seq"]);
/** 55P03 lock_not_available: `lock_timeout` ran out waiting for a row or table lock. */
const LOCK_NOT_AVAILABLE = "55P03";
