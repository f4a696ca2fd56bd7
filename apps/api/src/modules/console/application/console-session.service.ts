// The operator console's server-side sessions: each with its operator's name, scopes, CSRF token and expiry.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { OperatorScope } from "@mosoo/contracts";
import type { Clock } from "../../../platform/clock.js";

/** How long a console session lasts after sign-in (ms): 8 hours, then the operator signs in again. */
export const CONSOLE_SESSION_TTL_MS = 8 * 60 * 60 * 1000;
/** At most this many live sessions are held; signing in past it drops the least recently used one. */
const MAX_CONSOLE_SESSIONS = 1_000;

/**
 * One signed-in operator: `actor`, the name of the operator credential whose token opened the
 * session (recorded in the audit trail with every action), that credential's `scopes`, the
 * per-session CSRF token, expiry (ms since the epoch).
 */
export interface ConsoleSession {
  id: string;
  actor: string;
  scopes: readonly OperatorScope[];
  csrfToken: string;
  expiresAtMs: number;
}

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

/** Compares two secrets in constant time (over their sha-256 digests, so lengths leak nothing). */
export function secretsEqual(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * The console's sessions, held server-side in this API process: the browser
 * only holds a random 256-bit session id in an HttpOnly, SameSite=Strict cookie. Sessions expire
 * {@link CONSOLE_SESSION_TTL_MS} after sign-in (by `clock`), end at sign-out, and all end when the
 * API restarts. Each carries its own CSRF token, required on every state-changing request.
 */
export class ConsoleSessions {
  private readonly sessions = new LRUCache<string, ConsoleSession>({ max: MAX_CONSOLE_SESSIONS });

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number = CONSOLE_SESSION_TTL_MS,
  ) {}

  /** Starts a session for the operator credential `by` (already authenticated by the caller). */
  create(by: { name: string; scopes: readonly OperatorScope[] }): ConsoleSession {
    const session: ConsoleSession = {
      id: randomBytes(32).toString("base64url"),
      actor: by.name,
      scopes: [...by.scopes],
      csrfToken: randomBytes(32).toString("base64url"),
      expiresAtMs: this.clock.nowMs() + this.ttlMs,
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session with this id, or undefined (unknown, signed out or expired: an expired one is dropped). */
  get(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (this.clock.nowMs() >= s.expiresAtMs) {
      this.sessions.delete(id);
      return undefined;
    }
    return s;
  }

  /** Ends a session (sign-out); unknown ids are ignored. */
  delete(id: string): void {
    this.sessions.delete(id);
  }
}
