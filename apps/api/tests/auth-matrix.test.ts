/**
 * The auth matrix (docs/DESIGN.md §10): every route of the hono app, read from `app.routes`
 * so that a new route without an entry here fails the test, crossed with {no credential, an
 * invalid one, the wrong kind of credential, the wrong scope, the wrong Driver, the right one}.
 * Each refusal answers its status and stable code, and every table is byte-identical afterwards
 * (a full dump of every row of every table before and after). The right credential passes the
 * guard and gets the route's own answer, with the auth scheme spelt `Bearer`, `bearer` or `BEARER`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Hono } from "hono";
import { API_ROUTES, type ApiRoute } from "@mosoo/contracts";
import { RECONCILIATION_OFF } from "../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { TEST_AUTH, TEST_SECRETS } from "./helpers/http-call.js";
import { buildHttpApp, connectDriver, createTestWorld, type TestWorld } from "./kit/index.js";
import { dumpAllTables } from "./helpers/reconciliation-db.js";

const WRITER_KEY = "test-writer-key-0123456789abcdef";
/** A key with every scope, restricted to Driver B (its id is known once B is registered). */
const B_ONLY_KEY = "test-b-only-key-0123456789abcdef";
const AUTH = { ...TEST_AUTH, apiKeys: [...TEST_AUTH.apiKeys, { name: "writer", secret: WRITER_KEY, scopes: ["runs:write" as const] }] };
const authWithBOnly = (bId: string) => ({
  ...AUTH,
  apiKeys: [
    ...AUTH.apiKeys,
    { name: "b-only", secret: B_ONLY_KEY, scopes: ["runs:write" as const, "runs:read" as const, "runs:delete" as const], drivers: [bId] },
  ],
});
const SCHEMES = ["Bearer", "bearer", "BEARER"];

interface Driver {
  token: string;
  id: string;
  connectionId: string;
}
/** The world every route is tried against: Drivers A and B connected; a run on A with one claimed (`executing`) effect. */
interface World {
  f: TestWorld;
  app: Hono;
  a: Driver;
  b: Driver;
  runId: string;
  sessionId: string;
  commandId: string;
  effectId: string;
  idempotencyKey: string;
  requestFingerprint: string;
}

type Answer = { status: number; body: any };

async function send(app: Hono, method: string, path: string, body: unknown, authorization: string | undefined): Promise<Answer> {
  const res = await app.request(path, {
    method,
    headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: text ? JSON.parse(text) : null };
  } catch {
    return { status: res.status, body: { raw: text } };
  }
}

async function buildWorld(): Promise<World> {
  const f = createTestWorld({ reconciliation: { ...RECONCILIATION_OFF, enabled: true } });
  const bearer = (t: string) => `Bearer ${t}`;
  const driver = async (name: string): Promise<Driver> => {
    const d = await connectDriver(f.runtime, name);
    return { token: d.token, id: d.instance.id, connectionId: d.connectionId };
  };
  const a = await driver("driver-a");
  const b = await driver("driver-b");
  const app = buildHttpApp(f.runtime, authWithBOnly(b.id));
  const run = await send(app, "POST", "/v1/runs", { driverInstanceId: a.id }, bearer(TEST_SECRETS.adminKey));
  const tc = await send(
    app,
    "POST",
    `/v1/runs/${run.body.runId}/tool-calls`,
    { serverId: "tracker", toolName: "createIssue", arguments: { title: "t" }, requestId: "r", toolCallId: "tc-matrix" },
    bearer(TEST_SECRETS.adminKey),
  );
  await send(app, "GET", `/v1/drivers/commands/next?connectionId=${a.connectionId}&waitMs=0`, undefined, bearer(a.token));
  const claim = await send(
    app,
    "POST",
    "/v1/drivers/effects/claim",
    { connectionId: a.connectionId, commandId: tc.body.commandId },
    bearer(a.token),
  );
  expect(claim.body.kind).toBe("execute");
  const { idempotency_key: idempotencyKey, request_fingerprint: requestFingerprint } = f.store.sqlite
    .prepare("SELECT idempotency_key, request_fingerprint FROM external_tool_effects WHERE id = ?")
    .get(tc.body.effectId) as { idempotency_key: string; request_fingerprint: string };
  return {
    f,
    app,
    a,
    b,
    runId: run.body.runId,
    sessionId: run.body.sessionId,
    commandId: tc.body.commandId,
    effectId: tc.body.effectId,
    idempotencyKey,
    requestFingerprint,
  };
}

