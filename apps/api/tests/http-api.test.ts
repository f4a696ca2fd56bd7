import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultCredential, requestJson, TEST_AUTH } from "./helpers/http-call.js";
import { buildHttpApp, createTestWorld, type HttpApp, type TestWorld } from "./kit/index.js";

let f: TestWorld;
let app: HttpApp;
beforeEach(() => {
  f = createTestWorld();
  app = buildHttpApp(f.runtime, TEST_AUTH);
});
afterEach(() => f.close());

function call(method: string, path: string, body?: unknown, token?: string) {
  return requestJson(app, method, path, body, token ?? defaultCredential(method, path));
}

async function registerAndConnect() {
  const reg = await call("POST", "/v1/drivers/register", { name: "d1" });
  expect(reg.status).toBe(201);
  const conn = await call("POST", "/v1/drivers/connect", undefined, reg.body.driverToken);
  expect(conn.status).toBe(200);
  return { token: reg.body.driverToken as string, id: reg.body.driverInstanceId as string, connectionId: conn.body.connectionId as string };
}

describe("HTTP surface", () => {
  it("answers health", async () => {
    expect(await call("GET", "/health")).toEqual({ status: 200, body: { status: "ok" } });
  });

  it("runs the Driver protocol end to end over HTTP", async () => {
    const d = await registerAndConnect();
    const run = await call("POST", "/v1/runs", { driverInstanceId: d.id });
    expect(run.status).toBe(201);
    const tc = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: { title: "a", body: "b" },
      requestId: "r",
    });
    expect(tc.status).toBe(201);
    const next = await call("GET", `/v1/drivers/commands/next?connectionId=${d.connectionId}&waitMs=0`, undefined, d.token);
    expect(next.body.command).toMatchObject({
      commandId: tc.body.commandId,
      status: "queued",
      redelivery: false,
      payload: { toolName: "createIssue" },
    });
    const claim = await call("POST", "/v1/drivers/effects/claim", { connectionId: d.connectionId, commandId: tc.body.commandId }, d.token);
    expect(claim.body).toEqual({
      kind: "execute",
      effectId: tc.body.effectId,
      attempt: 1,
      idempotencyKey: tc.body.idempotencyKey,
      sendWithinMs: 10_000,
    });
    const result = { outputText: "ok", requestId: "r", serverId: "tracker", toolName: "createIssue" };
    const wrong = await call(
      "POST",
      `/v1/drivers/effects/${tc.body.effectId}/complete`,
      { connectionId: d.connectionId, attempt: 1, result: { ...result, toolName: "deleteIssue" }, receipt: null },
      d.token,
    );
    expect(wrong).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
    const done = await call(
      "POST",
      `/v1/drivers/effects/${tc.body.effectId}/complete`,
      { connectionId: d.connectionId, attempt: 1, result, receipt: null },
      d.token,
    );
    expect(done.body).toEqual({ outcome: "applied", status: "succeeded" });
    const upd = await call(
      "POST",
      `/v1/drivers/commands/${tc.body.commandId}/update`,
      { connectionId: d.connectionId, status: "completed", result },
      d.token,
    );
    expect(upd.body).toEqual({ outcome: "applied", status: "completed" });
    const view = await call("GET", `/v1/runs/${run.body.runId}`);
    expect(view.body.commands[0].status).toBe("completed");
    const events = await call("GET", `/v1/runs/${run.body.runId}/events?afterSeq=1`);
    expect(events.body.events.map((e: { type: string }) => e.type)).toEqual(["tool_call.queued", "tool_call.completed"]);
  });

  it("wakes a long-poll when a command is queued", async () => {
    const d = await registerAndConnect();
    const run = await call("POST", "/v1/runs", { driverInstanceId: d.id });
    const pending = call("GET", `/v1/drivers/commands/next?connectionId=${d.connectionId}&waitMs=5000`, undefined, d.token);
    const tc = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, { serverId: "tracker", toolName: "createIssue", arguments: {} });
    const next = await pending;
    expect(next.body.command?.commandId).toBe(tc.body.commandId);
  });

  it.each([
    ["POST", "/v1/runs", "{not json", 400, "request.invalid"],
    ["POST", "/v1/runs", { driverInstanceId: "nope" }, 400, "request.invalid"],
    ["POST", "/v1/runs", { driverInstanceId: "01JDZZZZZZZZZZZZZZZZZZZZZZ" }, 404, "driver.not_found"],
    ["GET", "/v1/runs/01JDZZZZZZZZZZZZZZZZZZZZZZ", undefined, 404, "run.not_found"],
    ["GET", "/v1/runs/bad-id", undefined, 400, "request.invalid"],
    ["POST", "/v1/drivers/register", { name: "" }, 400, "request.invalid"],
    ["GET", "/nope", undefined, 404, "route.not_found"],
  ])("%s %s with bad input answers %i %s", async (method, path, body, status, code) => {
    const res = await call(method, path, body);
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(JSON.stringify(res.body)).not.toMatch(/\bat .*\.ts:\d+/);
  });

  it("rejects bad tool calls and changes nothing", async () => {
    const d = await registerAndConnect();
    const run = await call("POST", "/v1/runs", { driverInstanceId: d.id });
    for (const body of [
      { serverId: "bad id!", toolName: "x", arguments: {} },
      { serverId: "s", toolName: "", arguments: {} },
      { serverId: "s", toolName: "x", arguments: [] },
    ]) {
      const res = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("request.invalid");
    }
    const view = await call("GET", `/v1/runs/${run.body.runId}`);
    expect(view.body.commands).toHaveLength(0);
    expect(view.body.effects).toHaveLength(0);
  });

  it("authenticates every Driver route and refuses a superseded connection", async () => {
    const d = await registerAndConnect();
    expect((await call("POST", "/v1/drivers/connect")).body.error.code).toBe("auth.missing_token");
    const bad = await call("POST", "/v1/drivers/connect", undefined, `mdt_${d.id}_${"x".repeat(43)}`);
    expect(bad).toMatchObject({ status: 401, body: { error: { code: "auth.invalid_token" } } });
    await call("POST", "/v1/drivers/connect", undefined, d.token);
    const stale = await call("POST", "/v1/drivers/heartbeat", { connectionId: d.connectionId }, d.token);
    expect(stale).toMatchObject({ status: 409, body: { error: { code: "driver.connection_superseded" } } });
  });
});

