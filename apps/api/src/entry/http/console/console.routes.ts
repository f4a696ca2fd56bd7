// The operator console at `/console`: sign-in sessions with CSRF tokens, its JSON API, live updates and static assets.
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { serveStatic } from "@hono/node-server/serve-static";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import { secureHeaders } from "hono/secure-headers";
import { streamSSE } from "hono/streaming";
import type { Logger } from "pino";
import { z } from "zod";
import { CONSOLE_ACTION_ROUTES, CONSOLE_API } from "@mosoo/contracts";
import { consoleAssetsBuilt, consoleAssetsDir } from "@mosoo/operator-console";
import type { Runtime } from "../../../composition-root.js";
import { ConsoleSessions, secretsEqual, type ConsoleSession } from "../../../modules/console/application/console-session.service.js";
import type { OperatorCredentials, OperatorIdentity } from "../../../modules/operator/domain/operator-credential.js";
import type { OperatorAuthBudget } from "../operator-auth-budget.js";
import { DEFAULT_CHANGE_POLL_MS, EffectChangeFeed } from "../../../modules/console/application/effect-change-feed.service.js";
import { toErrorResponse } from "../http-errors.js";
import { mountOperatorActions } from "../operator-action.routes.js";
import { mountRoute } from "../route-mount.js";
import { CONSOLE_OFF_TEXT, featureOffPage, notBuiltPage, signInPage } from "./console-pages.js";

/** Name of the console's session cookie (HttpOnly, SameSite=Strict, Path=/console; Secure over https). */
export const CONSOLE_COOKIE = "mosoo_console_session";
/** Header that carries the per-session CSRF token on every state-changing console API request. */
const CSRF_HEADER = "x-csrf-token";
/** How long (ms) an idle server-sent event stream waits before it sends a keep-alive `ping` event. */
const SSE_KEEPALIVE_MS = 15_000;

/**
 * The Content-Security-Policy of every console response: scripts, styles and connections only
 * from the API's own origin, no inline script or style, no plugins, no framing, forms post only to
 * the console. An injected `<script>` or `onerror=` attribute cannot run even if it reached the DOM.
 */
const CONSOLE_CSP = {
  defaultSrc: ["'none'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'"],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
};

/** Options of {@link consoleRoutes}. */
export interface ConsoleOptions {
  /** The operator credentials a sign-in token is checked against; none configured: every `/console` path answers 404. */
  operators: OperatorCredentials;
  /** The failure budget a refused sign-in spends (shared with the operator routes' bearer). */
  authBudget: OperatorAuthBudget;
  /** How often (ms) live updates poll the store's change marker while a console is open (default 1000). */
  pollMs?: number;
  /** Where the built assets are (default: `@mosoo/operator-console`'s `dist/`). */
  assetsDir?: string;
}

/** The sign-in form: the operator token only (who signs in is the credential's name; other form fields are ignored). */
const SignInSchema = z.object({
  token: z.string().min(1, "give your operator token").max(512, "an operator token is at most 512 characters"),
});

type Env = { Variables: { session: ConsoleSession } };

/** The operator identity of a console session (its credential's name and scopes). */
const identityOf = (s: ConsoleSession): OperatorIdentity => ({ name: s.actor, scopes: s.scopes });

/** `{error: {code, message}}` with `status`: the console's own refusals (auth, CSRF, media type). */
function refuse(c: Context, status: 401 | 403 | 415, code: string, message: string) {
  return c.json({ error: { code, message } }, status);
}

/** What the console's route steps share: the app being built and the services its handlers use. */
interface ConsoleParts {
  app: Hono<Env>;
  runtime: Runtime;
  operator: Runtime["operator"];
  logger: Logger;
  opts: ConsoleOptions;
  sessions: ConsoleSessions;
  feed: EffectChangeFeed;
  /** The API's shutdown signal: ends live streams. */
  shutdown: AbortSignal;
}

/** The console session of the request's cookie, if it is live. */
function sessionOf(k: ConsoleParts, c: Context): ConsoleSession | undefined {
  return k.sessions.get(getCookie(c, CONSOLE_COOKIE));
}

/** True when the request came over https (the session cookie is then `Secure`). */
function isSecure(c: Context): boolean {
  return new URL(c.req.url).protocol === "https:";
}

