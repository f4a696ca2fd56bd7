import type { Hono } from "hono";
import { API_ROUTES, matchRoute } from "@mosoo/contracts";

/**
 * Sends one JSON request to an in-process hono `app` (a string `body` is sent as is, so a test can
 * send malformed JSON), with `Authorization: Bearer <token>` when given. Resolves to the HTTP
 * status and the parsed JSON body (`null` for an empty body, `{raw}` for a body that is not JSON).
 */
export async function requestJson(
  app: Hono,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: any }> {
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

/** Secrets of the in-process test apps (each at least 16 characters). */
export const TEST_SECRETS = {
  operatorToken: "test-operator-token-0123456789",
  enrollmentToken: "test-enrollment-token-0123456789",
  /** An API key with every scope. */
  adminKey: "test-admin-key-0123456789abcdef",
  /** An API key with `runs:read` only. */
  readerKey: "test-reader-key-0123456789abcdef",
} as const;

/** The credential options of `createHttpApp` for {@link TEST_SECRETS} (registration rate high enough for any test). */
export const TEST_AUTH = {
  operatorToken: TEST_SECRETS.operatorToken,
  driverEnrollmentToken: TEST_SECRETS.enrollmentToken,
  apiKeys: [
    { name: "admin", secret: TEST_SECRETS.adminKey, scopes: ["runs:write", "runs:read", "runs:delete", "metrics:read"] as const },
    { name: "reader", secret: TEST_SECRETS.readerKey, scopes: ["runs:read"] as const },
  ].map((k) => ({ ...k, scopes: [...k.scopes] })),
  driverRegisterPerMinute: 10_000,
};

/** The API's credential variables for {@link TEST_SECRETS} (the admin key and the enrollment token), for tests that start a real API from env. */
export const TEST_CREDENTIALS_ENV = {
  MOSOO_API_KEYS: `admin:${TEST_SECRETS.adminKey}:runs:write+runs:read+runs:delete+metrics:read`,
  MOSOO_DRIVER_ENROLLMENT_TOKEN: TEST_SECRETS.enrollmentToken,
} as const;

/**
 * The credential a test that is not about auth sends on `method path` when it gives none, from the
 * route's credential in the table (`API_ROUTES` of `@mosoo/contracts`): the enrollment token on
 * register, the admin API key on the run API and `/metrics`, none on the other Driver routes (they
 * need the Driver's own token), on the operator routes and on a path that is no route.
 */
export function defaultCredential(method: string, path: string): string | undefined {
  const kind = matchRoute(API_ROUTES, method, path.split("?")[0] ?? path)?.route.auth.kind;
  if (kind === "registration") return TEST_SECRETS.enrollmentToken;
  if (kind === "api_key" || kind === "metrics") return TEST_SECRETS.adminKey;
  return undefined;
}