/** Every row of every table (migrations bookkeeping excluded), as JSON. */
function dump(w: World): string {
  return dumpAllTables(w.f.store.sqlite);
}

/** A request of the matrix: path (with the world's ids), body, and the credential sent. */
interface Req {
  path: string;
  body?: unknown;
}
type Refusal = { name: string; token: (w: World) => string | undefined; req?: (w: World) => Req; status: number; code: string };

/**
 * One matrix entry per route. `req` builds the route's request in the world; `right` is the
 * credential that may call it (after `prepare`, which may change the world, e.g. finalize a Driver)
 * and the status it then gets; the refusals come from `kind`, plus any route-specific ones.
 */
interface Entry {
  kind: "public" | "api_key" | "driver" | "driver_report" | "registration" | "operator" | "metrics";
  /** For `api_key` routes: a key without the route's scope. */
  wrongScopeKey?: string;
  /** For routes where the operator token is also right (deletes, metrics). */
  operatorToo?: boolean;
  /** The request is about Driver A's run or session: a key restricted to Driver B is the wrong Driver (404, as if it did not exist). */
  ofDriverA?: boolean;
  /** The not-found code a wrong-Driver key gets (default `run.not_found`). */
  notFoundCode?: "session.not_found";
  req: (w: World) => Req;
  right: (w: World) => string | undefined;
  prepare?: (w: World) => Promise<Partial<Req> | void>;
  rightStatus: number;
  /** Refusals particular to this route: the wrong Driver, the wrong scope of a registration. */
  extra?: Refusal[];
}

const E = "/api/operator/effects";
const audit = { reason: "checked" };
const result = { outputText: "ok", requestId: "r", serverId: "tracker", toolName: "createIssue" };
/** A late-result report (late evidence) for the world's effect, sent on `connectionId`. */
const lateResultBody = (w: World, connectionId: string) => ({
  connectionId,
  attempt: 1,
  idempotencyKey: w.idempotencyKey,
  toolName: "createIssue",
  requestFingerprint: w.requestFingerprint,
  result,
  receipt: null,
});
const FAKE_DRIVER_TOKEN = `mdt_01JDZZZZZZZZZZZZZZZZZZZZZZ_${"x".repeat(43)}`;

async function runOnB(w: World): Promise<{ runId: string; sessionId: string }> {
  const run = await send(w.app, "POST", "/v1/runs", { driverInstanceId: w.b.id }, `Bearer ${TEST_SECRETS.adminKey}`);
  expect(run.status).toBe(201);
  return run.body;
}
async function finalizedDriver(w: World): Promise<Driver> {
  const reg = await send(w.app, "POST", "/v1/drivers/register", { name: "driver-c" }, `Bearer ${TEST_SECRETS.enrollmentToken}`);
  await w.f.runtime.repair.finalize(reg.body.driverInstanceId, "driver_request");
  return { token: reg.body.driverToken, id: reg.body.driverInstanceId, connectionId: "" };
}

