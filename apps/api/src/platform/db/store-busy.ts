// The `store.busy` error, its detection and cause, and the asynchronous retry of an operation while the store is locked.
import pRetry from "p-retry";

/**
 * How long (ms) one SQLite statement waits for another connection's write lock once the API
 * serves (`PRAGMA busy_timeout`). better-sqlite3 is synchronous: this wait blocks the event loop, so
 * it is kept short and the rest of the wait is asynchronous ({@link retryWhenBusy}). Opening and
 * migrating the store (nothing is served yet) uses {@link STARTUP_BUSY_TIMEOUT_MS}.
 */
export const STORE_BUSY_TIMEOUT_MS = 20;
/** Busy timeout (ms) while the store is opened and migrated at startup, before anything is served. */
export const STARTUP_BUSY_TIMEOUT_MS = 5_000;
/**
 * Asynchronous retries of a request whose transaction found the store busy: 4 attempts of at most
 * {@link STORE_BUSY_TIMEOUT_MS} each, so no request holds the event loop for more than ~80 ms of
 * lock waiting ("no request waits more than ~100 ms of synchronous lock time"); the
 * delays between them (10, 20, 40 ms) leave the loop free.
 */
const REQUEST_BUSY_RETRY = { retries: 3, minTimeout: 10, factor: 2, maxTimeout: 40 } as const;
/** Retries of background work (sweep, repair, a lookup's outcome): longer, still asynchronous (≈ 1.5 s in all). */
export const BACKGROUND_BUSY_RETRY = { retries: 6, minTimeout: 25, factor: 2, maxTimeout: 500 } as const;
/** The `Retry-After` (seconds) of a 503 `store.busy`. */
export const STORE_BUSY_RETRY_AFTER_S = 1;

/**
 * The store is locked by another connection (a backup, `effects --db`, another process) and the
 * bounded wait ran out. Code `store.busy`, HTTP 503 with `Retry-After: 1`. Nothing of the failed
 * transaction was written (SQLite rolled it back). `afterCommit` is true when an earlier
 * transaction of the same operation had already committed (the operation is then not retried
 * here: the caller retries it as a whole, as it would after a lost answer).
 */
export class StoreBusyError extends Error {
  override readonly name = "StoreBusyError";
  readonly code = "store.busy";
  readonly httpStatus = 503;
  readonly retryAfterSeconds = STORE_BUSY_RETRY_AFTER_S;
  /**
   * True when the operation already spent its whole bounded wait (a PostgreSQL statement or query
   * timeout, a connection that did not come within the acquire timeout, a `lock_timeout`): it is
   * answered at once, never retried by {@link retryWhenBusy}, so no request waits past the bound.
   */
  readonly waitedOut: boolean;
  constructor(
    readonly afterCommit = false,
    options?: { cause?: unknown; waitedOut?: boolean },
  ) {
    super(STORE_BUSY_MESSAGE, options?.cause === undefined ? undefined : { cause: options.cause });
    this.waitedOut = options?.waitedOut ?? false;
  }
}

/** True when `err` or a `cause` of it is a {@link StoreBusyError} that already spent its bounded wait (`waitedOut`). */
export function isStoreWaitedOut(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth += 1) {
    if (e instanceof StoreBusyError && e.waitedOut) return true;
  }
  return false;
}

/**
 * The message of every `store.busy` answer. It names all the causes, because the client cannot act on
 * which one it was: SQLite's write lock held by another connection, a full PostgreSQL pool, a lock
 * wait past `lock_timeout`, or a database that cannot be reached. The cause is in the API log
 * ({@link storeBusyCause}).
 */
export const STORE_BUSY_MESSAGE = "the store is busy or unreachable (locked, out of connections, or the database is down); retry after 1 s";

/**
 * What made an operation fail as `store.busy`, for the log line an operator reads: the innermost error
 * of `err`'s `cause` chain that is not a {@link StoreBusyError} (a driver error such as
 * `ECONNREFUSED`, PostgreSQL 53300 "too many clients", 57P01 "terminating connection", 55P03, or
 * `SQLITE_BUSY`), as `{code, message}` (message's first line, at most 300 characters). Undefined when
 * there is no such cause. Pure.
 */
export function storeBusyCause(err: unknown): { code?: string; message: string } | undefined {
  let found: unknown;
  for (let e: unknown = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth += 1) {
    if (!(e instanceof StoreBusyError)) found = e;
  }
  if (found === undefined) return undefined;
  const code = (found as { code?: unknown }).code;
  const message = (found instanceof Error ? found.message : String(found)).split("\n")[0]!.slice(0, 300);
  return { ...(typeof code === "string" ? { code } : {}), message };
}

/**
 * True when `err` (or one of its `cause`s: drizzle wraps driver errors) is SQLite's
 * `SQLITE_BUSY*` / `SQLITE_LOCKED*`, or a {@link StoreBusyError}.
 */
export function isStoreBusy(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    if (e instanceof StoreBusyError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))) return true;
  }
  return false;
}

/**
 * Commits made through `Store.transaction` (any store implementation) since the process started. {@link retryWhenBusy} compares
 * it before and after an attempt: a change means a transaction committed meanwhile, so the attempt
 * is not run again. A commit of a concurrent operation counts too, which only makes a retry less
 * likely (never a repeat of committed work); and while another process holds the write lock, no
 * transaction of this one commits at all. (A counter rather than AsyncLocalStorage, which on Node 20
 * puts a hook on every promise of the process.)
 */
let commitCount = 0;

/** Called by each store implementation after each commit of `Store.transaction`. */
export function noteCommit(): void {
  commitCount += 1;
}

/**
 * Runs `fn` (one operation: a request's service call, or one unit of background work) and, when
 * it fails because the store is busy before any transaction committed (see `commitCount`), runs it again
 * after an asynchronous delay (p-retry; `policy` defaults to {@link REQUEST_BUSY_RETRY}). When the
 * retries run out, or a transaction of this operation had already committed, it rejects with
 * {@link StoreBusyError} (`afterCommit` says which). A busy error that already waited its whole bound
 * (`waitedOut`: a PostgreSQL timeout) is not run again. Other errors pass through untouched.
 */
export async function retryWhenBusy<T>(
  fn: () => T | Promise<T>,
  policy: { retries: number; minTimeout: number; factor: number; maxTimeout: number } = REQUEST_BUSY_RETRY,
): Promise<T> {
  return pRetry(
    async () => {
      const before = commitCount;
      try {
        return await fn();
      } catch (err) {
        if (!isStoreBusy(err)) throw err;
        const committed = commitCount !== before || (err instanceof StoreBusyError && err.afterCommit);
        throw err instanceof StoreBusyError && err.afterCommit === committed ? err : new StoreBusyError(committed, { cause: err });
      }
    },
    {
      ...policy,
      randomize: false,
      shouldRetry: ({ error }) => error instanceof StoreBusyError && !error.afterCommit && !isStoreWaitedOut(error),
    },
  );
}
