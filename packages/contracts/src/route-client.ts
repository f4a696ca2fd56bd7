/** A typed HTTP call of one route of the route table: path from the entry's template, answer checked against its response schema. */
import type { z } from "zod";
import { routePath, routeQueryString, type ApiRoute, type RouteInput, type RouteOutput } from "./route-table.contract.js";

/**
 * A refused or failed route call: the API's stable error `code` and `message` (`{error: {code,
 * message}}`), or the client's own: `api.unreachable` (no answer, or none within the timeout),
 * `api.invalid_answer` (not JSON, or not the route's response schema). `status`: the HTTP status (0 without an answer).
 */
export class RouteCallError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Where and how {@link callRoute} sends: the API's base URL, extra headers (e.g. `authorization`), a timeout in ms. */
export interface RouteCallOptions {
  baseUrl: string;
  headers?: Record<string, string>;
  timeoutMs: number;
}

/**
 * Calls `route` with `input`: the path from the entry's template and `input.params`
 * ({@link routePath}), the query string from `input.query`, `input.body` as JSON; answers the 2xx
 * JSON checked against the route's `response` schema, returned as received (answer schemas
 * transform nothing, so the server's key order is kept). The input is sent as given: the API checks it.
 * @throws RouteCallError with the API's error code on a non-2xx answer (`http_<status>` when its
 *   body names none), `api.unreachable`, `api.invalid_answer`.
 */
export async function callRoute<R extends ApiRoute>(route: R, input: RouteInput<R>, options: RouteCallOptions): Promise<RouteOutput<R>> {
  const path =
    routePath(route, input.params as Record<string, string> | undefined) + routeQueryString(input.query as Record<string, unknown>);
  let res: Response;
  try {
    res = await fetch(new URL(path, options.baseUrl), {
      method: route.method,
      headers: { "content-type": "application/json", ...options.headers },
      ...(input.body === undefined ? {} : { body: JSON.stringify(input.body) }),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (err) {
    throw new RouteCallError("api.unreachable", `${displayUrl(options.baseUrl)}: ${unreachableReason(err, options.timeoutMs)}`, 0);
  }
  let json: unknown;
  try {
    json = JSON.parse(await res.text());
  } catch {
    throw new RouteCallError(
      "api.invalid_answer",
      `${displayUrl(options.baseUrl)}: HTTP ${res.status} with a body that is not JSON`,
      res.status,
    );
  }
  if (!res.ok) {
    const e = (json as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    throw new RouteCallError(
      typeof e?.code === "string" ? e.code : `http_${res.status}`,
      typeof e?.message === "string" ? e.message : "request failed",
      res.status,
    );
  }
  if (route.response) {
    const checked = (route.response as z.ZodType).safeParse(json);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new RouteCallError(
        "api.invalid_answer",
        `${route.method} ${route.path} answered outside its contract${issue ? `: ${issue.path.join(".") || "body"}: ${issue.message}` : ""}`,
        res.status,
      );
    }
  }
  return json as RouteOutput<R>;
}

/** `url` as an error may show it: a user name and password in it replaced by `***` (the URL as given when it does not parse). */
function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === "" && u.password === "") return url;
    u.username = "***";
    u.password = "";
    return u.toString();
  } catch {
    return url;
  }
}

/**
 * Why `fetch` got no answer, in one line: `no answer within <timeoutMs> ms` for the timeout; undici's `fetch
 * failed` with its cause (e.g. `connect ECONNREFUSED 127.0.0.1:8787`, `getaddrinfo ENOTFOUND api.example`, `bad
 * port`: fetch refuses some ports, e.g. 9 and 6000, without connecting); else the request could not be built.
 * That last message is not repeated: it quotes the URL or the header value, a password or a token.
 */
function unreachableReason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && err.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  if (cause === "bad port")
    return `${(err as Error).message} (bad port: fetch refuses to connect to this port; the API must listen on another)`;
  if (err instanceof Error && cause !== undefined && cause !== "") return `${err.message} (${cause})`;
  return `the request could not be built (${err instanceof Error ? err.name : typeof err}): check the URL and the token`;
}
