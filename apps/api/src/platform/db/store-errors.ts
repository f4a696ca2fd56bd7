/**
 * Failures of a store's unit of work that any store implementation may raise besides
 * `StoreBusyError` (store-busy.ts) and `StoreNestedTransactionError` (store.port.ts); today the
 * PostgreSQL stores (`postgres/pg-unit-of-work.ts`). Dialect-neutral, so the HTTP edge can map them
 * without knowing the driver.
 */

/**
 * The connection was lost while COMMIT was in flight: the database may or may not have committed the
 * unit of work, and no one can tell from here. Code `store.commit_unknown`, HTTP 503 (retry later),
 * never retried by the store.
 *
 * How callers stay safe: every write of the runtime is a compare-and-set on (status, version) or an
 * insert guarded by a unique index (see `recordIntent`, `decideClaim` and
 * `effectRepository.updateIfCurrent`), and every terminal state is
 * delivered only after its commit (rule 6). So the operation can be run again AS A WHOLE (the
 * Driver repeats its request, the sweep its pass): if the first COMMIT did land, the replay reads
 * the new state and its CAS is refused (`superseded`) or returns the stored result (a claim that
 * finds `succeeded` answers `completed`); if it did not, the replay does the work once. Nothing may
 * assume either outcome without reading the database again.
 */
export class StoreCommitUnknownError extends Error {
  override readonly name = "StoreCommitUnknownError";
  readonly code = "store.commit_unknown";
  readonly httpStatus = 503;
  readonly retryAfterSeconds = 1;
  constructor(options?: { cause?: unknown }) {
    super(
      "store.commit_unknown: the database connection was lost during COMMIT; whether the write landed is unknown, read it again",
      options,
    );
  }
}

/**
 * A statement of the unit of work failed, `fn` caught that error and went on, and PostgreSQL (which
 * aborts the whole transaction at the first failed statement, unlike SQLite) answered COMMIT with
 * ROLLBACK. Code `store.transaction_aborted`: nothing of the unit of work was written. A programming
 * error (a repository that expects to go on after a failed statement must use a savepoint), never
 * retried.
 */
export class StoreTransactionAbortedError extends Error {
  override readonly name = "StoreTransactionAbortedError";
  readonly code = "store.transaction_aborted";
  constructor() {
    super("store.transaction_aborted: a statement of the transaction failed and was caught; PostgreSQL rolled the whole transaction back");
  }
}
