/** Builds the OpenAPI 3.1 description of the API from the route table (`API_ROUTES`): the table's zod schemas are its only source. */
import { z } from "zod";
import { API_ROUTES } from "./api-routes.contract.js";
import { AUTH_ERRORS, MAX_BODY_BYTES, type ApiRoute, type RouteAuth } from "./route-table.contract.js";

/** Codes every route may answer with besides its own and its credential's (see `ApiRoute.errors`). */
export const COMMON_ROUTE_ERRORS = ["request.invalid", "request.unsupported_media_type", "request.too_large", "store.busy"] as const;

/** A JSON value of the document (plain objects, arrays, strings, numbers, booleans). */
type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Options of {@link buildOpenApiDocument}. */
export interface OpenApiOptions {
  /** The HTTP status of every stable error code a route of the table can answer with (e.g. `{"run.not_found": 404}`). */
  errorStatus: Readonly<Record<string, number>>;
  /** The `info.version` of the document (the API package's version). */
  version: string;
  /** The session cookie's name of the operator console (`console_session` routes). */
  consoleCookie: string;
}

/** The security schemes of the document, one per credential kind (see `CredentialGuard` in the API's credential-guard.ts); every bearer scheme is `Authorization: Bearer <secret>`. */
const SECURITY_SCHEMES: JsonObject = {
  apiKey: {
    type: "http",
    scheme: "bearer",
    description: "An API key (`MOSOO_API_KEYS` or `MOSOO_API_KEYS_FILE`); a route names the scope it needs.",
  },
  driverEnrollment: { type: "http", scheme: "bearer", description: "`MOSOO_DRIVER_ENROLLMENT_TOKEN`: registers a new Driver instance." },
  driverToken: {
    type: "http",
    scheme: "bearer",
    description: "A Driver instance's own token, returned once by `POST /v1/drivers/register`.",
  },
  operatorToken: {
    type: "http",
    scheme: "bearer",
    description: "A named operator credential (`MOSOO_OPERATOR_TOKEN` or `MOSOO_OPERATOR_CREDENTIALS_FILE`) with the action's scope.",
  },
};

/** The OpenAPI security requirement of a credential kind (`[]`: no credential). */
function securityOf(auth: RouteAuth): Json[] {
  switch (auth.kind) {
    case "public":
      return [];
    case "metrics":
      return [{ apiKey: ["metrics:read"] }, { operatorToken: ["read"] }];
    case "api_key":
      return auth.operatorToo ? [{ apiKey: [auth.scope] }, { operatorToken: [] }] : [{ apiKey: [auth.scope] }];
    case "registration":
      return [{ driverEnrollment: [] }, { operatorToken: [] }, { driverToken: [] }];
    case "driver":
    case "driver_report":
      return [{ driverToken: [] }];
    case "operator":
      return [{ operatorToken: [] }];
    case "console_session":
      return [{ consoleSession: [] }];
  }
}

/** zod's own JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) of `schema`, without its `$schema` line. */
function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): JsonObject {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonObject;
  return rest;
}

/** The `parameters` of a route: each path parameter, then each query parameter, with its schema. */
function parametersOf(route: ApiRoute): Json[] {
  const out: Json[] = [];
  const add = (where: "path" | "query", schema: z.ZodType | undefined) => {
    if (!schema) return;
    const json = jsonSchemaOf(schema, "input");
    const properties = (json.properties ?? {}) as JsonObject;
    const required = new Set((json.required ?? []) as string[]);
    for (const [name, property] of Object.entries(properties)) {
      out.push({ name, in: where, required: where === "path" || required.has(name), schema: property });
    }
  };
  add("path", route.params);
  add("query", route.query);
  return out;
}

/** The responses of a route: its success status(es), then one entry per error status listing the codes it answers with. */
function responsesOf(route: ApiRoute, errorStatus: OpenApiOptions["errorStatus"]): JsonObject {
  const responses: JsonObject = {};
  for (const status of route.status) {
    if (route.response === null) responses[String(status)] = { description: "done; no body" };
    else if (route.response) {
      responses[String(status)] = {
        description: "success",
        content: { "application/json": { schema: jsonSchemaOf(route.response, "output") } },
      };
    } else {
      responses[String(status)] = { description: route.note ?? "success", content: { "text/plain": { schema: { type: "string" } } } };
    }
  }
  const codes = [...new Set([...route.errors, ...AUTH_ERRORS[route.auth.kind], ...COMMON_ROUTE_ERRORS])];
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const status = errorStatus[code];
    if (status === undefined)
      throw new Error(`openapi.error_status_missing: no HTTP status for the error code ${code} (${route.method} ${route.path})`);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `refused: ${list.map((c) => `\`${c}\``).join(", ")} (docs/errors.md says what each means and what to do next)`,
      content: {
        "application/json": {
          schema: {
            type: "object",
            required: ["error"],
            properties: {
              error: {
                type: "object",
                required: ["code", "message"],
                properties: { code: { enum: list }, message: { type: "string" }, details: { type: "object" } },
              },
            },
          },
        },
      },
    };
  }
  return responses;
}

/**
 * The OpenAPI 3.1 document of every route of `API_ROUTES` (and of `GET /openapi.json` itself, which
 * is in the table): per operation its credential (`security`, plus `x-mosoo-auth`: the table's
 * credential kind), path and query parameters, JSON request body, success answer, and one response
 * per error status naming its stable codes (`x-mosoo-idempotent`, `x-mosoo-body-limit-bytes` too).
 * Deterministic: the same table gives the same document, byte for byte once stringified.
 * @throws Error `openapi.error_status_missing` when a code a route answers with has no status in `opts.errorStatus`.
 */
export function buildOpenApiDocument(opts: OpenApiOptions): JsonObject {
  const paths: Record<string, JsonObject> = {};
  for (const [name, route] of Object.entries(API_ROUTES) as [string, ApiRoute][]) {
    const path = route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
    const operation: JsonObject = {
      operationId: name,
      tags: [route.path.split("/")[1] === "v1" ? `v1/${route.path.split("/")[2]}` : (route.path.split("/")[1] ?? "system")],
      ...(route.note ? { description: route.note } : {}),
      security: securityOf(route.auth),
      "x-mosoo-auth": route.auth as unknown as Json,
      "x-mosoo-idempotent": route.idempotent,
      "x-mosoo-body-limit-bytes": route.bodyLimitBytes,
      parameters: [
        ...parametersOf(route),
        ...(route.auth.kind === "console_session" && route.method === "POST"
          ? [{ name: "X-CSRF-Token", in: "header", required: true, schema: { type: "string" } }]
          : []),
      ],
      ...(route.body
        ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchemaOf(route.body, "input") } } } }
        : {}),
      responses: responsesOf(route, opts.errorStatus),
    };
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Mosoo runtime API",
      version: opts.version,
      description:
        "Generated from the route table of @mosoo/contracts. Every refusal answers `{error: {code, message, details?}}` with a stable code; " +
        `bodies are JSON (\`Content-Type: application/json\`) of at most ${MAX_BODY_BYTES} bytes.`,
    },
    servers: [{ url: "http://127.0.0.1:8787", description: "the default listen address (MOSOO_HOST, MOSOO_PORT)" }],
    components: {
      securitySchemes: {
        ...SECURITY_SCHEMES,
        consoleSession: {
          type: "apiKey",
          in: "cookie",
          name: opts.consoleCookie,
          description: "The operator console's session (sign in at /console).",
        },
      },
    },
    paths,
  };
}
