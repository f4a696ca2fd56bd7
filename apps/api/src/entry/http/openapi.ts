/** The API's OpenAPI 3.1 document (`GET /openapi.json`, `docs/openapi.json`), built from the route table with the HTTP status of each error code. */
import { buildOpenApiDocument } from "@mosoo/contracts";
import { USER_FACING_ERROR_STATUS } from "../../kernel/user-facing-error.js";
import { CONSOLE_COOKIE } from "./console/console.routes.js";

/**
 * The HTTP status of every stable code an HTTP answer of the API can carry: the services' codes
 * ({@link USER_FACING_ERROR_STATUS}) and those the HTTP layer answers itself (body limit, a request the HTTP parser refused (`client-error.ts`), busy store,
 * unknown commit, the console's session and CSRF checks, an unknown route, an internal error).
 */
export const HTTP_ERROR_STATUS: Readonly<Record<string, number>> = {
  ...USER_FACING_ERROR_STATUS,
  "request.too_large": 413,
  "request.headers_too_large": 431,
  "request.timeout": 408,
  "store.busy": 503,
  "store.commit_unknown": 503,
  "auth.session_required": 401,
  "auth.csrf_rejected": 403,
  "route.not_found": 404,
  internal: 500,
};

/** The version of the HTTP API the document describes: the `/v1` of its run and Driver paths. */
const API_VERSION = "1";

let cached: Record<string, unknown> | undefined;

/**
 * The OpenAPI 3.1 document of the API (built once per process from `API_ROUTES`; deterministic).
 * @throws Error `openapi.error_status_missing` when a route names a code without a status in {@link HTTP_ERROR_STATUS}.
 */
export function openApiDocument(): Record<string, unknown> {
  cached ??= buildOpenApiDocument({ errorStatus: HTTP_ERROR_STATUS, version: API_VERSION, consoleCookie: CONSOLE_COOKIE });
  return cached;
}
