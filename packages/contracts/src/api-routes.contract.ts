// The API's route table: every JSON route once (system, run, Driver, operator, console), plus the readiness answer.
import { z } from "zod";
import { DRIVER_API } from "./driver-protocol.contract.js";
import { CONSOLE_API, OPERATOR_API } from "./operator-routes.contract.js";
import { RUN_API } from "./run-api.contract.js";
import { defineRoute, type ApiRoute } from "./route-table.contract.js";

export { CONSOLE_API, DRIVER_API, OPERATOR_API, RUN_API };

/**
 * The answer of `GET /ready` (200 when `status` is `ready`, else 503 with the same body): each check
 * by name. `store`: the store answered a trivial query within its bound (`ok`), did not in time
 * (`timeout`) or failed (`unavailable`); `schema`: the database's newest migration is this build's
 * (`current`), older (`behind`), newer (`newer`, another build migrated it), or `unknown` (no answer);
 * `adapterHost`: the reconciliation adapter host is `up` or `closed`.
 */
export const ReadinessSchema = z.object({
  status: z.enum(["ready", "not_ready"]),
  checks: z.object({
    store: z.enum(["ok", "timeout", "unavailable"]),
    schema: z.enum(["current", "behind", "newer", "unknown"]),
    adapterHost: z.enum(["up", "closed"]),
  }),
});
/** See {@link ReadinessSchema}. */
export type Readiness = z.infer<typeof ReadinessSchema>;

/** The API's own routes: liveness, readiness, Prometheus metrics (text, not JSON) and the OpenAPI document. */
export const SYSTEM_API = {
  health: defineRoute({
    method: "GET",
    path: "/health",
    response: z.object({ status: z.literal("ok") }),
    status: [200],
    auth: { kind: "public" },
    errors: [],
    idempotent: true,
    note: "liveness: the process answers; says nothing about the store",
  }),
  ready: defineRoute({
    method: "GET",
    path: "/ready",
    response: ReadinessSchema,
    status: [200],
    auth: { kind: "public" },
    errors: [],
    idempotent: true,
    note: "readiness: 200 when the store answers within its bound, the schema is current and the adapter host is up; else 503 with the same body naming the check that failed",
  }),
  metrics: defineRoute({
    method: "GET",
    path: "/metrics",
    status: [200],
    auth: { kind: "metrics" },
    errors: [],
    idempotent: true,
    note: "Prometheus text format",
  }),
  openapi: defineRoute({
    method: "GET",
    path: "/openapi.json",
    response: z.record(z.string(), z.unknown()),
    status: [200],
    auth: { kind: "public" },
    errors: [],
    idempotent: true,
    note: "this document: the OpenAPI 3.1 description of every route of the table, open like /health (it holds no secret)",
  }),
} as const satisfies Record<string, ApiRoute>;

/**
 * THE route table: every JSON route of the API, once. The API mounts each entry
 * (and a test checks both ways that the mounted routes and this table are the same set); the Driver,
 * the operator CLI, the e2e harness and the test helpers derive their requests from it.
 */
export const API_ROUTES = { ...SYSTEM_API, ...RUN_API, ...DRIVER_API, ...OPERATOR_API, ...CONSOLE_API } as const;
/** The name of a route of {@link API_ROUTES}. */
export type ApiRouteName = keyof typeof API_ROUTES;
