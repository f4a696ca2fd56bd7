/** The operator's routes of the route table (`/api/operator/*` and the console's `/console/api/*`), each with its request and answer schemas. */
import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import {
  ConsoleSessionSchema,
  ConsoleStatsSchema,
  OperatorCompensateRequestSchema,
  OperatorEffectDetailSchema,
  OperatorEffectPageSchema,
  OperatorListQuerySchema,
  OperatorReconcileAnswerSchema,
  OperatorReconcileRequestSchema,
  OperatorResolveRequestSchema,
  OperatorEffectSummarySchema,
  QueuedCompensationSchema,
} from "./operator-api.contract.js";
import { defineRoute, type ApiRoute, type RouteAuth } from "./route-table.contract.js";

const effectId = z.object({ effectId: UlidSchema });

/** Each operator action once: its body and answer schemas, success status and refusal codes; both the token routes and the console's share it. */
const ACTIONS = {
  reconcile: {
    body: OperatorReconcileRequestSchema,
    response: OperatorReconcileAnswerSchema,
    status: [200],
    errors: ["effect.not_found", "effect.not_reconcilable"],
  },
  resolve: {
    body: OperatorResolveRequestSchema,
    response: OperatorEffectSummarySchema,
    status: [200],
    errors: ["effect.not_found", "effect.not_unknown", "effect.lookup_in_progress"],
  },
  compensate: {
    body: OperatorCompensateRequestSchema,
    response: QueuedCompensationSchema,
    status: [202],
    errors: [
      "effect.not_found",
      "effect.not_succeeded",
      "compensation.not_declared",
      "compensation.exists",
      "compensation.plan_failed",
      "compensation.driver_unavailable",
      "driver.not_found",
    ],
  },
} as const;

/**
 * The three operator actions under `prefix` behind `auth`: `POST <prefix>/effects/:effectId/<action>`
 * with `{reason, ...}` (the action's body schema), answering the action's schema.
 */
function actionRoutes<const Prefix extends string, const Auth extends RouteAuth>(prefix: Prefix, auth: Auth) {
  const common = { method: "POST", params: effectId, auth, idempotent: false } as const;
  return {
    reconcile: defineRoute({ ...common, path: `${prefix}/effects/:effectId/reconcile` as const, ...ACTIONS.reconcile }),
    resolve: defineRoute({ ...common, path: `${prefix}/effects/:effectId/resolve` as const, ...ACTIONS.resolve }),
    compensate: defineRoute({ ...common, path: `${prefix}/effects/:effectId/compensate` as const, ...ACTIONS.compensate }),
  };
}
const operatorActions = actionRoutes("/api/operator", { kind: "operator" });
const consoleActions = actionRoutes("/console/api", { kind: "console_session" });

/** The operator routes (docs/DESIGN.md §7), behind a named operator credential's token, while `MOSOO_EFFECT_RECONCILIATION` is on. */
export const OPERATOR_API = {
  operatorList: defineRoute({
    method: "GET",
    path: "/api/operator/effects",
    query: OperatorListQuerySchema,
    response: OperatorEffectPageSchema,
    status: [200],
    auth: { kind: "operator" },
    errors: [],
    idempotent: true,
  }),
  operatorShow: defineRoute({
    method: "GET",
    path: "/api/operator/effects/:effectId",
    params: effectId,
    response: OperatorEffectDetailSchema,
    status: [200],
    auth: { kind: "operator" },
    errors: ["effect.not_found"],
    idempotent: true,
  }),
  operatorReconcile: operatorActions.reconcile,
  operatorResolve: operatorActions.resolve,
  operatorCompensate: operatorActions.compensate,
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
    response: ConsoleSessionSchema,
    status: [200],
    auth: { kind: "console_session" },
    errors: [],
    idempotent: true,
  }),
  consoleList: defineRoute({
    method: "GET",
    path: "/console/api/effects",
    query: OperatorListQuerySchema,
    response: OperatorEffectPageSchema,
    status: [200],
    auth: { kind: "console_session" },
    errors: [],
    idempotent: true,
  }),
  consoleStats: defineRoute({
    method: "GET",
    path: "/console/api/stats",
    response: ConsoleStatsSchema,
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
    response: OperatorEffectDetailSchema,
    status: [200],
    auth: { kind: "console_session" },
    errors: ["effect.not_found"],
    idempotent: true,
  }),
  consoleReconcile: consoleActions.reconcile,
  consoleResolve: consoleActions.resolve,
  consoleCompensate: consoleActions.compensate,
} as const satisfies Record<string, ApiRoute>;

/** The route table's input and answer types, for the browser console, which imports this file's types only. */
export type { RouteInput, RouteOutput } from "./route-table.contract.js";