/**
 * Step 1 of {@link consoleRoutes}: errors (a cross-site refusal by hono's `csrf()` → 403 `auth.csrf_rejected`,
 * the rest through `toErrorResponse`), the gate (no operator credential: 404 on every path; else
 * `Cache-Control: no-store`), and the secure headers with {@link CONSOLE_CSP}.
 */
function guardConsole(k: ConsoleParts): void {
  k.app.onError((err, c) => {
    if (err instanceof HTTPException && err.status === 403)
      return refuse(c, 403, "auth.csrf_rejected", "cross-site request refused (Origin / Sec-Fetch-Site)");
    return toErrorResponse(err, c, k.logger, k.runtime.ctx.storeBusy);
  });
  const gate: MiddlewareHandler<Env> = async (c, next) => {
    if (!k.opts.operators.configured) return c.text(CONSOLE_OFF_TEXT, 404);
    await next();
    c.header("Cache-Control", "no-store");
  };
  k.app.use("/console", gate);
  k.app.use("/console/*", gate);
  const headers = secureHeaders({ contentSecurityPolicy: CONSOLE_CSP, referrerPolicy: "no-referrer", crossOriginEmbedderPolicy: false });
  k.app.use("/console", headers);
  k.app.use("/console/*", headers);
}

/**
 * `POST /console/session`: checks the form's operator token; accepted: a new session, its cookie
 * (HttpOnly, SameSite=Strict, Path=/console, Secure over https, max age the session's remaining life in s)
 * and a 303 to `/console`. Refused: the sign-in page with 400 (bad form), 401 (unknown token) or 429 with
 * `Retry-After` (s) past the failure budget.
 */
async function signIn(k: ConsoleParts, c: Context<Env>): Promise<Response> {
  if (!k.operator.enabled) return c.html(featureOffPage(), 404);
  const form: Record<string, unknown> = await c.req.parseBody().catch(() => ({}));
  const parsed = SignInSchema.safeParse(form);
  if (!parsed.success) return c.html(signInPage({ error: `Sign-in refused: ${parsed.error.issues[0]?.message ?? "invalid form"}.` }), 400);
  const identity = k.opts.operators.identify(parsed.data.token);
  if (!identity) {
    const wait = await k.opts.authBudget.refused(c, "console_sign_in");
    if (wait !== undefined)
      return c.html(signInPage({ error: `Sign-in refused: too many refused tokens from this address; retry after ${wait} s.` }), 429, {
        "retry-after": String(wait),
      });
    return c.html(signInPage({ error: "Sign-in refused: the operator token is not valid." }), 401);
  }
  const session = k.sessions.create(identity);
  setCookie(c, CONSOLE_COOKIE, session.id, {
    httpOnly: true,
    sameSite: "Strict",
    path: "/console",
    secure: isSecure(c),
    // Relative, so the browser's clock and the API's never disagree; the server enforces the expiry anyway.
    maxAge: Math.max(1, Math.floor((session.expiresAtMs - k.runtime.ctx.clock.nowMs()) / 1000)),
  });
  k.logger.info({ actor: session.actor }, "console.signed_in");
  return c.redirect("/console", 303);
}

/**
 * `POST /console/sign-out`: with a live session, its CSRF token (form field `csrf` or the header) must match
 * (else 403 `auth.csrf_rejected`) and the session ends; the cookie is cleared and the answer is a 303 to sign-in.
 */
async function signOut(k: ConsoleParts, c: Context<Env>): Promise<Response> {
  const session = sessionOf(k, c);
  const form: Record<string, unknown> = await c.req.parseBody().catch(() => ({}));
  const given = typeof form.csrf === "string" ? form.csrf : (c.req.header(CSRF_HEADER) ?? "");
  if (session) {
    if (!secretsEqual(given, session.csrfToken))
      return refuse(c, 403, "auth.csrf_rejected", "the CSRF token of this session is missing or wrong");
    k.sessions.delete(session.id);
    k.logger.info({ actor: session.actor }, "console.signed_out");
  }
  deleteCookie(c, CONSOLE_COOKIE, { path: "/console", secure: isSecure(c) });
  return c.redirect("/console/sign-in", 303);
}

/** Step 2 of {@link consoleRoutes}: `GET /console/sign-in`, `POST /console/session` ({@link signIn}), `POST /console/sign-out` ({@link signOut}). */
function mountSignIn(k: ConsoleParts): void {
  k.app.get("/console/sign-in", (c) => {
    if (!k.operator.enabled) return c.html(featureOffPage(), 404);
    if (sessionOf(k, c)) return c.redirect("/console", 303);
    return c.html(signInPage());
  });
  k.app.post("/console/session", csrf(), (c) => signIn(k, c));
  k.app.post("/console/sign-out", csrf(), (c) => signOut(k, c));
}

