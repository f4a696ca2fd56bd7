/** Hono middleware that refuses requests whose Host or Origin is not a loopback name (DNS rebinding protection). */
import type { Context, MiddlewareHandler } from "hono";

/**
 * The host names a loopback-only server answers to: the same list as the MCP SDK's
 * `localhostHostValidation()` (an Express middleware, so not usable under Hono).
 */
const LOOPBACK_HOSTNAMES: readonly string[] = ["127.0.0.1", "localhost", "[::1]"];

/**
 * DNS rebinding protection for a server that listens on the loopback interface only (MCP
 * specification 2025-11-25, Streamable HTTP "Security Warning": servers MUST validate the `Origin`
 * header; the SDK's transport options for this are deprecated in favour of a middleware).
 *
 * A request passes when the hostname of its `Host` header (the port is ignored) is one of
 * `allowedHostnames`, and, if it carries an `Origin` header, that origin's hostname is one too.
 * Anything else (missing or unparsable `Host`, a foreign name, `Origin: null`) is answered
 * HTTP 403 with a JSON-RPC error body `{"jsonrpc":"2.0","error":{"code":-32000,"message":…},"id":null}`
 * and never reaches the route.
 */
export function loopbackHostValidation(allowedHostnames: readonly string[] = LOOPBACK_HOSTNAMES): MiddlewareHandler {
  const allowed = new Set(allowedHostnames);
  return async (c, next) => {
    const host = c.req.header("host");
    if (host === undefined || !allowed.has(hostnameOf(`http://${host}`) ?? "")) return refuse(c, "invalid Host header");
    const origin = c.req.header("origin");
    if (origin !== undefined && !allowed.has(hostnameOf(origin) ?? "")) return refuse(c, "invalid Origin header");
    await next();
  };
}

function hostnameOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

function refuse(c: Context, message: string): Response {
  return c.json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }, 403);
}
