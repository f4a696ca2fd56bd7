/** The console's calls to `/console/api/*`: same-origin, the session cookie, and the per-session CSRF token on every write. */

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
export type ApiResult<T> = { ok: true; data: T } | ApiFailure;

/**
 * Calls the console API. A 401 (session expired or signed out elsewhere) sends the browser to the
 * sign-in page. Network failures come back as `{ok: false, code: "network.failed"}`.
 */
export async function api<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<ApiResult<T>> {
  let res: Response;
  try {
    res = await fetch(path, {
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
