/**
 * The operator console's auth matrix (docs/DESIGN.md §7, §10), generated from the app's route list
 * like `auth-matrix.test.ts`, so a new `/console` route cannot be left out: every console route ×
 * {no credential, each bearer credential of the other kinds (API key, Driver token, enrollment token,
 * the operator token itself sent as a bearer), a forged session cookie, a session without its CSRF
 * token} → refused (pages redirect to sign-in; the console API answers 401 `auth.session_required` or
 * 403 `auth.csrf_rejected`) with every table byte-identical; then a signed-in session with its CSRF
 * token reaches it.
 */
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { RECONCILIATION_OFF } from "../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { TEST_AUTH, TEST_SECRETS } from "./helpers/http-call.js";
import { buildHttpApp, connectDriver, createTestWorld, type TestWorld } from "./kit/index.js";
import { dumpAllTables } from "./helpers/reconciliation-db.js";

const ORIGIN = "http://localhost";

/** How a console route is reached: `public` (sign-in page, assets, the sign-in post), `page` (redirects to sign-in when signed out: the pages and the sign-out form post), `api` (401 when signed out). */
type ConsoleKind = "public" | "page" | "api";

interface ConsoleEntry {
  kind: ConsoleKind;
  /** The path to request (route params filled in). */
  path: (effectId: string) => string;
  /** Status with a signed-in session (and its CSRF token on a POST). */
  rightStatus: number;
  /** JSON body of a POST to the console API. */
  body?: unknown;
}

const audit = { reason: "checked" };
const CONSOLE: Record<string, ConsoleEntry> = {
  "GET /console": { kind: "page", path: () => "/console", rightStatus: 200 },
  "GET /console/": { kind: "page", path: () => "/console/", rightStatus: 200 },
  "GET /console/effects/:effectId": { kind: "page", path: (e) => `/console/effects/${e}`, rightStatus: 200 },
  "GET /console/reference": { kind: "page", path: () => "/console/reference", rightStatus: 200 },
  "GET /console/sign-in": { kind: "public", path: () => "/console/sign-in", rightStatus: 303 },
  "GET /console/assets/console.css": { kind: "public", path: () => "/console/assets/console.css", rightStatus: 200 },
  "GET /console/assets/*": { kind: "public", path: () => "/console/assets/console.css", rightStatus: 200 },
  "POST /console/session": { kind: "public", path: () => "/console/session", rightStatus: 303 },
  "POST /console/sign-out": { kind: "page", path: () => "/console/sign-out", rightStatus: 303 },
  "GET /console/api/session": { kind: "api", path: () => "/console/api/session", rightStatus: 200 },
  "GET /console/api/effects": { kind: "api", path: () => "/console/api/effects", rightStatus: 200 },
  "GET /console/api/effects/:effectId": { kind: "api", path: (e) => `/console/api/effects/${e}`, rightStatus: 200 },
  "GET /console/api/stats": { kind: "api", path: () => "/console/api/stats", rightStatus: 200 },
  "GET /console/api/events": { kind: "api", path: () => "/console/api/events", rightStatus: 200 },
  // no adapter is bound and the effect is `executing`: the session passes and the service refuses (409)
  "POST /console/api/effects/:effectId/reconcile": {
    kind: "api",
    path: (e) => `/console/api/effects/${e}/reconcile`,
    body: audit,
    rightStatus: 409,
  },
  "POST /console/api/effects/:effectId/resolve": {
    kind: "api",
    path: (e) => `/console/api/effects/${e}/resolve`,
    body: { outcome: "not_executed", ...audit },
    rightStatus: 409,
  },
  "POST /console/api/effects/:effectId/compensate": {
    kind: "api",
    path: (e) => `/console/api/effects/${e}/compensate`,
    body: audit,
    rightStatus: 409,
  },
};

let f: TestWorld | undefined;
afterEach(() => {
  f?.close();
  f = undefined;
});

/** A world with Driver A, a run and one claimed (`executing`) effect, and the app with every credential kind configured. */
async function buildWorld(): Promise<{ app: Hono; effectId: string; driverToken: string }> {
  f = createTestWorld({ reconciliation: { ...RECONCILIATION_OFF, enabled: true } });
  const a = await connectDriver(f.runtime, "driver-a");
  const app = buildHttpApp(f.runtime, TEST_AUTH);
  const run = await f.runtime.runs.createRun({ driverInstanceId: a.instance.id });
  const tc = await f.runtime.runs.enqueueToolCall(run.runId, { serverId: "tracker", toolName: "createIssue", arguments: { title: "t" } });
  await f.runtime.commands.nextCommand(a.instance, a.connectionId, 0);
  expect((await f.runtime.ledger.claim(a.instance, a.connectionId, tc.commandId)).kind).toBe("execute");
  return { app, effectId: tc.effectId, driverToken: a.token };
}

function dump(): string {
  return dumpAllTables(f!.store.sqlite);
}

