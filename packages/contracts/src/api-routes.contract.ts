import { z } from "zod";
import { DRIVER_API } from "./driver-protocol.contract.js";
import { UlidSchema } from "./ids.contract.js";
import { RUN_API } from "./run-api.contract.js";
import { defineRoute, type ApiRoute } from "./route-table.contract.js";

export { DRIVER_API, RUN_API };

const effectId = z.object({ effectId: UlidSchema });
/** A JSON object body, as the operator clients send it; the API checks it against its operator contract (`apps/api/src/modules/*`/operator.contract.ts). */
const operatorBody = z.record(z.string(), z.unknown());
/** The operator list's query, as the clients send it (strings); the API checks it against `OperatorListQuerySchema`. */
const operatorQuery = z.record(z.string(), z.string());
const OPERATOR_NOTE =
  "the body/query is checked by the API's operator contract (OperatorListQuerySchema, Operator*RequestSchema), which needs the adapter package's limits";

/** `POST /api/operator/effects/:effectId/<action>`: an operator action on one effect, with `{actor, reason, ...}`. */
const operatorAction = <const P extends string>(path: P, errors: readonly string[], status: readonly number[]) =>
  defineRoute({
    method: "POST",
    path,
    params: effectId,
    body: operatorBody,
    status,
    auth: { kind: "operator" },
    errors,
    idempotent: false,
    note: OPERATOR_NOTE,
  });

/** The operator routes (docs/DESIGN.md §7), behind the operator token, while `MOSOO_EFFECT_RECONCILIATION` is on. */
export const OPERATOR_API = {
  operatorList: defineRoute({
    method: "GET",
    path: "/api/operator/effects",
    query: operatorQuery,
    status: [200],
    auth: { kind: "operator" },
    errors: [],
    idempotent: true,
    note: OPERATOR_NOTE,
  }),
  operatorShow: defineRoute({
    method: "GET",
    path: "/api/operator/effects/:effectId",
    params: effectId,
    status: [200],
    auth: { kind: "operator" },
    errors: ["effect.not_found"],
    idempotent: true,
  }),
  operatorReconcile: operatorAction("/api/operator/effects/:effectId/reconcile", ["effect.not_found", "effect.not_reconcilable"], [200]),
  operatorResolve: operatorAction("/api/operator/effects/:effectId/resolve", ["effect.not_found", "effect.not_unknown"], [200]),
  operatorCompensate: operatorAction(
    "/api/operator/effects/:effectId/compensate",
    [
      "effect.not_found",
      "effect.not_succeeded",
      "compensation.not_declared",
      "compensation.exists",
      "compensation.plan_failed",
      "compensation.driver_unavailable",
      "driver.not_found",
    ],
    [202],
  ),
} as const satisfies Record<string, ApiRoute>;

/**
 * The operator console's JSON API (docs/DESIGN.md §7, §10): the same operator service, behind the
 * console's session cookie (and `X-CSRF-Token` on a POST); the body never names the actor (the
 * session's is used). The console's pages, assets and form posts are not JSON routes and are not here.
 */
export const CONSOLE_API = {
  consoleSession: defineRoute({
    method: "GET",
    path: "/console/api/session",
    status: [200],
    auth: { kind: "console_session" },
    errors: [],
    idempotent: true,
  }),
  consoleList: defineRoute({
    method: "GET",
    path: "/console/api/effects",
    query: operatorQuery,
    status: [200],
    auth: { kind: "console_session" },
    errors: [],
    idempotent: true,
    note: OPERATOR_NOTE,
  }),
  consoleStats: defineRoute({
    method: "GET",
    path: "/console/api/stats",
    status: [200],
    auth: { kind: "console_session" },
    errors: [],
    idempotent: true,
  }),
  consoleEvents: defineRoute({
    method: "GET",
    path: "/console/api/events",
    status: [200],
    auth: { kind: "console_session" },
    errors: [],
    idempotent: true,
    note: "server-sent events (text/event-stream): ready, then change or ping",
  }),
  consoleShow: defineRoute({
    method: "GET",
    path: "/console/api/effects/:effectId",
    params: effectId,
    status: [200],
    auth: { kind: "console_session" },
    errors: ["effect.not_found"],
    idempotent: true,
  }),
  consoleReconcile: defineRoute({
    method: "POST",
    path: "/console/api/effects/:effectId/reconcile",
    params: effectId,
    body: operatorBody,
    status: [200],
    auth: { kind: "console_session" },
    errors: OPERATOR_API.operatorReconcile.errors,
    idempotent: false,
    note: OPERATOR_NOTE,
  }),
  consoleResolve: defineRoute({
    method: "POST",
    path: "/console/api/effects/:effectId/resolve",
    params: effectId,
    body: operatorBody,
    status: [200],
    auth: { kind: "console_session" },
    errors: OPERATOR_API.operatorResolve.errors,
    idempotent: false,
    note: OPERATOR_NOTE,
  }),
  consoleCompensate: defineRoute({
    method: "POST",
    path: "/console/api/effects/:effectId/compensate",
    params: effectId,
    body: operatorBody,
    status: [202],
    auth: { kind: "console_session" },
    errors: OPERATOR_API.operatorCompensate.errors,
    idempotent: false,
    note: OPERATOR_NOTE,
  }),
} as const satisfies Record<string, ApiRoute>;

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

/** The API's own routes: liveness, readiness and Prometheus metrics (text, not JSON). */
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
} as const satisfies Record<string, ApiRoute>;

/**
 * THE route table: every JSON route of the API, once (docs/DESIGN.md §10). The API mounts each entry
 * (and a test checks both ways that the mounted routes and this table are the same set); the Driver,
 * the operator CLI, the e2e harness and the test helpers derive their requests from it.
 */
export const API_ROUTES = { ...SYSTEM_API, ...RUN_API, ...DRIVER_API, ...OPERATOR_API, ...CONSOLE_API } as const;
/** The name of a route of {@link API_ROUTES}. */
export type ApiRouteName = keyof typeof API_ROUTES;