/**
 * Step 3 of {@link consoleRoutes}: the built assets (the stylesheet to anyone, the rest to a session; else 401
 * `auth.session_required`) and the browser app's pages (feature off: 404 page; no session: 303 to sign-in;
 * assets not built: 503 page).
 */
function mountPages(k: ConsoleParts): void {
  const assetsDir = k.opts.assetsDir ?? consoleAssetsDir;
  const built = () => (k.opts.assetsDir ? true : consoleAssetsBuilt());
  const assets = serveStatic({ root: assetsDir, rewriteRequestPath: (p) => p.replace(/^\/console/, "") });
  k.app.get("/console/assets/console.css", assets);
  k.app.get("/console/assets/*", async (c, next) => {
    if (!sessionOf(k, c)) return refuse(c, 401, "auth.session_required", "sign in at /console/sign-in");
    return assets(c, next);
  });
  const appPage = serveStatic({ root: assetsDir, path: "index.html" });
  const pageHandler: MiddlewareHandler<Env> = async (c, next) => {
    if (!k.operator.enabled) return c.html(featureOffPage(), 404);
    if (!sessionOf(k, c)) return c.redirect("/console/sign-in", 303);
    if (!built()) return c.html(notBuiltPage(), 503);
    return appPage(c, next);
  };
  k.app.get("/console", pageHandler);
  k.app.get("/console/", pageHandler);
  k.app.get("/console/effects/:effectId", pageHandler);
  k.app.get("/console/reference", pageHandler);
}

/**
 * Step 4 of {@link consoleRoutes}: the guard of `/console/api/*`: a live session (else 401
 * `auth.session_required`); a request that changes state also needs the session's CSRF token in
 * {@link CSRF_HEADER} (else 403 `auth.csrf_rejected`) and a JSON body (else 415
 * `request.unsupported_media_type`); then hono's `csrf()` origin check.
 */
function guardConsoleApi(k: ConsoleParts): void {
  k.app.use("/console/api/*", async (c, next) => {
    const session = sessionOf(k, c);
    if (!session) return refuse(c, 401, "auth.session_required", "sign in at /console/sign-in");
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      if (!secretsEqual(c.req.header(CSRF_HEADER) ?? "", session.csrfToken))
        return refuse(c, 403, "auth.csrf_rejected", `send this session's CSRF token in ${CSRF_HEADER}`);
      if (!/^application\/json\b/i.test(c.req.header("content-type") ?? ""))
        return refuse(c, 415, "request.unsupported_media_type", "the body must be application/json");
    }
    c.set("session", session);
    return next();
  });
  k.app.use("/console/api/*", csrf());
}

/**
 * Step 5 of {@link consoleRoutes}: the table's console routes (`CONSOLE_API`, guarded by {@link guardConsoleApi}):
 * session, list, stats, show, the operator actions as the session's credential, and the live events ({@link streamChanges}).
 */
function mountConsoleApi(k: ConsoleParts): void {
  const { app, operator, feed } = k;
  /** The session's credential, refused (403 `auth.scope`) unless it may read. */
  const reader = (c: Context<Env>) => operator.assertMayRead(identityOf(c.get("session")));
  mountRoute(app, CONSOLE_API.consoleSession, [], (c, req) => {
    const s = c.get("session");
    return req.json({ actor: s.actor, scopes: s.scopes, csrfToken: s.csrfToken, expiresAtMs: s.expiresAtMs });
  });
  mountRoute(app, CONSOLE_API.consoleList, [], async (c, req) => {
    reader(c);
    return req.json(await operator.list(req.query()));
  });
  mountRoute(app, CONSOLE_API.consoleStats, [], async (c, req) => {
    reader(c);
    return req.json({ ...(await operator.stats()), unknownSeries: await feed.unknownSeries() });
  });
  mountRoute(app, CONSOLE_API.consoleShow, [], async (c, req) => {
    reader(c);
    return req.json(await operator.show(req.param("effectId")));
  });
  mountOperatorActions(
    CONSOLE_ACTION_ROUTES,
    operator,
    (c: Context<Env>) => identityOf(c.get("session")),
    (route, handler) => mountRoute(app, route, [], handler),
  );
  mountRoute(app, CONSOLE_API.consoleEvents, [], (c) => {
    operator.assertEnabled();
    return streamChanges(k, c, c.get("session"));
  });
}

