// The kernel's error type: every user-facing refusal of the API (a stable code, its HTTP status, a one-line message).
/**
 * Stable error codes of the runtime's services and their HTTP status (docs/DESIGN.md §9). A bad
 * request is refused with one of these before anything changes.
 */
export const USER_FACING_ERROR_STATUS = {
  "request.invalid": 400,
  /** A body sent without `Content-Type: application/json`. */
  "request.unsupported_media_type": 415,
  "auth.missing_token": 401,
  "auth.invalid_token": 401,
  /** A valid credential of the wrong kind for the route, or a Driver re-registering another instance. */
  "auth.forbidden": 403,
  /** An API key without the route's scope. */
  "auth.scope": 403,
  /** Too many requests from one client (Driver registration); the answer carries `Retry-After`. */
  "request.rate_limited": 429,
  "driver.not_found": 404,
  "driver.finalized": 409,
  "driver.not_connected": 409,
  "driver.connection_superseded": 409,
  "run.not_found": 404,
  "run.not_active": 409,
  "run.driver_busy": 409,
  "session.not_found": 404,
  "command.not_found": 404,
  "tool_call.conflict": 409,
  /** No tool call with this `toolCallId` in the run. */
  "tool_call.not_found": 404,
  /** The repeat guard: the same request as a recent write of the same session (see `guardRepeat` in repeat-guard.policy.ts). */
  "tool_call.repeat_refused": 409,
  /** `repeatOfEffectId` names no effect of the session with the same server, tool and arguments. */
  "tool_call.repeat_invalid": 409,
  "command.terminal": 409,
  "effect.not_found": 404,
  "effect.not_settled": 409,
  "effect.fence_retained": 409,
  "effect.not_unknown": 409,
  "effect.not_reconcilable": 409,
  /**
   * An operator's resolve of an effect under a live reconciliation lease (a lookup is under way):
   * retry once the lookup ended or the lease expired (`details.leaseExpiresAtMs`) (see `effectRepository.updateIfCurrentAndUnleased` in effect.repository.ts).
   */
  "effect.lookup_in_progress": 409,
  /**
   * A `deadline-missed` report about an attempt the Driver already reported as sent or failed
   * mid-send (`complete` / `mark-unknown`): a missed deadline proves nothing then (see `decideDeadlineMissed` in effect-lifecycle.machine.ts).
   */
  "effect.attempt_sent": 409,
  /** A `deadline-missed` report from a connection other than the one that made the attempt (see `decideLateEvidence` in effect-lifecycle.machine.ts). */
  "effect.not_attempt_connection": 409,
  /** A task-id report naming another task than the one the effect already holds: a task id never changes (see `decideTaskHandle` in effect-lifecycle.machine.ts). */
  "effect.task_id_conflict": 409,
  /**
   * A claim whose dispatch compare-and-set changed nothing, yet its unlocked read finds the effect
   * `intent` of a live command on the current connection: nothing is dispatched on that read (see `EffectLedgerService.claim`).
   */
  "effect.claim_conflict": 409,
  "auth.operator_disabled": 403,
  "driver.not_finalized": 409,
  "feature.disabled": 404,
  "effect.not_succeeded": 409,
  "compensation.not_declared": 409,
  "compensation.plan_failed": 409,
  "compensation.exists": 409,
  "compensation.driver_unavailable": 409,
} as const;

/** One of the codes in {@link USER_FACING_ERROR_STATUS}. */
export type UserFacingErrorCode = keyof typeof USER_FACING_ERROR_STATUS;

/**
 * A typed, user-facing error of the runtime: `code` (stable string), `httpStatus` (4xx), a
 * one-line `message` and small JSON `details`. Thrown by application services; the HTTP layer maps
 * it to `{error: {code, message, details}}` and the status. It never carries a stack to a user.
 */
export class UserFacingError extends Error {
  readonly code: UserFacingErrorCode;
  readonly httpStatus: number;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: UserFacingErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = "UserFacingError";
    this.code = code;
    this.httpStatus = USER_FACING_ERROR_STATUS[code];
    this.details = details;
  }
}
