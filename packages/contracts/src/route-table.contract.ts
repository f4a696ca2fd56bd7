// How one API route is declared once for server and clients: method, path, credential, schemas, and path and query helpers.
import { compile, match, type MatchFunction, type PathFunction } from "path-to-regexp";
import type { z } from "zod";

/** Largest request body the API accepts on any route, in bytes (4 MiB); larger ones get 413 `request.too_large`. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** HTTP methods of the API's JSON routes. */
export type RouteMethod = "GET" | "POST" | "DELETE";

/**
 * The credential a route needs, checked by the API's credential guard before the
 * route runs; refusals are 401 `auth.missing_token` / `auth.invalid_token`, 403 `auth.forbidden` /
 * `auth.scope` (see {@link AUTH_ERRORS}):
 * - `public`: none (`GET /health`);
 * - `metrics`: an API key with `metrics:read` or an operator credential with `read` (none with `MOSOO_METRICS_PUBLIC=on`);
 * - `api_key`: an API key with `scope` (and a full operator credential, every operator scope, when `operatorToo`);
 * - `registration`: the Driver enrollment token, a full operator credential, or a Driver's own token (re-registering itself);
 * - `driver`: one Driver instance's own token (a finalized instance: 409 `driver.finalized`);
 * - `driver_report`: one Driver instance's own token, a finalized instance's too: its evidence about an
 *   attempt it made before it was finalized (`complete`, `deadline-missed`, `late-result`; see `decideDeadlineMissed` and
 *   `decideLateEvidence` in effect-lifecycle.machine.ts); the ledger takes it only from the connection that made the attempt;
 * - `operator`: a named operator credential; each route checks its scope (none configured: 403 `auth.operator_disabled`);
 * - `console_session`: the operator console's session cookie, and `X-CSRF-Token` on a POST.
 */
export type RouteAuth =
  | { kind: "public" }
  | { kind: "metrics" }
  | { kind: "api_key"; scope: "runs:write" | "runs:read" | "runs:delete"; operatorToo?: true }
  | { kind: "registration" }
  | { kind: "driver" }
  | { kind: "driver_report" }
  | { kind: "operator" }
  | { kind: "console_session" };

/** The stable error codes each credential kind can answer with before the route itself runs. */
export const AUTH_ERRORS: Record<RouteAuth["kind"], readonly string[]> = {
  public: [],
  metrics: ["auth.missing_token", "auth.invalid_token", "auth.forbidden", "auth.scope"],
  api_key: ["auth.missing_token", "auth.invalid_token", "auth.forbidden", "auth.scope"],
  registration: ["auth.missing_token", "auth.invalid_token", "auth.forbidden", "request.rate_limited"],
  driver: ["auth.missing_token", "auth.invalid_token", "auth.forbidden", "driver.finalized"],
  driver_report: ["auth.missing_token", "auth.invalid_token", "auth.forbidden", "driver.finalized"],
  operator: ["auth.missing_token", "auth.invalid_token", "auth.forbidden", "auth.operator_disabled", "feature.disabled"],
  console_session: ["auth.session_required", "auth.csrf_rejected", "feature.disabled"],
};

/**
 * One route of the API, the single place its shape is written: the hono server
 * mounts it (`apps/api/src/entry/http/route-mount.ts`), and every client (the Driver, the operator
 * CLI through `callRoute`, the console's types, the e2e harness, the test helpers and fakes) builds its requests from it.
 * - `path`: hono syntax, `:name` for a path parameter (each one a key of `params`);
 * - `params`, `query`, `body`: zod schemas of what the client sends (the API validates with the same ones);
 * - `response`: the zod schema of a 2xx answer (`null`: no body, 204; absent: JSON not described here);
 * - `status`: the success status(es);
 * - `errors`: the route's own stable error codes (plus {@link AUTH_ERRORS} of its `auth`, plus
 *   `request.invalid`, `request.unsupported_media_type`, `request.too_large`, `store.busy` on any route);
 * - `bodyLimitBytes`: the largest body the route accepts (413 `request.too_large` above it);
 * - `idempotent`: a repeat changes nothing more, so a client may retry it after an ambiguous failure.
 */
export interface ApiRoute {
  method: RouteMethod;
  path: string;
  params?: z.ZodType<Record<string, string>> | undefined;
  query?: z.ZodType | undefined;
  body?: z.ZodType | undefined;
  response?: z.ZodType | null | undefined;
  status: readonly number[];
  auth: RouteAuth;
  errors: readonly string[];
  bodyLimitBytes: number;
  idempotent: boolean;
  /** A sentence on anything the schemas do not say (e.g. a body the server ignores). */
  note?: string | undefined;
}

