/**
 * The OpenAPI document (docs/openapi.json, GET /openapi.json): it validates as OpenAPI 3.1, covers every
 * route of the route table and nothing else, the committed file is the generator's output, and a request
 * built from it for each operation gets a status (and error code) the document lists for that operation:
 * without a credential, and with the right credential but a body that breaks the documented schema.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compileErrors, validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_ROUTES, type ApiRoute } from "@mosoo/contracts";
import { RECONCILIATION_OFF } from "../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { REPO_ROOT, openApiText } from "../scripts/docs/generated-docs.js";
import { TEST_AUTH, TEST_SECRETS } from "./helpers/http-call.js";
import { buildHttpApp, connectDriver, createTestWorld, type HttpApp, type TestWorld } from "./kit/index.js";

type Operation = {
  operationId: string;
  description?: string;
  security: Array<Record<string, string[]>>;
  parameters: Array<{ name: string; in: string; required: boolean; schema: { pattern?: string } }>;
  requestBody?: unknown;
  responses: Record<
    string,
    { content?: { "application/json"?: { schema?: { properties?: { error?: { properties?: { code?: { enum?: string[] } } } } } } } }
  >;
  "x-mosoo-auth": ApiRoute["auth"];
};
const doc = JSON.parse(openApiText()) as { paths: Record<string, Record<string, Operation>> };
const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));

/** A value of a path parameter that its schema accepts (an id nobody holds). */
const VALID_ULID = "01JDZZZZZZZZZZZZZZZZZZZZZZ";
function fill(path: string, op: Operation): string {
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const p = op.parameters.find((x) => x.name === name && x.in === "path");
    return p?.schema.pattern && new RegExp(p.schema.pattern).test(VALID_ULID) ? VALID_ULID : "tc-openapi";
  });
}

/** The error codes the document lists for `status` on `op` (empty for a success status). */
function documentedCodes(op: Operation, status: number): string[] {
  return op.responses[String(status)]?.content?.["application/json"]?.schema?.properties?.error?.properties?.code?.enum ?? [];
}

describe("the OpenAPI document", () => {
  it("validates as OpenAPI 3.1 (@readme/openapi-parser)", async () => {
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
    expect((doc as unknown as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("has one operation per route of the table, with the table's method, path, credential and codes", () => {
    const routes = Object.entries(API_ROUTES) as Array<[string, ApiRoute]>;
    expect(operations).toHaveLength(routes.length);
    for (const [name, route] of routes) {
      const op = doc.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")]?.[route.method.toLowerCase()];
      expect(op?.operationId, `${route.method} ${route.path}`).toBe(name);
      expect(op?.["x-mosoo-auth"]).toEqual(route.auth);
      const listed = Object.keys(op!.responses).flatMap((s) => documentedCodes(op!, Number(s)));
      for (const code of route.errors) expect(listed, `${name} lists ${code}`).toContain(code);
    }
  });

  it("docs/openapi.json is the generator's output (npm run docs:generate)", () => {
    expect(readFileSync(join(REPO_ROOT, "docs/openapi.json"), "utf8")).toBe(openApiText());
  });
});

describe("a request built from the document gets a documented answer", () => {
  let f: TestWorld;
  let app: HttpApp;
  let driverToken: string;
  beforeAll(async () => {
    f = createTestWorld({ reconciliation: { ...RECONCILIATION_OFF, enabled: true } });
    driverToken = (await connectDriver(f.runtime, "driver-openapi")).token;
    app = buildHttpApp(f.runtime, TEST_AUTH);
  });
  afterAll(() => f?.close());

  /** The credential the document's `x-mosoo-auth` names, from the test world's secrets (`undefined`: none or a console session). */
  const rightCredential = (auth: ApiRoute["auth"]): string | undefined =>
    ({
      public: undefined,
      metrics: TEST_SECRETS.adminKey,
      api_key: TEST_SECRETS.adminKey,
      registration: TEST_SECRETS.enrollmentToken,
      driver: driverToken,
      driver_report: driverToken,
      operator: TEST_SECRETS.operatorToken,
      console_session: undefined,
    })[auth.kind];

  async function send(method: string, path: string, token: string | undefined, body?: unknown) {
    const res = await app.request(path, {
      method: method.toUpperCase(),
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    const json = res.headers.get("content-type")?.includes("json") && text ? (JSON.parse(text) as { error?: { code: string } }) : null;
    return { status: res.status, code: json?.error?.code };
  }

  it.each(operations.filter((o) => o.op.security.length > 0).map((o) => [`${o.method.toUpperCase()} ${o.path}`, o] as const))(
    "%s without a credential: a documented refusal",
    async (_name, { path, method, op }) => {
      const answer = await send(method, fill(path, op), undefined, op.requestBody ? {} : undefined);
      expect([401, 403, 404]).toContain(answer.status);
      expect(documentedCodes(op, answer.status)).toContain(answer.code);
    },
  );

  it.each(
    operations
      .filter((o) => o.op["x-mosoo-auth"].kind !== "console_session")
      .map((o) => [`${o.method.toUpperCase()} ${o.path}`, o] as const),
  )("%s with its credential (and a body that breaks its schema): a documented status", async (_name, { path, method, op }) => {
    // a Driver of its own per request: a request about one Driver (e.g. finalize) must not change another's answer
    driverToken = (await connectDriver(f.runtime, `driver-${op.operationId}`)).token;
    const answer = await send(method, fill(path, op), rightCredential(op["x-mosoo-auth"]), op.requestBody ? [] : undefined);
    expect(Object.keys(op.responses)).toContain(String(answer.status));
    if (answer.status >= 400) expect(documentedCodes(op, answer.status)).toContain(answer.code);
    // a broken body is never taken: 400 request.invalid, or an earlier documented refusal (e.g. the path's run does not exist);
    // a route whose description says it does not read its body is the one exception
    if (op.requestBody && !op.description?.includes("does not read the body")) expect(answer.status).toBeGreaterThanOrEqual(400);
    if (op.requestBody && answer.status === 400) expect(answer.code).toBe("request.invalid");
  });

  it("GET /openapi.json serves the document, without a credential", async () => {
    const res = await app.request("/openapi.json");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(doc);
  });
});