describe("HTTP surface: retries and edge input", () => {
  it("makes an enqueue with a client toolCallId idempotent: a retry returns the first, other arguments conflict", async () => {
    const d = await registerAndConnect();
    const run = await call("POST", "/v1/runs", { driverInstanceId: d.id });
    const body = {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: { title: "a", body: "b" },
      toolCallId: "call-1",
      requestId: "req-1",
    };
    const first = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, body);
    expect(first.status).toBe(201);
    expect(first.body.replayed).toBe(false);
    const retry = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, { ...body, arguments: { body: "b", title: "a" } });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ ...first.body, replayed: true });
    const other = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, { ...body, arguments: { title: "other", body: "b" } });
    expect(other).toMatchObject({
      status: 409,
      body: { error: { code: "tool_call.conflict", details: { effectId: first.body.effectId } } },
    });
    const view = await call("GET", `/v1/runs/${run.body.runId}`);
    expect(view.body.effects).toHaveLength(1);
    expect(view.body.commands).toHaveLength(1);
  });

  it("refuses a body over the size limit with 413", async () => {
    const res = await call("POST", "/v1/runs", JSON.stringify({ driverInstanceId: "x", pad: "a".repeat(5 * 1024 * 1024) }));
    expect(res).toMatchObject({ status: 413, body: { error: { code: "request.too_large" } } });
  });

  it("refuses non-finite numbers in arguments with 400 and queues nothing", async () => {
    const d = await registerAndConnect();
    const run = await call("POST", "/v1/runs", { driverInstanceId: d.id });
    const res = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, '{"serverId":"t","toolName":"x","arguments":{"a":1e400}}');
    expect(res).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
    expect((await call("GET", `/v1/runs/${run.body.runId}`)).body.commands).toHaveLength(0);
  });

  it("refuses to re-register a Driver instance that was not finalized", async () => {
    const d = await registerAndConnect();
    // the enrollment token never re-registers an existing id (identity takeover)
    const res = await call("POST", "/v1/drivers/register", { name: "evil", driverInstanceId: d.id });
    expect(res).toMatchObject({ status: 403, body: { error: { code: "auth.forbidden" } } });
    // the operator may, but only once the instance was finalized
    const op = await call("POST", "/v1/drivers/register", { name: "evil", driverInstanceId: d.id }, TEST_AUTH.operatorToken);
    expect(op).toMatchObject({ status: 409, body: { error: { code: "driver.not_finalized" } } });
    // the original token still works
    expect((await call("POST", "/v1/drivers/heartbeat", { connectionId: d.connectionId }, d.token)).status).toBe(200);
  });

  it("ends a pending long-poll at once when the API shuts down", async () => {
    const d = await registerAndConnect();
    const pending = call("GET", `/v1/drivers/commands/next?connectionId=${d.connectionId}&waitMs=30000`, undefined, d.token);
    await new Promise((r) => setTimeout(r, 20));
    f.runtime.ctx.shutdown.abort();
    const res = await pending;
    expect(res).toEqual({ status: 200, body: { command: null } });
  });
});
