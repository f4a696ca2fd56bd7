import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import type { ApiErrorBody } from "@mosoo/contracts";

/**
 * The rate limit of `POST /v1/drivers/register` (issue 10 finding 3: a registration flood), with
 * rate-limiter-flexible's in-memory limiter: at most `perMinute` registration requests per client
 * address in any 60 s window (refused ones count too, so guessing the enrollment token is slow as
 * well). Over the limit: 429 `{error: {code: "request.rate_limited"}}` with `Retry-After` (whole
 * seconds until a request is accepted again); nothing is read or written.
 */
export class RegistrationRateLimit {
  private readonly limiter: RateLimiterMemory;

  /** @param perMinute requests per client address per 60 s (`MOSOO_DRIVER_REGISTER_RATE`, ≥ 1). */
  constructor(perMinute: number) {
    this.limiter = new RateLimiterMemory({ keyPrefix: "driver-register", points: perMinute, duration: 60 });
  }

  /** The hono middleware; put it before the credential check. */
  middleware(): MiddlewareHandler {
    return createMiddleware(async (c, next) => {
      try {
        await this.limiter.consume(clientAddress(c));
      } catch (res) {
        if (!(res instanceof RateLimiterRes)) throw res;
        const retryAfter = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
        const body: ApiErrorBody = { error: { code: "request.rate_limited", message: `too many Driver registrations from this address; retry after ${retryAfter} s` } };
        return c.json(body, 429, { "retry-after": String(retryAfter) });
      }
      await next();
    });
  }
}

/** The peer address of the request (@hono/node-server puts the Node request in `c.env.incoming`); `local` in-process. */
function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? "local";
}
