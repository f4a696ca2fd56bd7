// The operator actions' HTTP handlers, derived from the action table: one handler per action, dispatched by name to the operator service.
import type { Context, Env } from "hono";
import { OPERATOR_ACTION_NAMES, type CONSOLE_ACTION_ROUTES, type OPERATOR_ACTION_ROUTES, type OperatorActionName } from "@mosoo/contracts";
import type { OperatorActionHandlers } from "../../modules/operator/application/operator.service.js";
import type { OperatorIdentity } from "../../modules/operator/domain/operator-credential.js";
import type { RouteHandler } from "./route-mount.js";

/** The action routes of one prefix (`OPERATOR_ACTION_ROUTES` or `CONSOLE_ACTION_ROUTES` of `@mosoo/contracts`), keyed by action name. */
type ActionRoutes = typeof OPERATOR_ACTION_ROUTES | typeof CONSOLE_ACTION_ROUTES;
/** One action route of `Routes`. */
type ActionRoute<Routes extends ActionRoutes> = Routes[OperatorActionName];

/**
 * Mounts every operator action of the table (`OPERATOR_ACTION_TABLE`, in its order) with `mount`
 * (the caller's guard and store-retry wrapping): each handler reads the path's `effectId`, then the
 * body (the action's schema), then the acting credential (`identityOf`), calls
 * `handlers[name](effectId, body, identity)` and answers its result with the action's success status.
 * A refusal is the service's typed error (the app's error handler answers it).
 */
export function mountOperatorActions<E extends Env, Routes extends ActionRoutes>(
  routes: Routes,
  handlers: OperatorActionHandlers,
  identityOf: (c: Context<E>) => OperatorIdentity,
  mount: (route: ActionRoute<Routes>, handler: RouteHandler<E, ActionRoute<Routes>>) => void,
): void {
  for (const name of OPERATOR_ACTION_NAMES) {
    // the table types each handler by its action; here they are called by name, so the request is the one the route parsed
    const handle = handlers[name] as (effectId: string, req: unknown, by: OperatorIdentity) => Promise<unknown>;
    mount(routes[name] as ActionRoute<Routes>, async (c, req) => {
      const effectId = req.param("effectId" as never); // every action route has exactly this path parameter
      return req.json((await handle.call(handlers, effectId, await req.body(), identityOf(c))) as never);
    });
  }
}
