/**
 * Input at the boundary (docs/DESIGN.md §10), the protocol edges a hostile client on the same host tried, over real
 * HTTP: a 413 closes the connection cleanly (the client's next request works on a new one); deep
 * JSON is a typed 400, never a 500; the logs carry no credential and no idempotency key at info.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadApiConfig } from "../src/config/api-config.js";
import { startApi, type RunningApi } from "../src/server.js";
import { LOG_REDACT_PATHS } from "../src/platform/logger.js";
import { MAX_BODY_BYTES } from "../src/entry/http/app.js";
import { defaultCredential, TEST_CREDENTIALS_ENV, TEST_SECRETS } from "./helpers/http-call.js";

let dir: string | undefined;
let api: RunningApi | undefined;
afterEach(async () => {
  await api?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  api = undefined;
  dir = undefined;
});

/** A pino logger whose lines are collected (parsed) in `lines`. */
function capturingLogger(level: string, redact = false) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level, ...(redact ? { redact: { paths: [...LOG_REDACT_PATHS], censor: "[redacted]" } } : {}) }, sink) };
}

/** The JSON content type plus the credential `path` (or URL) needs ({@link defaultCredential}; the API key elsewhere). */
const headersFor = (path: string): Record<string, string> => ({
  "content-type": "application/json",
  authorization: `Bearer ${defaultCredential("POST", new URL(path, "http://api").pathname) ?? TEST_SECRETS.adminKey}`,
});

async function start(level = "silent", env: Record<string, string> = {}) {
  dir = mkdtempSync(join(tmpdir(), "mosoo-http-"));
  const capture = capturingLogger(level);
  const config = loadApiConfig({
    MOSOO_DB_FILE: join(dir, "api.db"),
    MOSOO_PORT: "0",
    ...TEST_CREDENTIALS_ENV,
    ...env,
  });
  api = await startApi(config, capture.logger, { sweep: false });
  return { api, lines: capture.lines };
}

/** One request on `agent`-less keep-alive HTTP/1.1 (node:http), resolving status, headers and body. */
function send(url: string, method: string, body?: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method, headers: { ...headersFor(url), connection: "keep-alive", ...(body ? { "content-length": Buffer.byteLength(body) } : {}) } },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("413 closes the connection cleanly", () => {
  it("answers request.too_large with Connection: close, and the client's next request works", async () => {
    const { api } = await start();
    const big = JSON.stringify({ name: "x".repeat(MAX_BODY_BYTES + 1) });
    const tooLarge = await fetch(`${api.url}/v1/drivers/register`, {
      method: "POST",
      headers: headersFor("/v1/drivers/register"),
      body: big,
    });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get("connection")).toBe("close");
    expect(((await tooLarge.json()) as any).error.code).toBe("request.too_large");
    // the same client (fetch's keep-alive pool) sends its next request: a new connection, answered
    const next = await fetch(`${api.url}/v1/drivers/register`, {
      method: "POST",
      headers: headersFor("/v1/drivers/register"),
      body: JSON.stringify({ name: "after-413" }),
    });
    expect(next.status).toBe(201);
    // and over plain node:http with keep-alive
    const raw = await send(`${api.url}/v1/drivers/register`, "POST", big);
    expect(raw.status).toBe(413);
    expect(raw.headers["connection"]).toBe("close");
    expect((await send(`${api.url}/health`, "GET")).status).toBe(200);
  }, 60_000);
});

describe("deep JSON over real HTTP", () => {
  it("is a typed 400, never a 500, and the API keeps serving", async () => {
    const { api } = await start();
    const reg = (await (
      await fetch(`${api.url}/v1/drivers/register`, { method: "POST", headers: headersFor("/v1/drivers/register"), body: '{"name":"d"}' })
    ).json()) as any;
    const run = (await (
      await fetch(`${api.url}/v1/runs`, {
        method: "POST",
        headers: headersFor("/v1/runs"),
        body: JSON.stringify({ driverInstanceId: reg.driverInstanceId }),
      })
    ).json()) as any;
    const deep = `{"serverId":"tracker","toolName":"createIssue","arguments":{"a":${"[".repeat(50_000)}${"]".repeat(50_000)}}}`;
    const res = await fetch(`${api.url}/v1/runs/${run.runId}/tool-calls`, { method: "POST", headers: headersFor("/v1/runs/"), body: deep });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({
      code: "request.invalid",
      message: expect.stringMatching(/nested deeper than 400 levels/),
    });
    expect((await fetch(`${api.url}/health`)).status).toBe(200);
  }, 60_000);
});

