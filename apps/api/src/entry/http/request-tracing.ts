// The span of each HTTP request the API serves (OpenTelemetry; a no-op unless tracing is started).
import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import { contextOfHeaders, markSpanFailed, withSpan } from "@mosoo/telemetry";

/**
 * A hono middleware (mount it first) that runs each request inside a server span named
 * `<METHOD> <route template>` (OpenTelemetry HTTP semantic conventions: `http.request.method`,
 * `http.route`, `http.response.status_code`; a 5xx marks the span failed with the answer's status as
 * `error.type`). The request's W3C `traceparent` / `tracestate` headers are its parent, so an
 * agent's trace continues here; a malformed header starts a new trace. The route is the table's
 * template (`/v1/runs/:runId/tool-calls`), never the concrete path, so ids stay out of span names;
 * an unmatched request is named by its method alone.
 */
export function traceRequests(): MiddlewareHandler {
  return async (c, next) => {
    const method = c.req.method;
    const parent = contextOfHeaders((name) => c.req.header(name));
    await withSpan(
      method,
      { "http.request.method": method },
      async (span) => {
        await next();
        const route = routePath(c, -1);
        if (route !== "*" && route !== "/*") {
          span.updateName(`${method} ${route}`);
          span.setAttribute("http.route", route);
        }
        span.setAttribute("http.response.status_code", c.res.status);
        if (c.res.status >= 500) markSpanFailed(span, String(c.res.status));
      },
      { kind: "server", parent },
    );
  };
}
