import type { Hono } from "hono";

/**
 * Sends one JSON request to an in-process hono `app` (a string `body` is sent as is, so a test can
 * send malformed JSON), with `Authorization: Bearer <token>` when given. Resolves to the HTTP
 * status and the parsed JSON body (`null` for an empty body, `{raw}` for a body that is not JSON).
 */
export async function requestJson(app: Hono, method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any }> {
  const res = await app.request(path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: text ? JSON.parse(text) : null };
  } catch {
    return { status: res.status, body: { raw: text } };
  }
}