const MATRIX: Record<string, Entry> = {
  "GET /health": { kind: "public", req: () => ({ path: "/health" }), right: () => undefined, rightStatus: 200 },
  "GET /ready": { kind: "public", req: () => ({ path: "/ready" }), right: () => undefined, rightStatus: 200 },
  "GET /openapi.json": { kind: "public", req: () => ({ path: "/openapi.json" }), right: () => undefined, rightStatus: 200 },
  "GET /metrics": {
    kind: "metrics",
    wrongScopeKey: TEST_SECRETS.readerKey,
    operatorToo: true,
    req: () => ({ path: "/metrics" }),
    right: () => TEST_SECRETS.adminKey,
    rightStatus: 200,
  },
  "POST /v1/runs": {
    kind: "api_key",
    wrongScopeKey: TEST_SECRETS.readerKey,
    req: (w) => ({ path: "/v1/runs", body: { driverInstanceId: w.b.id } }),
    right: () => WRITER_KEY,
    rightStatus: 201,
    extra: [
      {
        name: "wrong Driver: a key restricted to B creating a run on A",
        token: () => B_ONLY_KEY,
        req: (w) => ({ path: "/v1/runs", body: { driverInstanceId: w.a.id } }),
        status: 403,
        code: "auth.forbidden",
      },
    ],
  },
  "POST /v1/runs/:runId/tool-calls": {
    kind: "api_key",
    ofDriverA: true,
    wrongScopeKey: TEST_SECRETS.readerKey,
    req: (w) => ({
      path: `/v1/runs/${w.runId}/tool-calls`,
      body: { serverId: "tracker", toolName: "createIssue", arguments: { title: "u" } },
    }),
    right: () => WRITER_KEY,
    rightStatus: 201,
  },
  "GET /v1/runs/:runId": {
    kind: "api_key",
    ofDriverA: true,
    wrongScopeKey: WRITER_KEY,
    req: (w) => ({ path: `/v1/runs/${w.runId}` }),
    right: () => TEST_SECRETS.readerKey,
    rightStatus: 200,
  },
  "GET /v1/runs/:runId/events": {
    kind: "api_key",
    ofDriverA: true,
    wrongScopeKey: WRITER_KEY,
    req: (w) => ({ path: `/v1/runs/${w.runId}/events` }),
    right: () => TEST_SECRETS.readerKey,
    rightStatus: 200,
  },
  "GET /v1/runs/:runId/tool-calls/:toolCallId": {
    kind: "api_key",
    ofDriverA: true,
    wrongScopeKey: WRITER_KEY,
    req: (w) => ({ path: `/v1/runs/${w.runId}/tool-calls/tc-matrix` }),
    right: () => TEST_SECRETS.readerKey,
    rightStatus: 200,
  },
  "DELETE /v1/runs/:runId": {
    kind: "api_key",
    ofDriverA: true,
    wrongScopeKey: WRITER_KEY,
    operatorToo: true,
    req: (w) => ({ path: `/v1/runs/${w.runId}` }),
    right: () => TEST_SECRETS.adminKey,
    prepare: async (w) => ({ path: `/v1/runs/${(await runOnB(w)).runId}` }),
    rightStatus: 204,
  },
  "DELETE /v1/sessions/:sessionId": {
    kind: "api_key",
    ofDriverA: true,
    notFoundCode: "session.not_found",
    wrongScopeKey: WRITER_KEY,
    operatorToo: true,
    req: (w) => ({ path: `/v1/sessions/${w.sessionId}` }),
    right: () => TEST_SECRETS.adminKey,
    prepare: async (w) => ({ path: `/v1/sessions/${(await runOnB(w)).sessionId}` }),
    rightStatus: 204,
  },
  "DELETE /v1/drivers/:driverInstanceId": {
    kind: "api_key",
    wrongScopeKey: WRITER_KEY,
    operatorToo: true,
    req: (w) => ({ path: `/v1/drivers/${w.b.id}` }),
    extra: [
      {
        name: "wrong Driver: a key restricted to B purging A",
        token: () => B_ONLY_KEY,
        req: (w) => ({ path: `/v1/drivers/${w.a.id}` }),
        status: 403,
        code: "auth.forbidden",
      },
    ],
    right: () => TEST_SECRETS.adminKey,
    prepare: async (w) => ({ path: `/v1/drivers/${(await finalizedDriver(w)).id}` }),
    rightStatus: 204,
  },
  "POST /v1/drivers/register": {
    kind: "registration",
    req: () => ({ path: "/v1/drivers/register", body: { name: "new" } }),
    right: () => TEST_SECRETS.enrollmentToken,
    rightStatus: 201,
    extra: [
      // the wrong scope of the enrollment token: it registers new instances only, never an existing id
      {
        name: "enrollment token re-registering an existing id",
        token: () => TEST_SECRETS.enrollmentToken,
        req: (w) => ({ path: "/v1/drivers/register", body: { name: "evil", driverInstanceId: w.b.id } }),
        status: 403,
        code: "auth.forbidden",
      },
      // the wrong Driver: B's token taking over A's identity, or minting a new instance
      {
        name: "Driver B re-registering A",
        token: (w) => w.b.token,
        req: (w) => ({ path: "/v1/drivers/register", body: { name: "evil", driverInstanceId: w.a.id } }),
        status: 403,
        code: "auth.forbidden",
      },
      { name: "Driver B registering a new instance", token: (w) => w.b.token, status: 403, code: "auth.forbidden" },
    ],
  },
  "POST /v1/drivers/connect": { kind: "driver", req: () => ({ path: "/v1/drivers/connect" }), right: (w) => w.a.token, rightStatus: 200 },
  "POST /v1/drivers/heartbeat": {
    kind: "driver",
    req: (w) => ({ path: "/v1/drivers/heartbeat", body: { connectionId: w.a.connectionId } }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [{ name: "Driver B heartbeating A's connection", token: (w) => w.b.token, status: 409, code: "driver.connection_superseded" }],
  },
  "POST /v1/drivers/finalize": { kind: "driver", req: () => ({ path: "/v1/drivers/finalize" }), right: (w) => w.a.token, rightStatus: 200 },
  "GET /v1/drivers/self": { kind: "driver", req: () => ({ path: "/v1/drivers/self" }), right: (w) => w.a.token, rightStatus: 200 },
  "GET /v1/drivers/commands/next": {
    kind: "driver",
    req: (w) => ({ path: `/v1/drivers/commands/next?connectionId=${w.a.connectionId}&waitMs=0` }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [{ name: "Driver B polling on A's connection", token: (w) => w.b.token, status: 409, code: "driver.connection_superseded" }],
  },
  "POST /v1/drivers/commands/:commandId/update": {
    kind: "driver",
    req: (w) => ({ path: `/v1/drivers/commands/${w.commandId}/update`, body: { connectionId: w.a.connectionId, status: "accepted" } }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [
      {
        name: "Driver B updating A's command",
        token: (w) => w.b.token,
        req: (w) => ({ path: `/v1/drivers/commands/${w.commandId}/update`, body: { connectionId: w.b.connectionId, status: "accepted" } }),
        status: 404,
        code: "command.not_found",
      },
    ],
  },
  "POST /v1/drivers/effects/claim": {
    kind: "driver",
    req: (w) => ({ path: "/v1/drivers/effects/claim", body: { connectionId: w.a.connectionId, commandId: w.commandId } }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [
      {
        name: "Driver B claiming A's command",
        token: (w) => w.b.token,
        req: (w) => ({ path: "/v1/drivers/effects/claim", body: { connectionId: w.b.connectionId, commandId: w.commandId } }),
        status: 404,
        code: "command.not_found",
      },
    ],
  },
  "POST /v1/drivers/effects/:effectId/complete": {
    kind: "driver_report",
    req: (w) => ({
      path: `/v1/drivers/effects/${w.effectId}/complete`,
      body: { connectionId: w.a.connectionId, attempt: 1, result, receipt: null },
    }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [
      {
        name: "Driver B completing A's effect",
        token: (w) => w.b.token,
        req: (w) => ({
          path: `/v1/drivers/effects/${w.effectId}/complete`,
          body: { connectionId: w.b.connectionId, attempt: 1, result, receipt: null },
        }),
        status: 404,
        code: "effect.not_found",
      },
    ],
  },
  "POST /v1/drivers/effects/:effectId/mark-unknown": {
    kind: "driver",
    req: (w) => ({
      path: `/v1/drivers/effects/${w.effectId}/mark-unknown`,
      body: { connectionId: w.a.connectionId, attempt: 1, reason: "lost" },
    }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [
      {
        name: "Driver B fencing A's effect",
        token: (w) => w.b.token,
        req: (w) => ({
          path: `/v1/drivers/effects/${w.effectId}/mark-unknown`,
          body: { connectionId: w.b.connectionId, attempt: 1, reason: "mine" },
        }),
        status: 404,
        code: "effect.not_found",
      },
    ],
  },
  "POST /v1/drivers/effects/:effectId/deadline-missed": {
    kind: "driver_report",
    req: (w) => ({
      path: `/v1/drivers/effects/${w.effectId}/deadline-missed`,
      body: { connectionId: w.a.connectionId, attempt: 1, elapsedMs: 20_000 },
    }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [
      {
        name: "Driver B reporting A's missed deadline",
        token: (w) => w.b.token,
        req: (w) => ({
          path: `/v1/drivers/effects/${w.effectId}/deadline-missed`,
          body: { connectionId: w.b.connectionId, attempt: 1, elapsedMs: 20_000 },
        }),
        status: 404,
        code: "effect.not_found",
      },
    ],
  },
  "POST /v1/drivers/effects/:effectId/late-result": {
    kind: "driver_report",
    req: (w) => ({ path: `/v1/drivers/effects/${w.effectId}/late-result`, body: lateResultBody(w, w.a.connectionId) }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [
      {
        name: "Driver B reporting evidence for A's effect",
        token: (w) => w.b.token,
        req: (w) => ({ path: `/v1/drivers/effects/${w.effectId}/late-result`, body: lateResultBody(w, w.b.connectionId) }),
        status: 404,
        code: "effect.not_found",
      },
    ],
  },
  "POST /v1/drivers/effects/:effectId/task": {
    kind: "driver_report",
    req: (w) => ({
      path: `/v1/drivers/effects/${w.effectId}/task`,
      body: { connectionId: w.a.connectionId, attempt: 1, taskId: "task-1" },
    }),
    right: (w) => w.a.token,
    rightStatus: 200,
    extra: [
      {
        name: "Driver B reporting a task handle for A's effect",
        token: (w) => w.b.token,
        req: (w) => ({
          path: `/v1/drivers/effects/${w.effectId}/task`,
          body: { connectionId: w.b.connectionId, attempt: 1, taskId: "task-1" },
        }),
        status: 404,
        code: "effect.not_found",
      },
    ],
  },
  "GET /api/operator/effects": { kind: "operator", req: () => ({ path: E }), right: () => TEST_SECRETS.operatorToken, rightStatus: 200 },
  "GET /api/operator/effects/:effectId": {
    kind: "operator",
    req: (w) => ({ path: `${E}/${w.effectId}` }),
    right: () => TEST_SECRETS.operatorToken,
    rightStatus: 200,
  },
  // no adapter is bound: the operator passes the guard and gets the service's 409
  "POST /api/operator/effects/:effectId/reconcile": {
    kind: "operator",
    req: (w) => ({ path: `${E}/${w.effectId}/reconcile`, body: audit }),
    right: () => TEST_SECRETS.operatorToken,
    rightStatus: 409,
  },
  "POST /api/operator/effects/:effectId/resolve": {
    kind: "operator",
    req: (w) => ({ path: `${E}/${w.effectId}/resolve`, body: { outcome: "not_executed", ...audit } }),
    right: () => TEST_SECRETS.operatorToken,
    prepare: async (w) => {
      await w.f.runtime.ledger.markUnknown(await w.f.runtime.drivers.authenticate(w.a.token), w.effectId, {
        connectionId: w.a.connectionId,
        attempt: 1,
        reason: "lost",
      });
    },
    rightStatus: 200,
  },
  "POST /api/operator/effects/:effectId/compensate": {
    kind: "operator",
    req: (w) => ({ path: `${E}/${w.effectId}/compensate`, body: audit }),
    right: () => TEST_SECRETS.operatorToken,
    rightStatus: 409,
  },
};

/** The refusals every route of a kind gets (besides its `extra` ones). */
function refusalsOf(entry: Entry): Refusal[] {
  if (entry.kind === "public") return [];
  const out: Refusal[] = [
    { name: "no credential", token: () => undefined, status: 401, code: "auth.missing_token" },
    { name: "an unknown secret", token: () => "not-a-configured-secret-0123456789", status: 401, code: "auth.invalid_token" },
    { name: "an unknown Driver token", token: () => FAKE_DRIVER_TOKEN, status: 401, code: "auth.invalid_token" },
  ];
  const wrongKind = (name: string, token: (w: World) => string): Refusal => ({
    name: `wrong kind: ${name}`,
    token,
    status: 403,
    code: "auth.forbidden",
  });
  switch (entry.kind) {
    case "api_key":
    case "metrics":
      out.push(
        wrongKind("a Driver token", (w) => w.a.token),
        wrongKind("the enrollment token", () => TEST_SECRETS.enrollmentToken),
      );
      if (!entry.operatorToo) out.push(wrongKind("the operator token", () => TEST_SECRETS.operatorToken));
      out.push({ name: "wrong scope", token: () => entry.wrongScopeKey!, status: 403, code: "auth.scope" });
      // a run or session a restricted key may not reach answers as a missing one (no existence oracle)
      if (entry.ofDriverA)
        out.push({
          name: "wrong Driver: a key restricted to B",
          token: () => B_ONLY_KEY,
          status: 404,
          code: entry.notFoundCode ?? "run.not_found",
        });
      break;
    case "driver":
    case "driver_report":
      out.push(
        wrongKind("an API key", () => TEST_SECRETS.adminKey),
        wrongKind("the enrollment token", () => TEST_SECRETS.enrollmentToken),
        wrongKind("the operator token", () => TEST_SECRETS.operatorToken),
      );
      break;
    case "registration":
      out.push(wrongKind("an API key", () => TEST_SECRETS.adminKey));
      break;
    case "operator":
      out.push(
        wrongKind("an API key", () => TEST_SECRETS.adminKey),
        wrongKind("a Driver token", (w) => w.a.token),
        wrongKind("the enrollment token", () => TEST_SECRETS.enrollmentToken),
      );
      break;
  }
  out.push({ name: "a Basic scheme", token: () => "BASIC", status: 401, code: "auth.missing_token" });
  return [...out, ...(entry.extra ?? [])];
}

/** The routes of the app, `METHOD path`, as hono lists them (middleware-only `ALL` entries left out). */
function routeKeys(app: Hono): string[] {
  return [...new Set(app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path}`))].sort();
}
/** The console's routes are checked by their own matrix (`console-auth-matrix.test.ts`): session cookie + CSRF, not bearer credentials. */
const isConsoleRoute = (route: string) => route.split(" ")[1]!.startsWith("/console");

let world: World | undefined;
afterEach(() => {
  world?.f.close();
  world = undefined;
});

const probeFixture = createTestWorld();
const ALL_ROUTES = routeKeys(buildHttpApp(probeFixture.runtime, AUTH));
const ROUTES = ALL_ROUTES.filter((r) => !isConsoleRoute(r));
probeFixture.close();
let cases = 0;

describe("auth matrix", () => {
  it("has an entry for every route of the app, and no entry for a route that is gone", () => {
    expect(ROUTES.filter((r) => !(r in MATRIX))).toEqual([]);
    expect(Object.keys(MATRIX).filter((k) => !ROUTES.includes(k))).toEqual([]);
    expect(ROUTES.length).toBeGreaterThanOrEqual(20);
  });

  it("mounts exactly the route table of @mosoo/contracts: every API_ROUTES entry is mounted, every mounted route but the console's pages is in the table", () => {
    const table = Object.values(API_ROUTES)
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    const consolePages = ALL_ROUTES.filter((r) => isConsoleRoute(r) && !r.split(" ")[1]!.startsWith("/console/api/"));
    expect(table.filter((r) => !ALL_ROUTES.includes(r))).toEqual([]);
    expect(ALL_ROUTES.filter((r) => !consolePages.includes(r) && !table.includes(r))).toEqual([]);
    // and the matrix's entries are the table's bearer-credential routes, with the table's credential kind
    for (const r of Object.values(API_ROUTES) as ApiRoute[]) {
      if (r.auth.kind === "console_session") continue;
      const entry = MATRIX[`${r.method} ${r.path}`];
      expect({ route: `${r.method} ${r.path}`, kind: entry?.kind }).toEqual({ route: `${r.method} ${r.path}`, kind: r.auth.kind });
      if (r.auth.kind === "api_key")
        expect(entry?.operatorToo === true, `${r.method} ${r.path} operatorToo`).toBe(r.auth.operatorToo === true);
    }
  });

  it.each(ROUTES)("%s", async (route) => {
    const entry = MATRIX[route];
    expect(entry, `route ${route} has no auth matrix entry`).toBeDefined();
    const method = route.slice(0, route.indexOf(" "));
    world = await buildWorld();
    const w = world;
    for (const refusal of refusalsOf(entry!)) {
      const { path, body } = (refusal.req ?? entry!.req)(w);
      const token = refusal.token(w);
      const authorization =
        token === "BASIC"
          ? `Basic ${Buffer.from(`u:${TEST_SECRETS.adminKey}`).toString("base64")}`
          : token === undefined
            ? undefined
            : `Bearer ${token}`;
      const before = dump(w);
      const answer = await send(w.app, method, path, body, authorization);
      expect({ route, refusal: refusal.name, status: answer.status, code: answer.body?.error?.code }).toEqual({
        route,
        refusal: refusal.name,
        status: refusal.status,
        code: refusal.code,
      });
      expect(JSON.stringify(answer.body)).not.toContain(TEST_SECRETS.adminKey);
      expect(dump(w), `${route}: ${refusal.name} changed a table`).toBe(before);
      cases += 1;
    }
    // the right credential, once per spelling of the scheme on the idempotent reads, once otherwise
    const schemes = method === "GET" ? SCHEMES : [SCHEMES[cases % SCHEMES.length]!];
    for (const scheme of schemes) {
      const req = { ...entry!.req(w), ...((await entry!.prepare?.(w)) ?? {}) };
      const token = entry!.right(w);
      const answer = await send(w.app, method, req.path, req.body, token === undefined ? undefined : `${scheme} ${token}`);
      expect({ route, scheme, status: answer.status }).toEqual({ route, scheme, status: entry!.rightStatus });
      cases += 1;
    }
    if (entry!.operatorToo) {
      const req = { ...entry!.req(w), ...((await entry!.prepare?.(w)) ?? {}) };
      const answer = await send(w.app, method, req.path, req.body, `bearer ${TEST_SECRETS.operatorToken}`);
      expect({ route, who: "operator", status: answer.status }).toEqual({ route, who: "operator", status: entry!.rightStatus });
      cases += 1;
    }
  });

  it("counted its cases", () => {
    // reported in the issue's closing note
    console.log(`auth matrix: ${ROUTES.length} routes, ${cases} cases`);
    expect(cases).toBeGreaterThan(ROUTES.length * 5);
  });
});