/**
 * `GET /console/api/events`: server-sent events: `ready` first, then `change` after each change the
 * feed reports, or `ping` after {@link SSE_KEEPALIVE_MS} ms without one. Ends when the client goes,
 * the API shuts down or the session ends.
 */
function streamChanges(k: ConsoleParts, c: Context<Env>, session: ConsoleSession): Response {
  const { feed, shutdown, sessions } = k;
  return streamSSE(c, async (stream) => {
    let changed = false;
    let wake: (() => void) | undefined;
    const unsubscribe = feed.subscribe(() => {
      changed = true;
      wake?.();
    });
    const onShutdown = () => wake?.();
    shutdown.addEventListener("abort", onShutdown);
    stream.onAbort(() => wake?.());
    try {
      await stream.writeSSE({ event: "ready", data: "{}" });
      while (!stream.aborted && !stream.closed && !shutdown.aborted && sessions.get(session.id)) {
        if (!changed) {
          let timer: NodeJS.Timeout | undefined;
          await new Promise<void>((resolve) => {
            wake = resolve;
            timer = setTimeout(resolve, SSE_KEEPALIVE_MS);
          });
          clearTimeout(timer);
          wake = undefined;
        }
        if (stream.aborted || shutdown.aborted) break;
        if (changed) {
          changed = false;
          await stream.writeSSE({ event: "change", data: "{}" });
        } else {
          await stream.writeSSE({ event: "ping", data: "{}" });
        }
      }
    } finally {
      unsubscribe();
      shutdown.removeEventListener("abort", onShutdown);
    }
  });
}

/**
 * The operator console, served by the API at `/console` over the same
 * operator service as `/api/operator/*` (`runtime.operator`):
 * - `GET /console/sign-in`, `POST /console/session {token}` (form: an operator credential's token; the
 *   session carries that credential's name and scopes; a refused token answers 401, or 429 with
 *   `Retry-After` past the failure budget, {@link OperatorAuthBudget}), `POST /console/sign-out {csrf}` (form);
 * - `GET /console`, `GET /console/effects/:id`, `GET /console/reference` (the API reference, from `GET /openapi.json`): the browser app (signed-out: a redirect to sign-in);
 * - `GET /console/assets/*`: the built assets (only the stylesheet without a session);
 * - `GET /console/api/session | effects | effects/:id | stats | events` (server-sent events), and
 *   `POST /console/api/effects/:id/<action>` (each action of `OPERATOR_ACTION_TABLE`) with `X-CSRF-Token`: the
 *   operator service's list, show, stats and actions, as the session's
 *   credential (its name is the audit actor; each action needs its scope, else 403 `auth.scope`,
 *   audited). Refusals: 401 `auth.session_required`, 403 `auth.csrf_rejected`,
 *   415 `request.unsupported_media_type`, and every code the service throws (404 `feature.disabled`,
 *   409 `effect.not_unknown`, …), as `{error: {code, message}}`.
 * Without any operator credential every `/console` path is 404; with `MOSOO_EFFECT_RECONCILIATION` off the
 * pages say "feature off". Every response carries {@link CONSOLE_CSP} and `Cache-Control: no-store`.
 * Sessions are held in this process (see {@link ConsoleSessions}); `close()` ends live streams.
 */
export function consoleRoutes(runtime: Runtime, logger: Logger, opts: ConsoleOptions): { app: Hono<Env>; close(): void } {
  const operator = runtime.operator;
  const feed = new EffectChangeFeed(
    { changeMarker: () => operator.changeMarker(), unknownTotal: () => operator.unknownTotal(), nowMs: () => runtime.ctx.clock.nowMs() },
    logger,
    opts.pollMs ?? DEFAULT_CHANGE_POLL_MS,
  );
  const shutdown = runtime.ctx.shutdown.signal;
  shutdown.addEventListener("abort", () => feed.close(), { once: true });
  const k: ConsoleParts = {
    app: new Hono<Env>(),
    runtime,
    operator,
    logger,
    opts,
    sessions: new ConsoleSessions(runtime.ctx.clock),
    feed,
    shutdown,
  };
  guardConsole(k);
  mountSignIn(k);
  mountPages(k);
  guardConsoleApi(k);
  mountConsoleApi(k);
  return { app: k.app, close: () => feed.close() };
}
