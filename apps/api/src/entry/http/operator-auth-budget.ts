/** The failure budget of operator credentials: refused console sign-ins and operator bearer tokens, per client address. */
import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { Logger } from "pino";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { UserFacingError } from "../../kernel/user-facing-error.js";
import type { AuthEnv } from "./credential-guard.js";
import { clientAddress, overBudget, tooMany } from "./registration-rate-limit.js";

/** Where a refused operator credential was presented: the operator routes' bearer, or the console's sign-in form. */
export type OperatorAuthSurface = "operator_api" | "console_sign_in";

/**
 * The failure budget of operator credentials (docs/DESIGN.md §10), one rate-limiter-flexible
 * in-memory limiter shared by the console's sign-in and the operator routes' bearer: each refused
 * operator credential (a token that matches none: `auth.invalid_token`) spends one point of its
 * client address's `perMinute` per 60 s. Past the budget that refusal answers 429
 * `request.rate_limited` with `Retry-After` (whole seconds) instead of 401. A valid credential
 * spends nothing and still passes, so a flood from a shared address (loopback) cannot lock the
 * operators out; tokens are at least 16 characters with 8 distinct ones, so guessing stays
 * hopeless at any rate (the same reasoning as the Driver registration's refused budget).
 * Each refusal within the budget logs one warn line `operator.auth_refused` with the address and
 * the surface only (never the token or anything else the client typed); past the budget one line
 * `operator.auth_budget_spent` per address and window, so a flood cannot flood the log.
 */
export class OperatorAuthBudget {
  private readonly limiter: RateLimiterMemory;
  private readonly noted = new RateLimiterMemory({ keyPrefix: "operator-auth-budget-noted", points: 1, duration: 60 });

  /** @param perMinute refused operator credentials per client address per 60 s (`MOSOO_OPERATOR_AUTH_FAILURES`, ≥ 1). */
  constructor(
    perMinute: number,
    private readonly logger: Logger,
  ) {
    this.limiter = new RateLimiterMemory({ keyPrefix: "operator-auth-refused", points: perMinute, duration: 60 });
  }

  /**
   * Spends a point for one refused credential from `c`'s address.
   * @returns the seconds to wait (≥ 1) when the budget is spent (the caller answers 429), else undefined (answer 401).
   */
  async refused(c: Context, surface: OperatorAuthSurface): Promise<number | undefined> {
    const address = clientAddress(c);
    const wait = await overBudget(this.limiter, address);
    if (wait === undefined) this.logger.warn({ address: address.slice(0, 64), surface }, "operator.auth_refused");
    else if ((await overBudget(this.noted, address)) === undefined)
      this.logger.warn({ address: address.slice(0, 64), surface, retryAfterS: wait }, "operator.auth_budget_spent");
    return wait;
  }

  /**
   * Wraps the operator routes' credential check (`guard`, which throws `auth.invalid_token` on a
   * token that matches no credential): such a refusal spends a point and rethrows its 401, or
   * answers 429 past the budget. Other refusals (no token, a credential of another kind) spend nothing.
   */
  bearer(guard: MiddlewareHandler<AuthEnv>): MiddlewareHandler<AuthEnv> {
    return createMiddleware<AuthEnv>(async (c, next) => {
      let passed = false;
      try {
        await guard(c, async () => {
          passed = true;
        });
      } catch (err) {
        if (!(err instanceof UserFacingError && err.code === "auth.invalid_token")) throw err;
        const wait = await this.refused(c, "operator_api");
        if (wait !== undefined) return tooMany(c, wait, "refused operator credentials");
        throw err;
      }
      if (passed) await next();
    });
  }
}
