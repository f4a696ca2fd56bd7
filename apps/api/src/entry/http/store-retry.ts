// Wraps a route handler so a store locked by another connection is briefly waited for before the request answers 503 `store.busy`.
import type { Context } from "hono";
import { retryWhenBusy } from "../../platform/db/store-busy.js";

/**
 * Wraps a route handler so that a store locked by another connection is waited for briefly and
 * asynchronously (`retryWhenBusy`: at most ~80 ms of synchronous lock wait in all, the event loop
 * free in between) before the request is answered 503 `store.busy` with `Retry-After` (mapped by
 * `toErrorResponse`, which also notes the moment in the runtime's `StoreBusyWatch`: the maintenance
 * sweep then lets no heartbeat expire for one TTL, docs/http-api.md "Limits and input rules"). The handler runs again only when none of its transactions committed; the
 * body is parsed once (hono caches it), so a retry sees the same request. Any further arguments (a
 * table route's `RouteRequest`) are passed through.
 */
export function retryingWhenBusy<C extends Context, A extends unknown[]>(
  handler: (c: C, ...rest: A) => Response | Promise<Response>,
): (c: C, ...rest: A) => Promise<Response> {
  return (c, ...rest) => retryWhenBusy(() => handler(c, ...rest));
}
