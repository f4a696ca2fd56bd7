/** The operator's routes of the route table (`/api/operator/*` and the console's `/console/api/*`), each with its request and answer schemas. */
import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import {
  ConsoleSessionSchema,
  ConsoleStatsSchema,
  OPERATOR_ACTION_TABLE,
  OperatorEffectDetailSchema,
  OperatorEffectPageSchema,
  OperatorListQuerySchema,
  type OperatorActionName,
} from "./operator-api.contract.js";
import { operatorActionPath, type OperatorActionPath } from "./operator-action-path.js";
import { defineRoute, type ApiRoute, type RouteAuth } from "./route-table.contract.js";

const effectId = z.object({ effectId: UlidSchema });

type ActionTable = typeof OPERATOR_ACTION_TABLE;
/** The route of operator action `N` under `Prefix` behind `Auth`: the table entry's schemas, status and refusal codes. */
type ActionRoute<Prefix extends string, Auth extends RouteAuth, N extends OperatorActionName> = {
  method: "POST";
  path: OperatorActionPath<Prefix, N>;
  params: typeof effectId;
  auth: Auth;
  idempotent: false;
  body: ActionTable[N]["body"];
  response: ActionTable[N]["response"];
  status: ActionTable[N]["status"];
  errors: ActionTable[N]["errors"];
  bodyLimitBytes: number;
};
/** The routes of every operator action under one prefix, keyed by action name. */
type ActionRoutes<Prefix extends string, Auth extends RouteAuth> = { [N in OperatorActionName]: ActionRoute<Prefix, Auth, N> };

/**
 * Every action of `OPERATOR_ACTION_TABLE` under `prefix` behind `auth`: `POST <prefix>/effects/:effectId/<action>`
 * with the action's body schema (`{reason, ...}`), answering its response schema; keyed by action name, in the table's order.
 */
function actionRoutes<const Prefix extends string, const Auth extends RouteAuth>(prefix: Prefix, auth: Auth): ActionRoutes<Prefix, Auth> {
  const routes: Record<string, ApiRoute> = {};
  for (const [name, a] of Object.entries(OPERATOR_ACTION_TABLE)) {
    routes[name] = defineRoute({
      method: "POST",
      params: effectId,
      auth,
      idempotent: false,
      path: operatorActionPath(prefix, name),
      body: a.body,
      response: a.response,
      status: a.status,
      errors: a.errors,
    });
  }
  return routes as ActionRoutes<Prefix, Auth>;
}

/** `routes` with each key `k` renamed `<key><K>` (`reconcile` → `operatorReconcile`): the route table's names of the action routes. */
type Named<Key extends string, T> = { [N in keyof T & string as `${Key}${Capitalize<N>}`]: T[N] };
function named<const Key extends string, T extends Record<string, ApiRoute>>(key: Key, routes: T): Named<Key, T> {
  return Object.fromEntries(Object.entries(routes).map(([n, r]) => [`${key}${n.charAt(0).toUpperCase()}${n.slice(1)}`, r])) as Named<
    Key,
    T
  >;
}

/** The operator actions behind a named operator credential's token (`/api/operator/effects/:effectId/<action>`), keyed by action name. */
export const OPERATOR_ACTION_ROUTES = actionRoutes("/api/operator", { kind: "operator" });
/** The operator actions behind the console's session (`/console/api/effects/:effectId/<action>`), keyed by action name. */
export const CONSOLE_ACTION_ROUTES = actionRoutes("/console/api", { kind: "console_session" });

/** The operator routes, behind a named operator credential's token, while `MOSOO_EFFECT_RECONCILIATION` is on. */
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
  ...named("operator", OPERATOR_ACTION_ROUTES),
} as const satisfies Record<string, ApiRoute>;

/**
 * The operator console's JSON API: the same operator service, behind the
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
  ...named("console", CONSOLE_ACTION_ROUTES),
} as const satisfies Record<string, ApiRoute>;

/** The route table's input and answer types, for the browser console, which imports this file's types only. */
export type { RouteInput, RouteOutput } from "./route-table.contract.js";
/** The operator actions' names and request types, for the browser console (types only). */
export type { OperatorActionName, OperatorActionSent } from "./operator-api.contract.js";