describe("bodies that are not what the route takes, over real HTTP", () => {
  it("unparsable JSON is a 400 saying so (not 'must be an object'); a key without the route's scope is a 403 naming the key and the scope", async () => {
    const { api } = await start("silent", {
      MOSOO_API_KEYS: `${TEST_CREDENTIALS_ENV.MOSOO_API_KEYS},reader:${TEST_SECRETS.readerKey}:runs:read`,
    });
    const bad = await fetch(`${api.url}/v1/drivers/register`, {
      method: "POST",
      headers: headersFor("/v1/drivers/register"),
      body: '{"name":',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error).toMatchObject({
      code: "request.invalid",
      message: expect.stringMatching(/^the request body is not valid JSON \(/),
    });
    const scoped = await fetch(`${api.url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_SECRETS.readerKey}`, "content-type": "application/json" },
      body: JSON.stringify({ driverInstanceId: "01J00000000000000000000000" }),
    });
    expect(scoped.status).toBe(403);
    expect(((await scoped.json()) as any).error).toMatchObject({
      code: "auth.scope",
      message: expect.stringMatching(/API key reader lacks the runs:write scope/),
    });
  }, 60_000);
});

describe("logs", () => {
  it("redact credentials wherever they appear (pino redact)", () => {
    const { lines, logger } = capturingLogger("info", true);
    logger.info(
      {
        authorization: "Bearer secret-1",
        driverToken: "mdt_secret-2",
        req: { headers: { authorization: "Bearer secret-3", "x-api-key": "secret-4" } },
        nested: { token: "secret-5", deeper: { operatorToken: "secret-6", apiKey: "secret-7" } },
        secret: "secret-8",
        password: "secret-9",
      },
      "with credentials",
    );
    const text = JSON.stringify(lines);
    expect(text).not.toMatch(/secret-\d/);
    expect(text).toContain("[redacted]");
  });

  it("carry the idempotency key of an intent only at debug", async () => {
    const info = await start("info");
    const body = (path: string, o: unknown) => ({ method: "POST", headers: headersFor(path), body: JSON.stringify(o) });
    const reg = (await (await fetch(`${info.api.url}/v1/drivers/register`, body("/v1/drivers/register", { name: "d" }))).json()) as any;
    const run = (await (
      await fetch(`${info.api.url}/v1/runs`, body("/v1/runs", { driverInstanceId: reg.driverInstanceId }))
    ).json()) as any;
    const queued = (await (
      await fetch(
        `${info.api.url}/v1/runs/${run.runId}/tool-calls`,
        body("/v1/runs", { serverId: "tracker", toolName: "createIssue", arguments: {} }),
      )
    ).json()) as any;
    expect(info.lines.some((l) => l["msg"] === "effect.intent_recorded")).toBe(true);
    expect(JSON.stringify(info.lines)).not.toContain(queued.idempotencyKey);
    await api!.close();
    api = undefined;
    rmSync(dir!, { recursive: true, force: true });

    const debug = await start("debug");
    const reg2 = (await (await fetch(`${debug.api.url}/v1/drivers/register`, body("/v1/drivers/register", { name: "d" }))).json()) as any;
    const run2 = (await (
      await fetch(`${debug.api.url}/v1/runs`, body("/v1/runs", { driverInstanceId: reg2.driverInstanceId }))
    ).json()) as any;
    const queued2 = (await (
      await fetch(
        `${debug.api.url}/v1/runs/${run2.runId}/tool-calls`,
        body("/v1/runs", { serverId: "tracker", toolName: "createIssue", arguments: {} }),
      )
    ).json()) as any;
    expect(debug.lines.find((l) => l["msg"] === "effect.intent_key")).toMatchObject({ level: 20, idempotencyKey: queued2.idempotencyKey });
  }, 60_000);
});
