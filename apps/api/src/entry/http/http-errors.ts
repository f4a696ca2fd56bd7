// The HTTP layer's input and error edges: strict JSON body and query validation in, `{error: {code, message}}` responses out.
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Logger } from "pino";
import type { z } from "zod";
import { decodeUtf8Strict, findJsonProblem, formatJsonProblem, INVALID_UTF8_MESSAGE, type ApiErrorBody } from "@mosoo/contracts";
import { UserFacingError } from "../../kernel/user-facing-error.js";
import { isStoreBusy, STORE_BUSY_MESSAGE, STORE_BUSY_RETRY_AFTER_S, storeBusyCause } from "../../platform/db/store-busy.js";
import { StoreCommitUnknownError } from "../../platform/db/store-errors.js";
import type { StoreBusyWatch } from "../../platform/db/store-busy-watch.js";

/** Formats the first zod issue as one line: `path: message`. */
function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid input";
  return issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
}

/**
 * Validates `value` (a parsed body, a query object, a path parameter) first against the shared
 * JSON rules of `@mosoo/contracts` (`findJsonProblem`: nesting ≤ 400, no `__proto__` /
 * `constructor` / `prototype` key, well-formed UTF-16 everywhere; iterative, so any depth is safe),
 * then against `schema` (see {@link findJsonProblem}).
 * @throws UserFacingError `request.invalid` (400) with the first problem as a one-line message.
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const problem = findJsonProblem(value);
  if (problem) throw new UserFacingError("request.invalid", formatJsonProblem(problem));
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new UserFacingError("request.invalid", firstIssue(parsed.error));
  return parsed.data;
}

/** True when a `Content-Type` header names `application/json` (any parameters, any letter case). */
export function isJsonContentType(header: string | undefined): boolean {
  return (header ?? "").split(";")[0]?.trim().toLowerCase() === "application/json";
}

/**
 * Reads and validates a JSON body: `Content-Type: application/json` is required (a `text/plain`
 * body is what a web page can send cross-origin without a preflight); the raw bytes are decoded
 * with a fatal UTF-8 decoder (`decodeUtf8Strict` of `@mosoo/contracts`: an invalid byte is refused,
 * never replaced by U+FFFD), then parsed and checked with {@link parseOrThrow} (request
 * schemas are strict, so an unknown field is refused too).
 * @throws UserFacingError `request.unsupported_media_type` (415) without the JSON content type;
 *   `request.invalid` (400) when the body is not valid UTF-8 (`the request body is not valid
 *   UTF-8`), not JSON, or breaks a rule.
 */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  if (!isJsonContentType(c.req.header("content-type"))) {
    throw new UserFacingError("request.unsupported_media_type", "send the body as JSON with Content-Type: application/json");
  }
  const text = decodeUtf8Strict(await c.req.arrayBuffer());
  if (text === null) throw new UserFacingError("request.invalid", INVALID_UTF8_MESSAGE);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new UserFacingError(
      "request.invalid",
      `the request body is not valid JSON (${err instanceof SyntaxError ? err.message : "unparsable"})`,
    );
  }
  return parseOrThrow(schema, body);
}

/**
 * Maps any error to `{error: {code, message, details?}}`: a UserFacingError keeps its code and 4xx
 * status; a busy store answers 503 `store.busy` with `Retry-After: 1` (nothing was written) and is
 * noted in `storeBusy` (the maintenance sweep then gives Drivers a full heartbeat TTL after it: their
 * heartbeats may have been refused the same way); a connection lost during COMMIT answers 503
 * `store.commit_unknown` with `Retry-After: 1` (the write may or may not have landed: the client
 * repeats the request, which every write's compare-and-set makes safe; see `StoreCommitUnknownError`);
 * anything else is logged and answered 500 `internal` without a stack.
 */
export function toErrorResponse(err: unknown, c: Context, logger: Logger, storeBusy?: StoreBusyWatch): Response {
  if (err instanceof UserFacingError) {
    const body: ApiErrorBody = { error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } };
    return c.json(body, err.httpStatus as ContentfulStatusCode);
  }
  if (isStoreBusy(err)) {
    storeBusy?.noteBusy();
    logger.warn({ path: c.req.path, method: c.req.method, cause: storeBusyCause(err) }, "http.store_busy");
    const body: ApiErrorBody = { error: { code: "store.busy", message: STORE_BUSY_MESSAGE } };
    return c.json(body, 503, { "retry-after": String(STORE_BUSY_RETRY_AFTER_S) });
  }
  if (err instanceof StoreCommitUnknownError) {
    logger.warn({ path: c.req.path, method: c.req.method }, "http.store_commit_unknown");
    const body: ApiErrorBody = { error: { code: err.code, message: err.message } };
    return c.json(body, 503, { "retry-after": String(err.retryAfterSeconds) });
  }
  logger.error({ err, path: c.req.path }, "http.internal_error");
  const body: ApiErrorBody = { error: { code: "internal", message: "internal error; see the API log" } };
  return c.json(body, 500);
}
