/** The console's calls to `/console/api/*`, typed by the route table (`CONSOLE_API`): same-origin, the session cookie, and the per-session CSRF token on every write. */
import type { CONSOLE_API, RouteInput, RouteOutput } from "@mosoo/contracts/operator-routes";

/** The console's routes as the route table declares them (types only: the browser bundle carries no zod). */
type ConsoleApi = typeof CONSOLE_API;
/** A JSON route of the console API (`consoleEvents` is a server-sent event stream, opened with `EventSource`). */
export type ConsoleRouteName = Exclude<keyof ConsoleApi, "consoleEvents">;
/** The parsed answer of console route `N` (its response schema's type in the route table). */
export type ConsoleAnswer<N extends keyof ConsoleApi> = RouteOutput<ConsoleApi[N]>;
/** What console route `N` takes as its `query` or `body` (the request schema's input type in the route table). */
export type ConsoleSent<N extends ConsoleRouteName, K extends "query" | "body"> = NonNullable<RouteInput<ConsoleApi[N]>[K]>;

/**
 * Method and path template of each console route. Each literal must equal the route table's (the
 * compiler checks it against `CONSOLE_API`), so a renamed or moved route fails the console's type
 * check instead of a request at run time; a new route must be added here too.
 */
export const CONSOLE_ROUTES: { [N in keyof ConsoleApi]: Pick<ConsoleApi[N], "method" | "path"> } = {
  consoleSession: { method: "GET", path: "/console/api/session" },
  consoleList: { method: "GET", path: "/console/api/effects" },
  consoleStats: { method: "GET", path: "/console/api/stats" },
  consoleEvents: { method: "GET", path: "/console/api/events" },
  consoleShow: { method: "GET", path: "/console/api/effects/:effectId" },
  consoleReconcile: { method: "POST", path: "/console/api/effects/:effectId/reconcile" },
  consoleResolve: { method: "POST", path: "/console/api/effects/:effectId/resolve" },
  consoleCompensate: { method: "POST", path: "/console/api/effects/:effectId/compensate" },
};

let csrfToken = "";

/** Remembers the session's CSRF token (sent as `X-CSRF-Token` on every POST). */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** A refusal as the API typed it: HTTP status, stable `code`, one-line `message`. */
export interface ApiFailure {
  ok: false;
  status: number;
  code: string;
  message: string;
}

/** The result of a call: the JSON body, or the API's typed refusal. */
type ApiResult<T> = { ok: true; data: T } | ApiFailure;

/** `template` with each `:name` replaced by `params[name]`, percent-encoded; then the query's set values as a query string. */
function urlOf(template: string, params: Record<string, string> = {}, query: Record<string, unknown> = {}): string {
  const path = template.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ""));
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) search.set(key, String(value));
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

/**
 * Calls console route `name` with its typed `input` (path parameters, query, body, as the route
 * table types them) and answers its typed JSON. A 401 (session expired or signed out elsewhere)
 * sends the browser to the sign-in page. Network failures come back as `{ok: false, code: "network.failed"}`.
 * The answer is typed, not re-checked here (the API built it from the same contract).
 */
export async function call<N extends ConsoleRouteName>(name: N, input: RouteInput<ConsoleApi[N]>): Promise<ApiResult<ConsoleAnswer<N>>> {
  const { method, path } = CONSOLE_ROUTES[name];
  const { params, query, body } = input as { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };
  let res: Response;
  try {
    res = await fetch(urlOf(path, params, query), {
      method,
      credentials: "same-origin",
      headers: method === "POST" ? { "content-type": "application/json", "x-csrf-token": csrfToken } : {},
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    return { ok: false, status: 0, code: "network.failed", message: `the API did not answer (${String(err)})` };
  }
  if (res.status === 401) {
    location.assign("/console/sign-in");
    return { ok: false, status: 401, code: "auth.session_required", message: "signed out" };
  }
  const json = (await res.json().catch(() => null)) as unknown;
  if (res.ok) return { ok: true, data: json as ConsoleAnswer<N> };
  const error = (json as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return {
    ok: false,
    status: res.status,
    code: typeof error?.code === "string" ? error.code : "http.error",
    message: typeof error?.message === "string" ? error.message : `HTTP ${res.status}`,
  };
}