async function signIn(app: Hono): Promise<{ cookie: string; csrf: string }> {
  const res = await app.request(`${ORIGIN}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
    body: new URLSearchParams({ token: TEST_SECRETS.operatorToken }).toString(),
  });
  expect(res.status).toBe(303);
  const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
  const info = (await (await app.request(`${ORIGIN}/console/api/session`, { headers: { cookie } })).json()) as { csrfToken: string };
  return { cookie, csrf: info.csrfToken };
}

async function send(app: Hono, method: string, path: string, entry: ConsoleEntry, headers: Record<string, string>, signal?: AbortSignal) {
  const form = path === "/console/session" || path === "/console/sign-out";
  const init: RequestInit = { method, headers: { origin: ORIGIN, ...headers }, ...(signal ? { signal } : {}) };
  if (method === "POST") {
    init.headers = {
      ...(init.headers as Record<string, string>),
      "content-type": form ? "application/x-www-form-urlencoded" : "application/json",
    };
    init.body = form
      ? new URLSearchParams(path === "/console/session" ? { token: "not-the-operator-token" } : {}).toString()
      : JSON.stringify(entry.body ?? {});
  }
  return app.request(`${ORIGIN}${path}`, init);
}

const probe = createTestWorld();
const CONSOLE_ROUTES = [
  ...new Set(
    buildHttpApp(probe.runtime, TEST_AUTH)
      .routes.filter((r) => r.method !== "ALL" && r.path.startsWith("/console"))
      .map((r) => `${r.method} ${r.path}`),
  ),
].sort();
probe.close();
let cases = 0;

describe("console auth matrix", () => {
  it("has an entry for every /console route, and none for a route that is gone", () => {
    expect(CONSOLE_ROUTES.filter((r) => !(r in CONSOLE))).toEqual([]);
    expect(Object.keys(CONSOLE).filter((k) => !CONSOLE_ROUTES.includes(k))).toEqual([]);
  });

  it.each(CONSOLE_ROUTES)("%s", async (route) => {
    const entry = CONSOLE[route]!;
    const method = route.slice(0, route.indexOf(" "));
    const w = await buildWorld();
    const path = entry.path(w.effectId);
    const bearers: Array<[string, string | undefined]> = [
      ["no credential", undefined],
      ["an API key", TEST_SECRETS.adminKey],
      ["a Driver token", w.driverToken],
      ["the enrollment token", TEST_SECRETS.enrollmentToken],
      ["the operator token as a bearer", TEST_SECRETS.operatorToken],
    ];
    if (entry.kind !== "public") {
      const refusals: Array<[string, Record<string, string>]> = [
        ...bearers.map(([name, token]): [string, Record<string, string>] => [name, token ? { authorization: `Bearer ${token}` } : {}]),
        ["a forged session cookie", { cookie: "mosoo_console_session=forged" }],
      ];
      for (const [name, headers] of refusals) {
        const before = dump();
        const res = await send(w.app, method, path, entry, headers);
        if (entry.kind === "page") {
          expect({ route, name, status: res.status, location: res.headers.get("location") }).toEqual({
            route,
            name,
            status: 303,
            location: "/console/sign-in",
          });
        } else {
          const body = (await res.json()) as { error?: { code?: string } };
          expect({ route, name, status: res.status, code: body.error?.code }).toEqual({
            route,
            name,
            status: 401,
            code: "auth.session_required",
          });
        }
        expect(dump(), `${route}: ${name} changed a table`).toBe(before);
        cases += 1;
      }
      if (method === "POST") {
        const { cookie } = await signIn(w.app);
        const before = dump();
        const res = await send(w.app, method, path, entry, { cookie });
        expect({ route, name: "a session without its CSRF token", status: res.status }).toEqual({
          route,
          name: "a session without its CSRF token",
          status: 403,
        });
        expect(dump()).toBe(before);
        cases += 1;
      }
    } else if (route === "POST /console/session") {
      // the sign-in itself: a wrong token is refused, sets no cookie, writes nothing
      const before = dump();
      const res = await send(w.app, method, path, entry, {});
      expect({ status: res.status, cookie: res.headers.get("set-cookie") }).toEqual({ status: 401, cookie: null });
      expect(dump()).toBe(before);
      cases += 1;
    }
    // the right credential: a signed-in session (and its CSRF token on a POST)
    if (route === "POST /console/session") {
      await signIn(w.app);
    } else {
      const { cookie, csrf } = await signIn(w.app);
      const abort = new AbortController();
      const res = await send(w.app, method, path, entry, { cookie, ...(method === "POST" ? { "x-csrf-token": csrf } : {}) }, abort.signal);
      if (route === "POST /console/sign-out") {
        // the form post carries its CSRF token in the form, not the header: either is accepted
        expect([303, 403]).toContain(res.status);
      } else {
        expect({ route, status: res.status }).toEqual({ route, status: entry.rightStatus });
      }
      abort.abort(); // ends the event stream of GET /console/api/events
      await res.body?.cancel().catch(() => undefined);
    }
    cases += 1;
  });

  it("counted its cases", () => {
    console.log(`console auth matrix: ${CONSOLE_ROUTES.length} routes, ${cases} cases`);
    expect(cases).toBeGreaterThan(CONSOLE_ROUTES.length * 3);
  });
});
