// Per-address rate limits of Driver registration, in separate budgets for refused credentials and accepted registrations.
import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import type { ApiErrorBody } from "@mosoo/contracts";
import { UserFacingError } from "../../kernel/user-facing-error.js";
import type { AuthEnv } from "./credential-guard.js";

/**
 * The rate limit of `POST /v1/drivers/register` (a registration flood), with
 * rate-limiter-flexible's in-memory limiters, per client address and in two separate budgets of
 * `perMinute` each per 60 s window:
 * - **refused**: attempts whose credential is refused (`auth.*`: missing, invalid, or of the wrong
 *   kind), so guessing the enrollment token is slow; over the budget they answer 429 instead of 401/403;
 * - **accepted**: correctly authenticated registration requests, so a flood of registrations is
 *   bounded; over the budget they answer 429 before anything is read or written.
 * Refused attempts never spend the accepted budget: a flood of unauthenticated requests from an
 * address (on loopback, every local Driver's address) cannot lock the Drivers that present the right
 * token out of registration (review finding: 29 anonymous requests used to lock out every Driver,
 * renewable forever). A guess past the refused budget is still checked, so the right token then
 * succeeds; the secrets are at least 16 characters and meant to be random (README, Credentials), so
 * guessing stays hopeless at any rate.
 * Over a budget: 429 `{error: {code: "request.rate_limited"}}` with `Retry-After` (whole seconds
 * until a request of that budget is accepted again).
 */
export class RegistrationRateLimit {
  private readonly refused: RateLimiterMemory;
  private readonly accepted: RateLimiterMemory;

  /** @param perMinute each budget, per client address per 60 s (`MOSOO_DRIVER_REGISTER_RATE`, ≥ 1). */
  constructor(perMinute: number) {
    this.refused = new RateLimiterMemory({ keyPrefix: "driver-register-refused", points: perMinute, duration: 60 });
    this.accepted = new RateLimiterMemory({ keyPrefix: "driver-register-accepted", points: perMinute, duration: 60 });
  }

  /**
   * Wraps the route's credential check (`guard`, a middleware that throws a `UserFacingError` `auth.*`
   * on a refused credential) in the two budgets: a refused credential spends a point of the refused
   * budget and rethrows its 401/403 (or answers 429 past the budget); an accepted one spends a point
   * of the accepted budget (429 past it) and then runs the route.
   */
  around(guard: MiddlewareHandler<AuthEnv>): MiddlewareHandler<AuthEnv> {
    return createMiddleware<AuthEnv>(async (c, next) => {
      const key = clientAddress(c);
      let passed = false;
      try {
        await guard(c, async () => {
          passed = true;
        });
      } catch (err) {
        if (!(err instanceof UserFacingError && err.code.startsWith("auth."))) throw err;
        const limited = await overBudget(this.refused, key);
        if (limited !== undefined) return tooMany(c, limited, "refused Driver registration attempts");
        throw err;
      }
      if (!passed) return; // the guard answered by itself
      const limited = await overBudget(this.accepted, key);
      if (limited !== undefined) return tooMany(c, limited, "Driver registrations");
      await next();
    });
  }
}

/** Spends one point of `key`; the seconds to wait (≥ 1) when the budget is spent, else `undefined`. */
export async function overBudget(limiter: RateLimiterMemory, key: string): Promise<number | undefined> {
  try {
    await limiter.consume(key);
    return undefined;
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res;
    return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  }
}

/** 429 `request.rate_limited` with `Retry-After: retryAfter` (whole seconds); `what` names what was too many. */
export function tooMany(c: Context, retryAfter: number, what: string): Response {
  const body: ApiErrorBody = {
    error: { code: "request.rate_limited", message: `too many ${what} from this address; retry after ${retryAfter} s` },
  };
  return c.json(body, 429, { "retry-after": String(retryAfter) });
}

/** The peer address of the request (@hono/node-server puts the Node request in `c.env.incoming`); `local` in-process. */
export function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? "local";
}
