/** Which runs and sessions a caller of the run API reaches, and the one not-found answer for the rest (docs/DESIGN.md §10). */
import { UserFacingError } from "../../../kernel/user-facing-error.js";

/**
 * Who calls the run API, as far as object-level access goes: the API key's name (recorded as the
 * owner of a session it creates; null for an operator credential) and the Driver instance ids the
 * key is restricted to (`drivers` in the keys file; undefined: unrestricted, as an operator).
 */
export interface RunCaller {
  keyName: string | null;
  drivers: readonly string[] | undefined;
}

/** A caller that reaches every run and session and records no session owner (operators, and in-process callers such as tests and tools). */
export const UNRESTRICTED_CALLER: RunCaller = { keyName: null, drivers: undefined };

/** True when `caller` may reach a run on Driver instance `driverInstanceId`: unrestricted, or restricted to a list naming it. */
export function reachesRun(caller: RunCaller, driverInstanceId: string): boolean {
  return caller.drivers === undefined || caller.drivers.includes(driverInstanceId);
}

/**
 * True when `caller` may reach (join with a new run, delete) a session whose owner is `createdByKey`:
 * unrestricted callers reach every session; a restricted key only the sessions it created. A session
 * created before owners were recorded (`createdByKey` null) is reached by no restricted key (fail closed).
 */
export function reachesSession(caller: RunCaller, createdByKey: string | null): boolean {
  return caller.drivers === undefined || (createdByKey !== null && createdByKey === caller.keyName);
}

/**
 * The refusal for a run that does not exist and for one the caller may not reach, identical in
 * status (404), code and message, so a restricted key cannot tell them apart (no existence oracle).
 */
export function runNotFound(runId: string): UserFacingError {
  return new UserFacingError("run.not_found", `no run ${runId}`);
}

/** The refusal for a session that does not exist and for one the caller may not reach (404 `session.not_found`), identical for both. */
export function sessionNotFound(sessionId: string): UserFacingError {
  return new UserFacingError("session.not_found", `no session ${sessionId}`);
}
