/** The console's calls to `/console/api/*`, typed by the route table (`CONSOLE_API`): same-origin, the session cookie, and the per-session CSRF token on every write. */
import { operatorActionPath } from "@mosoo/contracts/operator-action-path";
import type {
  CONSOLE_ACTION_ROUTES,
  CONSOLE_API,
  OperatorActionName,
  OperatorActionSent,
  RouteInput,
  RouteOutput,
} from "@mosoo/contracts/operator-routes";

/** The console's routes as the route table declares them (types only: the browser bundle carries no zod). */
type ConsoleApi = typeof CONSOLE_API;
/** The console's operator actions as the route table declares them, keyed by action name (types only). */
type ConsoleActions = typeof CONSOLE_ACTION_ROUTES;
/** The route table's names of the console's action routes (`consoleReconcile`, ...): called with {@link act}. */
type ConsoleActionRouteName = `console${Capitalize<OperatorActionName>}`;
/** A JSON route of the console API other than an action (`consoleEvents` is a server-sent event stream, opened with `EventSource`). */
export type ConsoleRouteName = Exclude<keyof ConsoleApi, "consoleEvents" | ConsoleActionRouteName>;
/** The parsed answer of console route `N` (its response schema's type in the route table). */
export type ConsoleAnswer<N extends keyof ConsoleApi> = RouteOutput<ConsoleApi[N]>;
/** What console route `N` takes as its `query` or `body` (the request schema's input type in the route table). */
export type ConsoleSent<N extends ConsoleRouteName, K extends "query" | "body"> = NonNullable<RouteInput<ConsoleApi[N]>[K]>;
/** The parsed answer of operator action `N` (its response schema's type in the action table). */
export type ConsoleActionAnswer<N extends OperatorActionName> = RouteOutput<ConsoleActions[N]>;

/**
 * Method and path template of each console route other than the actions. Each literal must equal
 * the route table's (the compiler checks it against `CONSOLE_API`), so a renamed or moved route fails
 * the console's type check instead of a request at run time; a new route must be added here too.
 * The actions' routes are derived from their names ({@link actionRoute}).
 */
export const CONSOLE_ROUTES: { [N in Exclude<keyof ConsoleApi, ConsoleActionRouteName>]: Pick<ConsoleApi[N], "method" | "path"> } = {
  consoleSession: { method: "GET", path: "/console/api/session" },
  consoleList: { method: "GET", path: "/console/api/effects" },
  consoleStats: { method: "GET", path: "/console/api/stats" },
  consoleEvents: { method: "GET", path: "/console/api/events" },
  consoleShow: { method: "GET", path: "/console/api/effects/:effectId" },
};

/** Method and path template of operator action `name` (`POST /console/api/effects/:effectId/<name>`), checked against the route table's. */
function actionRoute<N extends OperatorActionName>(name: N): Pick<ConsoleActions[N], "method" | "path"> {
  return { method: "POST", path: operatorActionPath("/console/api", name) };
}

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
 * table types them) and answers its typed JSON. See {@link send}.
 */
export async function call<N extends ConsoleRouteName>(name: N, input: RouteInput<ConsoleApi[N]>): Promise<ApiResult<ConsoleAnswer<N>>> {
  const { method, path } = CONSOLE_ROUTES[name];
  const { params, query, body } = input as { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };
  return send(method, urlOf(path, params, query), body);
}

/**
 * Takes operator action `name` (one of the action table's) on effect `effectId` with its typed
 * `body`, and answers the action's typed JSON. See {@link send}.
 */
export async function act<N extends OperatorActionName>(
  name: N,
  effectId: string,
  body: OperatorActionSent<N>,
): Promise<ApiResult<ConsoleActionAnswer<N>>> {
  const { method, path } = actionRoute(name);
  return send(method, urlOf(path, { effectId }), body);
}

/**
 * Sends one request to `url` and answers its JSON. A 401 (session expired or signed out elsewhere)
 * sends the browser to the sign-in page. Network failures come back as `{ok: false, code: "network.failed"}`.
 * The answer is typed, not re-checked here (the API built it from the same contract).
 */
async function send<T>(method: string, url: string, body: unknown): Promise<ApiResult<T>> {
  let res: Response;
  try {
    res = await fetch(url, {
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
  if (res.ok) return { ok: true, data: json as T };
  const error = (json as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return {
    ok: false,
    status: res.status,
    code: typeof error?.code === "string" ? error.code : "http.error",
    message: typeof error?.message === "string" ? error.message : `HTTP ${res.status}`,
  };
}
