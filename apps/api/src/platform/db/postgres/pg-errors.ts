// Classifies PostgreSQL errors by SQLSTATE (unique, check, fence, retryable) and maps the retryable ones to `store.busy`.
import { StoreBusyError } from "../store-busy.js";

/**
 * The SQLSTATE codes the PostgreSQL store reacts to (PostgreSQL manual, Appendix A "Error Codes").
 * Everything else passes through unchanged (a 500 at the HTTP edge, as an unexpected SQLite error is).
 */
export const PG_SQLSTATE = {
  /** 23505: a unique index refused the row (SQLite: `SQLITE_CONSTRAINT_UNIQUE` / `_PRIMARYKEY`). */
  uniqueViolation: "23505",
  /** 23514: a CHECK constraint refused the row (SQLite: `SQLITE_CONSTRAINT_CHECK`). */
  checkViolation: "23514",
  /** 23503: a foreign key refused the row (SQLite: `SQLITE_CONSTRAINT_FOREIGNKEY`). */
  foreignKeyViolation: "23503",
  /** 23502: a NOT NULL column got a null (SQLite: `SQLITE_CONSTRAINT_NOTNULL`). */
  notNullViolation: "23502",
  /** 23001: what the fence trigger raises (with constraint {@link FENCE_TRIGGER_NAME}); SQLite: `SQLITE_CONSTRAINT_TRIGGER`. */
  restrictViolation: "23001",
  /** 40001: a serializable (or repeatable read) transaction lost to a concurrent one; rolled back, safe to run again. */
  serializationFailure: "40001",
  /** 40P01: the server broke a deadlock by aborting this transaction; rolled back, safe to run again. */
  deadlockDetected: "40P01",
  /** 55P03: `NOWAIT` / `lock_timeout` gave up on a row or table lock; the statement failed, the transaction is aborted. */
  lockNotAvailable: "55P03",
} as const;

/** The fence trigger and the constraint name its error carries (migration `drizzle-pg/0001_fence-retained-trigger.sql`). */
const FENCE_TRIGGER_NAME = "external_tool_effects_fence_retained";
/** The message of the fence trigger's error: the same text as SQLite's `RAISE(ABORT, 'effect.fence_retained')`. */
const FENCE_RETAINED_MESSAGE = "effect.fence_retained";

/** The SQLSTATEs after which the whole transaction may simply run again (nothing of it was committed). */
const RETRYABLE = new Set<string>([PG_SQLSTATE.serializationFailure, PG_SQLSTATE.deadlockDetected, PG_SQLSTATE.lockNotAvailable]);

/**
 * What a PostgreSQL error means to the store, by SQLSTATE (never by message text, except that the
 * fence is recognised by its constraint name or its message):
 * - `unique_violation` (23505): a unique or primary-key index refused the row; `constraint` names the index.
 * - `check_violation` (23514): a CHECK refused the row; `constraint` is the CHECK's name (the same names as on SQLite).
 * - `foreign_key_violation` (23503) / `not_null_violation` (23502).
 * - `fence_retained`: the fence trigger refused to delete an `executing` or `unknown` effect (see `refuseIfFenced` in run.service.ts).
 * - `retryable` (40001, 40P01, 55P03): the transaction was rolled back by concurrency control; run it again.
 */
export type PgStoreFailure =
  | { kind: "unique_violation"; constraint: string | undefined }
  | { kind: "check_violation"; constraint: string | undefined }
  | { kind: "foreign_key_violation"; constraint: string | undefined }
  | { kind: "not_null_violation"; column: string | undefined }
  | { kind: "fence_retained"; detail: string | undefined }
  | { kind: "retryable"; sqlstate: string };

/** The fields of a PostgreSQL error (`pg`'s and PGlite's `DatabaseError` both carry them). */
interface PgErrorFields {
  code?: unknown;
  constraint?: unknown;
  column?: unknown;
  detail?: unknown;
  message?: unknown;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/** The first error in `err`'s `cause` chain (drizzle wraps driver errors in `DrizzleQueryError`) that has a 5-character SQLSTATE `code`. */
function findPgError(err: unknown): PgErrorFields | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    const code = (e as PgErrorFields).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return e as PgErrorFields;
  }
  return undefined;
}

/**
 * Classifies a PostgreSQL error (from `pg` or PGlite, raw or wrapped by drizzle) as a {@link PgStoreFailure},
 * or `undefined` when it is none of them (a connection loss, a syntax error, anything unexpected).
 * A connection lost during COMMIT is deliberately NOT retryable: whether it committed is unknown.
 */
export function classifyPgError(err: unknown): PgStoreFailure | undefined {
  const e = findPgError(err);
  if (!e) return undefined;
  const code = e.code as string;
  if (str(e.constraint) === FENCE_TRIGGER_NAME || (code.startsWith("23") && str(e.message) === FENCE_RETAINED_MESSAGE)) {
    return { kind: "fence_retained", detail: str(e.detail) };
  }
  switch (code) {
    case PG_SQLSTATE.uniqueViolation:
      return { kind: "unique_violation", constraint: str(e.constraint) };
    case PG_SQLSTATE.checkViolation:
      return { kind: "check_violation", constraint: str(e.constraint) };
    case PG_SQLSTATE.foreignKeyViolation:
      return { kind: "foreign_key_violation", constraint: str(e.constraint) };
    case PG_SQLSTATE.notNullViolation:
      return { kind: "not_null_violation", column: str(e.column) };
    default:
      return RETRYABLE.has(code) ? { kind: "retryable", sqlstate: code } : undefined;
  }
}

/**
 * True for a unique-index refusal (23505): the PostgreSQL twin of the SQLite check
 * `err.code === "SQLITE_CONSTRAINT_UNIQUE"` (e.g. a second compensation of one effect in flight,
 * index `external_tool_effects_one_compensation_in_flight`). With `constraint`, only that index counts.
 */
export function isPgUniqueViolation(err: unknown, constraint?: string): boolean {
  const f = classifyPgError(err);
  return f?.kind === "unique_violation" && (constraint === undefined || f.constraint === constraint);
}

/** True when the fence trigger refused a delete (see `refuseIfFenced` in run.service.ts): the twin of SQLite's `RAISE(ABORT, 'effect.fence_retained')`. */
export function isPgFenceRetained(err: unknown): boolean {
  return classifyPgError(err)?.kind === "fence_retained";
}

/**
 * Maps a PostgreSQL error to the error the store's callers already handle: a retryable one (40001,
 * 40P01, 55P03) becomes {@link StoreBusyError} (`store.busy`, `afterCommit` false: PostgreSQL rolled the
 * transaction back), so `retryWhenBusy` runs the operation again exactly as it does after SQLite's
 * `SQLITE_BUSY`, and answers 503 with `Retry-After` when retries run out. Every other error is returned
 * unchanged (callers test it with {@link classifyPgError} / {@link isPgUniqueViolation} / {@link isPgFenceRetained}).
 */
export function toStoreError(err: unknown): unknown {
  return classifyPgError(err)?.kind === "retryable" ? new StoreBusyError(false, { cause: err }) : err;
}