/** Declares one route of the table, keeping its literal types (`bodyLimitBytes` defaults to {@link MAX_BODY_BYTES}). */
export function defineRoute<const R extends Omit<ApiRoute, "bodyLimitBytes"> & { bodyLimitBytes?: number }>(
  route: R,
): R & { bodyLimitBytes: number } {
  return { ...route, bodyLimitBytes: route.bodyLimitBytes ?? MAX_BODY_BYTES };
}

type SchemaInput<S> = S extends z.ZodType ? z.input<S> : never;
type SchemaOutput<S> = S extends z.ZodType ? z.output<S> : never;

/** What a client passes to call route `R`: `params` when it has path parameters, `query`, `body` when it takes them. */
export type RouteInput<R extends ApiRoute> = (R["params"] extends z.ZodType
  ? { params: SchemaInput<R["params"]> }
  : { params?: undefined }) &
  (R["query"] extends z.ZodType ? { query: SchemaInput<R["query"]> } : { query?: undefined }) &
  (R["body"] extends z.ZodType ? { body: SchemaInput<R["body"]> } : { body?: undefined });

/** The parsed body of route `R` (its body schema's output; `undefined` when it takes none). */
export type RouteBody<R extends ApiRoute> = R["body"] extends z.ZodType ? SchemaOutput<R["body"]> : undefined;

/** The parsed 2xx answer of route `R` (`undefined` for a 204, `unknown` when the table does not describe it). */
export type RouteOutput<R extends ApiRoute> = R["response"] extends z.ZodType
  ? SchemaOutput<R["response"]>
  : R["response"] extends null
    ? undefined
    : unknown;

/** Compiled path builders per route path (path-to-regexp's `compile`), built once per path text. */
const compiledPaths = new Map<string, PathFunction<Record<string, string>>>();

/**
 * The path of `route` with every `:name` replaced by `params[name]`, percent-encoded
 * (`encodeURIComponent`), built by path-to-regexp's `compile` (the same `:name` syntax hono mounts).
 * @throws Error `route.param_missing` when a parameter of the path has no value, or an empty one, in
 *   `params` (nothing is sent: an empty segment would address another resource than the caller meant).
 */
export function routePath(route: Pick<ApiRoute, "path">, params: Record<string, string> = {}): string {
  let toPath = compiledPaths.get(route.path);
  if (!toPath) {
    toPath = compile<Record<string, string>>(route.path, { encode: encodeURIComponent });
    compiledPaths.set(route.path, toPath);
  }
  try {
    return toPath(params);
  } catch (err) {
    throw new Error(`route.param_missing: ${route.path}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * The query string of a route's query object (`?a=1&b=x`, or `""` when nothing is set): each defined
 * value as `String(value)`, in the object's key order; `undefined` values are left out.
 */
export function routeQueryString(query: Record<string, unknown> | undefined): string {
  if (!query) return "";
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** Compiled path matchers per route path (path-to-regexp's `match`, strict: no trailing slash, case-sensitive like hono). */
const pathMatchers = new Map<string, MatchFunction<Partial<Record<string, string | string[]>>>>();

/**
 * Finds the route of `table` that answers `method pathname` (a path with real values, no query), with
 * its decoded path parameters (path-to-regexp's `match`, `decodeURIComponent`); `undefined` when none
 * does. Used by test fakes and helpers that are handed a raw request, so that they name no path themselves.
 */
export function matchRoute<T extends Record<string, ApiRoute>>(
  table: T,
  method: string,
  pathname: string,
): { name: keyof T & string; route: T[keyof T]; params: Record<string, string> } | undefined {
  for (const [name, route] of Object.entries(table)) {
    if (route.method !== method.toUpperCase()) continue;
    let matcher = pathMatchers.get(route.path);
    if (!matcher) {
      matcher = match(route.path, { decode: decodeURIComponent, trailing: false, sensitive: true });
      pathMatchers.set(route.path, matcher);
    }
    let found: ReturnType<typeof matcher>;
    try {
      found = matcher(pathname);
    } catch {
      continue; // a malformed percent-escape matches no route
    }
    if (!found) continue;
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(found.params)) if (typeof value === "string") params[key] = value;
    return { name, route: route as T[keyof T], params };
  }
  return undefined;
}
