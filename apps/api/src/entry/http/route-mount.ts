// Mounts one route of the shared route table on the hono app, with its guards and its typed, lazily parsed request.
import type { Context, Env, Hono, MiddlewareHandler } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";
import { MAX_BODY_BYTES, type ApiRoute } from "@mosoo/contracts";
import { UserFacingError } from "../../kernel/user-facing-error.js";
import { parseOrThrow, readJson } from "./http-errors.js";
import { requestBodyLimit } from "./request-body-limit.js";

type ParamName<R extends ApiRoute> = R["params"] extends z.ZodObject<infer Shape> ? keyof Shape & string : never;
type Parsed<S> = S extends z.ZodType ? z.output<S> : never;
/** What a route's handler may answer with: the input type of the table's response schema (anything JSON when the table does not describe it). */
type RouteReply<R extends ApiRoute> = R["response"] extends z.ZodType ? z.input<R["response"]> : unknown;

/**
 * The request of one table route, as its handler reads it. Every part is parsed on demand, in the
 * order the handler asks (so the first refusal is the same as before the table existed), with the
 * API's own readers (`parseOrThrow`, `readJson`: shared JSON rules first, then the schema; strict
 * UTF-8; 415 without the JSON content type) and the table's schemas unless the handler passes another.
 */
interface RouteRequest<R extends ApiRoute> {
  /** Path parameter `name`, checked against its schema in the table. @throws UserFacingError `request.invalid` (400). */
  param(name: ParamName<R>): string;
  /**
   * The query, checked against `schema` (default: the table's). A parameter given more than once
   * (`?limit=10&limit=-5`) is refused whatever the schema: reading only the first (or the last) value
   * would let a proxy and the API see different requests.
   * @throws UserFacingError `request.invalid` (400), `query parameter "<name>" is given more than once` for a repeat.
   */
  query<S extends z.ZodType = NonNullable<R["query"]> & z.ZodType>(schema?: S): z.output<S>;
  /** The JSON body, checked against `schema` (default: the table's). @throws UserFacingError `request.unsupported_media_type` (415), `request.invalid` (400). */
  body<S extends z.ZodType = NonNullable<R["body"]> & z.ZodType>(schema?: S): Promise<Parsed<S>>;
  /** Answers `value` as JSON with `status` (default: the route's first success status); its type is checked against the table's response schema. */
  json(value: RouteReply<R>, status?: R["status"][number]): Response;
}

/** The last handler of a table route: the hono context and the route's {@link RouteRequest}. */
export type RouteHandler<E extends Env, R extends ApiRoute> = (c: Context<E>, req: RouteRequest<R>) => Response | Promise<Response>;

/**
 * The request's query as one value per name (hono's `c.req.query()`), after refusing a name given
 * more than once. The message names the parameter cut to 64 characters and
 * JSON-quoted (escaped), never more of what the client sent.
 * @throws UserFacingError `request.invalid` (400).
 */
function singleValuedQuery(c: Context): Record<string, string> {
  for (const [name, values] of Object.entries(c.req.queries())) {
    if (values.length > 1)
      throw new UserFacingError("request.invalid", `query parameter ${JSON.stringify(name.slice(0, 64))} is given more than once`);
  }
  return c.req.query();
}

function requestOf<E extends Env, R extends ApiRoute>(c: Context<E>, route: R): RouteRequest<R> {
  const shape = (route.params as { shape?: Record<string, z.ZodType> } | undefined)?.shape ?? {};
  return {
    param: (name) => {
      const schema = shape[name];
      if (!schema) throw new Error(`route.param_unknown: ${route.path} has no parameter ${name}`);
      return parseOrThrow(schema, c.req.param(name)) as string;
    },
    query: (schema) => parseOrThrow((schema ?? route.query) as z.ZodType, singleValuedQuery(c)) as never,
    body: async (schema) => (await readJson(c, (schema ?? route.body) as z.ZodType)) as never,
    json: (value, status) => c.json(value as object, (status ?? route.status[0]) as ContentfulStatusCode),
  };
}

/**
 * Mounts one route of the table (`API_ROUTES` of `@mosoo/contracts`) on `app`: its method and path
 * from the table, then `middleware` in order (the credential guard first: `CredentialGuard.forRoute`),
 * then `handler` with the route's {@link RouteRequest}. A route whose `bodyLimitBytes` is below the
 * API's global {@link MAX_BODY_BYTES} gets its own `requestBodyLimit` (413 `request.too_large`, as the global one); every route of the table today takes the global limit.
 */
export function mountRoute<E extends Env, R extends ApiRoute>(
  app: Hono<E>,
  route: R,
  middleware: ReadonlyArray<MiddlewareHandler<E>>,
  handler: RouteHandler<E, R>,
): void {
  const limit: MiddlewareHandler<E>[] = route.bodyLimitBytes < MAX_BODY_BYTES ? [requestBodyLimit<E>(route.bodyLimitBytes)] : [];
  const last: MiddlewareHandler<E> = async (c) => handler(c, requestOf(c, route));
  const handlers: MiddlewareHandler<E>[] = [...limit, ...middleware, last];
  app.on(route.method, route.path, ...(handlers as [MiddlewareHandler<E>]));
}
