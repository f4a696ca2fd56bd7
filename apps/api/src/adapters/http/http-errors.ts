import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Logger } from "pino";
import type { z } from "zod";
import type { ApiErrorBody } from "@mosoo/contracts";
import { RuntimeError } from "../../modules/runtime/domain/runtime-errors.js";

/** Formats the first zod issue as one line: `path: message`. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid input";
  return issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
}

/**
 * Validates `value` against `schema`.
 * @throws RuntimeError `request.invalid` (400) with the first issue as a one-line message.
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new RuntimeError("request.invalid", firstIssue(parsed.error));
  return parsed.data;
}

/**
 * Reads and validates a JSON body.
 * @throws RuntimeError `request.invalid` when the body is not JSON or fails `schema`.
 */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new RuntimeError("request.invalid", "the request body must be a JSON object");
  }
  return parseOrThrow(schema, body);
}

/**
 * Maps any error to `{error: {code, message, details?}}`: a RuntimeError keeps its code and 4xx
 * status; anything else is logged and answered 500 `internal` without a stack.
 */
export function toErrorResponse(err: unknown, c: Context, logger: Logger): Response {
  if (err instanceof RuntimeError) {
    const body: ApiErrorBody = { error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } };
    return c.json(body, err.httpStatus as ContentfulStatusCode);
  }
  logger.error({ err, path: c.req.path }, "http.internal_error");
  const body: ApiErrorBody = { error: { code: "internal", message: "internal error; see the API log" } };
  return c.json(body, 500);
}
