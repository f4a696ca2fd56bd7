/**
 * Bad input catalogue (docs/DESIGN.md §9): malformed Driver protocol messages, a Driver
 * touching another Driver's command or effect, oversized results and receipts, invalid operator
 * requests, invalid config. Each row is refused with its typed error (HTTP status + stable code)
 * and the store is byte-for-byte the same afterwards (every table dumped before and after).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiConfigSchema, ConfigError, loadApiConfig, unknownMosooEnvNames } from "../src/config/api-config.js";
import { buildHttpApp, createTestWorld, type HttpApp, type TestWorld } from "./kit/index.js";
import { defaultCredential, requestJson, TEST_AUTH } from "./helpers/http-call.js";
import { RECONCILIATION_OFF } from "../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { OPERATOR_REFUSAL_CODES } from "@mosoo/contracts";
import { dumpAllTables } from "./helpers/reconciliation-db.js";

const OPERATOR_TOKEN = "operator-token-0123456789";
let f: TestWorld;
let app: HttpApp;

interface Ctx {
  a: { token: string; id: string; connectionId: string };
  b: { token: string; id: string; connectionId: string };
  runId: string;
  commandId: string;
  effectId: string;
}
let ctx: Ctx;

function call(method: string, path: string, body?: unknown, token?: string) {
  return requestJson(app, method, path, body, token ?? defaultCredential(method, path));
}

async function driver(name: string) {
  const reg = await call("POST", "/v1/drivers/register", { name });
  const conn = await call("POST", "/v1/drivers/connect", undefined, reg.body.driverToken);
  return { token: reg.body.driverToken as string, id: reg.body.driverInstanceId as string, connectionId: conn.body.connectionId as string };
}

/**
 * Every row of every table (migrations bookkeeping excluded, and the audit of refused operator
 * actions, which is checked on its own below), as JSON: "nothing changed" means equal dumps.
 */
function dump(): string {
  return dumpAllTables(f.store.sqlite, ["effect_operator_refusals"]);
}

beforeEach(async () => {
  // the operator surface exists only with reconciliation on; no server is bound, so effects keep the baseline fence
  f = createTestWorld({ reconciliation: { ...RECONCILIATION_OFF, enabled: true } });
  app = buildHttpApp(f.runtime, { ...TEST_AUTH, operatorToken: OPERATOR_TOKEN });
  const a = await driver("driver-a");
  const b = await driver("driver-b");
  const run = await call("POST", "/v1/runs", { driverInstanceId: a.id });
  const tc = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, {
    serverId: "tracker",
    toolName: "createIssue",
    arguments: { title: "a", body: "b" },
    requestId: "r",
  });
  await call("GET", `/v1/drivers/commands/next?connectionId=${a.connectionId}&waitMs=0`, undefined, a.token);
  const claim = await call("POST", "/v1/drivers/effects/claim", { connectionId: a.connectionId, commandId: tc.body.commandId }, a.token);
  expect(claim.body.kind).toBe("execute");
  ctx = { a, b, runId: run.body.runId, commandId: tc.body.commandId, effectId: tc.body.effectId };
});
afterEach(() => f.close());

const result = { outputText: "ok", requestId: "r", serverId: "tracker", toolName: "createIssue" };

/**
 * Sends `body` as is (a string) with exactly `headers` (plus a bearer `token`, by default the
 * credential the route needs: {@link defaultCredential}): for bodies JSON.stringify cannot produce
 * and other content types. A `Uint8Array` body is sent byte for byte (invalid UTF-8 included).
 */
async function raw(
  method: string,
  path: string,
  body: string | Uint8Array | undefined,
  headers: Record<string, string>,
  token = defaultCredential(method, path),
) {
  const res = await app.request(path, {
    method,
    headers: {
      ...headers,
      ...(body !== undefined ? { "content-length": String(Buffer.byteLength(body)) } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as any };
}
const json = { "content-type": "application/json" };
/** `{"a":{"a":...{"a":1}}}` nested `depth` objects deep, as JSON text (built without recursion). */
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
/** `[[...[1]...]]` nested `depth` arrays deep, as JSON text. */
const deepArray = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;
const enqueuePath = (c: Ctx) => `/v1/runs/${c.runId}/tool-calls`;
const enqueueRaw = (c: Ctx, argumentsJson: string, extra = "") =>
  raw("POST", enqueuePath(c), `{"serverId":"tracker","toolName":"createIssue"${extra},"arguments":${argumentsJson}}`, json);
const enqueue = (c: Ctx, body: Record<string, unknown>) =>
  call("POST", enqueuePath(c), { serverId: "tracker", toolName: "createIssue", arguments: { title: "t" }, ...body });
const completeRaw = (c: Ctx, resultJson: string, receiptJson: string) =>
  raw(
    "POST",
    `/v1/drivers/effects/${c.effectId}/complete`,
    `{"connectionId":"${c.a.connectionId}","attempt":1,"result":${resultJson},"receipt":${receiptJson}}`,
    json,
    c.a.token,
  );
const failRaw = (c: Ctx, errorJson: string) =>
  raw(
    "POST",
    `/v1/drivers/commands/${c.commandId}/update`,
    `{"connectionId":"${c.a.connectionId}","status":"failed","error":${errorJson}}`,
    json,
    c.a.token,
  );
const failWith = (c: Ctx, error: Record<string, unknown>) =>
  call(
    "POST",
    `/v1/drivers/commands/${c.commandId}/update`,
    {
      connectionId: c.a.connectionId,
      status: "failed",
      error: { code: "mcp.tool_call_failed", message: "x", retryable: true, details: {}, ...error },
    },
    c.a.token,
  );
const resolveRaw = (c: Ctx, bodyJson: string) => raw("POST", `/api/operator/effects/${c.effectId}/resolve`, bodyJson, json, OPERATOR_TOKEN);
const resolveAs = (c: Ctx, body: Record<string, unknown>) =>
  call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "not_executed", reason: "r", ...body }, OPERATOR_TOKEN);
const RESULT_JSON = JSON.stringify(result);
/**
 * `template` as UTF-8 bytes with every `<XX>` replaced by the raw byte 0xXX (e.g. `"<ff><fe>"`):
 * a body that no JavaScript string can produce, as `curl --data-binary $'...\xff\xfe'` sends it.
 */
const bytes = (template: string): Uint8Array => {
  const parts = template.split(/<([0-9a-f]{2})>/);
  return Buffer.concat(parts.map((part, i) => (i % 2 === 1 ? Buffer.from([parseInt(part, 16)]) : Buffer.from(part, "utf8"))));
};
const rawBytes = (method: string, path: string, template: string, token?: string) =>
  raw(method, path, bytes(template), json, token ?? defaultCredential(method, path));
const completeWith = (c: Ctx, body: Record<string, unknown>) =>
  call(
    "POST",
    `/v1/drivers/effects/${c.effectId}/complete`,
    { connectionId: c.a.connectionId, attempt: 1, result, receipt: null, ...body },
    c.a.token,
  );
const lateResult = (c: Ctx, body: Record<string, unknown>) =>
  call(
    "POST",
    `/v1/drivers/effects/${c.effectId}/late-result`,
    {
      connectionId: c.a.connectionId,
      attempt: 1,
      idempotencyKey: c.effectId,
      toolName: "createIssue",
      requestFingerprint: "0".repeat(64),
      result,
      receipt: null,
      ...body,
    },
    c.a.token,
  );
const poll = (c: Ctx, waitMs: string) =>
  call("GET", `/v1/drivers/commands/next?connectionId=${c.a.connectionId}&waitMs=${waitMs}`, undefined, c.a.token);
const events = (c: Ctx, afterSeq: string) => call("GET", `/v1/runs/${c.runId}/events?afterSeq=${afterSeq}`);
const listEffects = (query: string) => call("GET", `/api/operator/effects?${query}`, undefined, OPERATOR_TOKEN);
/** What the refusal's message must say for each boundary-input kind, so a row cannot pass for another reason. */
const MESSAGE_OF: Partial<Record<BadInput["category"], RegExp>> = {
  "nesting depth": /nested deeper than 400 levels/,
  "lone surrogate": /well-formed UTF-16/,
  "control or bidi character in an identifier": /control or bidi characters/,
  "forbidden key": /the key "(__proto__|constructor|prototype)" is not allowed/,
  "bounded error.details": /larger than 4096 bytes/,
  "content type": /Content-Type: application\/json/,
  "strict integer": /decimal integer|Too small/,
  "invalid UTF-8 body": /the request body is not valid UTF-8/,
  "unknown field": /Unrecognized key: "extra"/,
  "format character in an identifier": /must not contain invisible format characters \(Unicode category Cf/,
};
const bad = (category: BadInput["category"], name: string, send: BadInput["send"], status = 400, code = "request.invalid"): BadInput => ({
  category,
  name,
  send,
  status,
  code,
  ...(MESSAGE_OF[category] ? { message: MESSAGE_OF[category] } : {}),
});
const op = { authorization: OPERATOR_TOKEN };

/** One bad request: what it is, how it is sent, and the typed refusal it must get. */
interface BadInput {
  category:
    | "malformed protocol"
    | "another Driver's command/effect"
    | "oversized"
    | "invalid operator request"
    | "nesting depth"
    | "lone surrogate"
    | "control or bidi character in an identifier"
    | "forbidden key"
    | "bounded error.details"
    | "content type"
    | "strict integer"
    | "invalid UTF-8 body"
    | "unknown field"
    | "format character in an identifier";
  name: string;
  send: (c: Ctx) => ReturnType<typeof call>;
  status: number;
  code: string;
  /** What the message must say (boundary-input rows), so the row is refused for the reason it names. */
  message?: RegExp;
}

const CATALOGUE: BadInput[] = [
  {
    category: "malformed protocol",
    name: "claim body is not JSON",
    send: (c) => call("POST", "/v1/drivers/effects/claim", "{not json", c.a.token),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "malformed protocol",
    name: "claim without connectionId",
    send: (c) => call("POST", "/v1/drivers/effects/claim", { commandId: c.commandId }, c.a.token),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "malformed protocol",
    name: "complete with attempt 0",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/complete`,
        { connectionId: c.a.connectionId, attempt: 0, result, receipt: null },
        c.a.token,
      ),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "malformed protocol",
    name: "complete with a result missing outputText",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/complete`,
        {
          connectionId: c.a.connectionId,
          attempt: 1,
          result: { requestId: "r", serverId: "tracker", toolName: "createIssue" },
          receipt: null,
        },
        c.a.token,
      ),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "malformed protocol",
    name: "complete with a result naming another tool",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/complete`,
        { connectionId: c.a.connectionId, attempt: 1, result: { ...result, toolName: "deleteIssue" }, receipt: null },
        c.a.token,
      ),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "malformed protocol",
    name: "command update with an unknown status",
    send: (c) =>
      call("POST", `/v1/drivers/commands/${c.commandId}/update`, { connectionId: c.a.connectionId, status: "exploded" }, c.a.token),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "malformed protocol",
    name: "command update completed without a result",
    send: (c) =>
      call("POST", `/v1/drivers/commands/${c.commandId}/update`, { connectionId: c.a.connectionId, status: "completed" }, c.a.token),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "malformed protocol",
    name: "mark-unknown with extra fields of the wrong type",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/mark-unknown`,
        { connectionId: c.a.connectionId, attempt: "one", reason: 5 },
        c.a.token,
      ),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "malformed protocol",
    name: "malformed bearer token",
    send: (c) => call("POST", "/v1/drivers/effects/claim", { connectionId: c.a.connectionId, commandId: c.commandId }, "not-a-token"),
    status: 401,
    code: "auth.invalid_token",
  },
  {
    category: "malformed protocol",
    name: "no bearer token",
    send: (c) => call("POST", "/v1/drivers/effects/claim", { connectionId: c.a.connectionId, commandId: c.commandId }),
    status: 401,
    code: "auth.missing_token",
  },
  {
    category: "malformed protocol",
    name: "claim on a superseded connection",
    send: (c) => call("POST", "/v1/drivers/effects/claim", { connectionId: c.b.connectionId, commandId: c.commandId }, c.a.token),
    status: 409,
    code: "driver.connection_superseded",
  },
  {
    category: "another Driver's command/effect",
    name: "B claims A's command",
    send: (c) => call("POST", "/v1/drivers/effects/claim", { connectionId: c.b.connectionId, commandId: c.commandId }, c.b.token),
    status: 404,
    code: "command.not_found",
  },
  {
    category: "another Driver's command/effect",
    name: "B completes A's effect",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/complete`,
        { connectionId: c.b.connectionId, attempt: 1, result, receipt: null },
        c.b.token,
      ),
    status: 404,
    code: "effect.not_found",
  },
  {
    category: "another Driver's command/effect",
    name: "B marks A's effect unknown",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/mark-unknown`,
        { connectionId: c.b.connectionId, attempt: 1, reason: "mine now" },
        c.b.token,
      ),
    status: 404,
    code: "effect.not_found",
  },
  {
    category: "another Driver's command/effect",
    name: "B fails A's command",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/commands/${c.commandId}/update`,
        {
          connectionId: c.b.connectionId,
          status: "failed",
          error: { code: "mcp.tool_call_failed", message: "x", retryable: true, details: {} },
        },
        c.b.token,
      ),
    status: 404,
    code: "command.not_found",
  },
  {
    category: "oversized",
    name: "result outputText over 1 MiB",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/complete`,
        { connectionId: c.a.connectionId, attempt: 1, result: { ...result, outputText: "x".repeat(1024 * 1024 + 1) }, receipt: null },
        c.a.token,
      ),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "oversized",
    name: "receipt over 16 KiB",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/complete`,
        { connectionId: c.a.connectionId, attempt: 1, result, receipt: { pad: "x".repeat(17 * 1024) } },
        c.a.token,
      ),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "oversized",
    name: "request body over 4 MiB",
    send: (c) =>
      call(
        "POST",
        `/v1/drivers/effects/${c.effectId}/complete`,
        { connectionId: c.a.connectionId, attempt: 1, result: { ...result, outputText: "x".repeat(5 * 1024 * 1024) }, receipt: null },
        c.a.token,
      ),
    status: 413,
    code: "request.too_large",
  },
  {
    category: "invalid operator request",
    name: "resolve without the operator token",
    send: (c) => call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "not_executed", reason: "r" }),
    status: 401,
    code: "auth.missing_token",
  },
  {
    category: "invalid operator request",
    name: "resolve with a wrong operator token",
    send: (c) =>
      call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "not_executed", reason: "r" }, "wrong-token-0123456789"),
    status: 401,
    code: "auth.invalid_token",
  },
  {
    category: "invalid operator request",
    name: "resolve naming an actor in the body (the actor is the credential's name)",
    send: (c) =>
      call(
        "POST",
        `/api/operator/effects/${c.effectId}/resolve`,
        { outcome: "not_executed", actor: "trusted-admin", reason: "r" },
        op.authorization,
      ),
    status: 400,
    code: "request.invalid",
    message: /actor is the name of your operator credential/,
  },
  {
    category: "invalid operator request",
    name: "resolve with an unknown outcome",
    send: (c) => call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "undo", reason: "r" }, op.authorization),
    status: 400,
    code: "request.invalid",
  },
  {
    category: "invalid operator request",
    name: "resolve an executing (not unknown) effect",
    send: (c) => call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "not_executed", reason: "r" }, op.authorization),
    status: 409,
    code: "effect.not_unknown",
  },
  {
    category: "invalid operator request",
    name: "lookup of an effect that does not exist",
    send: () => call("POST", "/api/operator/effects/01JDZZZZZZZZZZZZZZZZZZZZZZ/reconcile", { reason: "r" }, op.authorization),
    status: 404,
    code: "effect.not_found",
  },
  {
    category: "invalid operator request",
    name: "lookup of an effect no adapter is bound for",
    send: (c) => call("POST", `/api/operator/effects/${c.effectId}/reconcile`, { reason: "r" }, op.authorization),
    status: 409,
    code: "effect.not_reconcilable",
  },
  // ---- input at the boundary (docs/DESIGN.md §10) ----
  bad("nesting depth", "tool-call arguments nested 5,000 levels", (c) => enqueueRaw(c, deepObject(5000))),
  bad("nesting depth", "tool-call arguments nested 401 levels (one past the limit)", (c) => enqueueRaw(c, `{"x":${deepObject(400)}}`)),
  bad("nesting depth", "tool-call arguments holding arrays nested 100,000 levels", (c) => enqueueRaw(c, `{"x":${deepArray(100_000)}}`)),
  bad("nesting depth", "a Driver's receipt nested 5,000 levels", (c) => completeRaw(c, RESULT_JSON, deepObject(5000))),
  bad("nesting depth", "a Driver's failed update with error.details nested 5,000 levels", (c) =>
    failRaw(c, `{"code":"mcp.tool_call_failed","message":"x","retryable":true,"details":${deepObject(5000)}}`),
  ),
  bad("nesting depth", "an operator's structuredContent nested 5,000 levels", (c) =>
    resolveRaw(c, `{"outcome":"succeeded","reason":"r","result":{"content":[],"structuredContent":${deepObject(5000)}}}`),
  ),
  bad("nesting depth", "a claim body that is an array nested 200,000 levels", (c) =>
    raw("POST", "/v1/drivers/effects/claim", deepArray(200_000), json, c.a.token),
  ),
  bad("lone surrogate", "toolName with a lone high surrogate", (c) => enqueue(c, { toolName: "x\ud800" })),
  bad("lone surrogate", "requestId with a lone low surrogate", (c) => enqueue(c, { requestId: "r\udc00" })),
  bad("lone surrogate", "an argument value with a lone surrogate", (c) => enqueue(c, { arguments: { title: "a\ud83d" } })),
  bad("lone surrogate", "an argument key with a lone surrogate", (c) => enqueue(c, { arguments: { ["k\udfff"]: 1 } })),
  bad("lone surrogate", "a Driver's outputText with a lone surrogate", (c) =>
    call(
      "POST",
      `/v1/drivers/effects/${c.effectId}/complete`,
      { connectionId: c.a.connectionId, attempt: 1, result: { ...result, outputText: "ok\ud800" }, receipt: null },
      c.a.token,
    ),
  ),
  bad("lone surrogate", "a Driver's receipt with a lone surrogate", (c) =>
    call(
      "POST",
      `/v1/drivers/effects/${c.effectId}/complete`,
      { connectionId: c.a.connectionId, attempt: 1, result, receipt: { id: "\udc01" } },
      c.a.token,
    ),
  ),
  bad("lone surrogate", "a mark-unknown reason with a lone surrogate", (c) =>
    call(
      "POST",
      `/v1/drivers/effects/${c.effectId}/mark-unknown`,
      { connectionId: c.a.connectionId, attempt: 1, reason: "lost\ud800" },
      c.a.token,
    ),
  ),
  bad("lone surrogate", "a failed update's error message with a lone surrogate", (c) => failWith(c, { message: "boom\udbff" })),
  bad("lone surrogate", "an operator's reason with a lone surrogate", (c) => resolveAs(c, { reason: "checked\ud800" })),
  bad("lone surrogate", "a Driver name with a lone surrogate", () => call("POST", "/v1/drivers/register", { name: "driver\ud800" })),
  bad("control or bidi character in an identifier", "toolName with NUL", (c) => enqueue(c, { toolName: "create\u0000Issue" })),
  bad("control or bidi character in an identifier", "toolName with RIGHT-TO-LEFT OVERRIDE", (c) =>
    enqueue(c, { toolName: "create\u202eeussI" }),
  ),
  bad("control or bidi character in an identifier", "toolName with LEFT-TO-RIGHT ISOLATE", (c) =>
    enqueue(c, { toolName: "\u2066createIssue" }),
  ),
  bad("control or bidi character in an identifier", "toolCallId with a newline", (c) => enqueue(c, { toolCallId: "call\n1" })),
  bad("control or bidi character in an identifier", "requestId with RIGHT-TO-LEFT MARK", (c) => enqueue(c, { requestId: "r\u200f" })),
  bad("control or bidi character in an identifier", "a Driver name with an ESC control character", () =>
    call("POST", "/v1/drivers/register", { name: "driver\u001b[31m" }),
  ),
  bad("control or bidi character in an identifier", "a listing filter toolName with RIGHT-TO-LEFT OVERRIDE", () =>
    listEffects("toolName=create%E2%80%AEIssue"),
  ),
  bad("control or bidi character in an identifier", "a Driver's result requestId with a C1 control", (c) =>
    call(
      "POST",
      `/v1/drivers/effects/${c.effectId}/complete`,
      { connectionId: c.a.connectionId, attempt: 1, result: { ...result, requestId: "r\u0085" }, receipt: null },
      c.a.token,
    ),
  ),
  bad("forbidden key", "a top-level __proto__ key in arguments (refused, not dropped)", (c) =>
    enqueueRaw(c, '{"title":"t","__proto__":{"admin":true}}'),
  ),
  bad("forbidden key", "a nested constructor key in arguments", (c) => enqueueRaw(c, '{"title":"t","meta":{"constructor":{"x":1}}}')),
  bad("forbidden key", "a prototype key inside an array in arguments", (c) => enqueueRaw(c, '{"items":[{"prototype":1}]}')),
  bad("forbidden key", "a __proto__ key at the top of a create-run body", (c) =>
    raw("POST", "/v1/runs", `{"driverInstanceId":"${c.b.id}","__proto__":{"x":1}}`, json),
  ),
  bad("forbidden key", "a __proto__ key in a Driver's receipt", (c) => completeRaw(c, RESULT_JSON, '{"__proto__":{"polluted":true}}')),
  bad("forbidden key", "a constructor key in a failed update's error.details", (c) =>
    failRaw(c, '{"code":"mcp.tool_call_failed","message":"x","retryable":true,"details":{"constructor":1}}'),
  ),
  bad("forbidden key", "a prototype key in an operator's structuredContent", (c) =>
    resolveRaw(c, '{"outcome":"succeeded","reason":"r","result":{"content":[],"structuredContent":{"prototype":{}}}}'),
  ),
  bad("bounded error.details", "a failed update's error.details of 5 KiB", (c) => failWith(c, { details: { pad: "x".repeat(5 * 1024) } })),
  bad("bounded error.details", "a failed update's error.details of 3.5 MiB", (c) =>
    failWith(c, { details: { pad: "x".repeat(3.5 * 1024 * 1024) } }),
  ),
  bad("bounded error.details", "a failed update's error.details of 200 small keys (4 KiB + 1 byte and more)", (c) =>
    failWith(c, { details: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, "0123456789abcdef"])) }),
  ),
  bad(
    "content type",
    "a tool call sent as text/plain",
    (c) => raw("POST", enqueuePath(c), '{"serverId":"tracker","toolName":"createIssue","arguments":{}}', { "content-type": "text/plain" }),
    415,
    "request.unsupported_media_type",
  ),
  bad(
    "content type",
    "a run created with a JSON body but no Content-Type",
    (c) => raw("POST", "/v1/runs", `{"driverInstanceId":"${c.b.id}"}`, {}),
    415,
    "request.unsupported_media_type",
  ),
  bad(
    "content type",
    "a claim sent as a form",
    (c) =>
      raw(
        "POST",
        "/v1/drivers/effects/claim",
        `connectionId=${c.a.connectionId}&commandId=${c.commandId}`,
        { "content-type": "application/x-www-form-urlencoded" },
        c.a.token,
      ),
    415,
    "request.unsupported_media_type",
  ),
  bad(
    "content type",
    "an operator resolve sent as text/plain",
    (c) =>
      raw(
        "POST",
        `/api/operator/effects/${c.effectId}/resolve`,
        '{"outcome":"not_executed","reason":"r"}',
        { "content-type": "text/plain;charset=utf-8" },
        OPERATOR_TOKEN,
      ),
    415,
    "request.unsupported_media_type",
  ),
  bad(
    "content type",
    "a Driver registration sent as application/jsonx",
    () => raw("POST", "/v1/drivers/register", '{"name":"x"}', { "content-type": "application/jsonx" }),
    415,
    "request.unsupported_media_type",
  ),
  bad(
    "content type",
    "a connect (a route without a body) with a text/plain body",
    (c) => raw("POST", "/v1/drivers/connect", "{}", { "content-type": "text/plain" }, c.b.token),
    415,
    "request.unsupported_media_type",
  ),
  bad(
    "content type",
    "a finalize with a multipart body",
    (c) => raw("POST", "/v1/drivers/finalize", "--x\r\n\r\n--x--", { "content-type": "multipart/form-data; boundary=x" }, c.b.token),
    415,
    "request.unsupported_media_type",
  ),
  bad(
    "content type",
    "a run delete with a text/plain body",
    (c) => raw("DELETE", `/v1/runs/${c.runId}`, "please", { "content-type": "text/plain" }),
    415,
    "request.unsupported_media_type",
  ),
  bad("strict integer", "long-poll waitMs=0x10", (c) => poll(c, "0x10")),
  bad("strict integer", "long-poll waitMs=1e2", (c) => poll(c, "1e2")),
  bad("strict integer", "long-poll waitMs=+5", (c) => poll(c, "%2B5")),
  bad("strict integer", "long-poll waitMs=' 5'", (c) => poll(c, "%205")),
  bad("strict integer", "long-poll waitMs=5.0", (c) => poll(c, "5.0")),
  bad("strict integer", "events afterSeq=0x10", (c) => events(c, "0x10")),
  bad("strict integer", "events afterSeq=1e2", (c) => events(c, "1e2")),
  bad("strict integer", "events afterSeq=05", (c) => events(c, "05")),
  bad("strict integer", "operator listing limit=0x10", () => listEffects("limit=0x10")),
  bad("strict integer", "operator listing limit=1e2", () => listEffects("limit=1e2")),
  bad("strict integer", "operator listing minAgeMs=-1", () => listEffects("minAgeMs=-1")),
  bad(
    "oversized",
    "a tool call body over 4 MiB",
    (c) => enqueue(c, { arguments: { pad: "x".repeat(4 * 1024 * 1024 + 1) } }),
    413,
    "request.too_large",
  ),
  // ---- refused, never silently changed ----
  // (1) raw bytes that are not UTF-8: refused by the fatal decoder, never stored as U+FFFD
  bad("invalid UTF-8 body", "run API: a tool call whose title is the raw bytes FF FE", (c) =>
    rawBytes("POST", enqueuePath(c), '{"serverId":"tracker","toolName":"createIssue","arguments":{"title":"<ff><fe>"}}'),
  ),
  bad("invalid UTF-8 body", "run API: a tool call with an overlong encoding of '/' (C0 AF) in toolName", (c) =>
    rawBytes("POST", enqueuePath(c), '{"serverId":"tracker","toolName":"create<c0><af>Issue","arguments":{}}'),
  ),
  bad("invalid UTF-8 body", "run API: a create-run body with a truncated 3-byte sequence (E2 82)", (c) =>
    rawBytes("POST", "/v1/runs", `{"driverInstanceId":"${c.b.id}","x":"<e2><82>"}`),
  ),
  bad("invalid UTF-8 body", "Driver protocol: a mark-unknown reason with a stray continuation byte (80)", (c) =>
    rawBytes(
      "POST",
      `/v1/drivers/effects/${c.effectId}/mark-unknown`,
      `{"connectionId":"${c.a.connectionId}","attempt":1,"reason":"lost<80>"}`,
      c.a.token,
    ),
  ),
  bad("invalid UTF-8 body", "Driver protocol: a result outputText holding an encoded surrogate (ED A0 80)", (c) =>
    rawBytes(
      "POST",
      `/v1/drivers/effects/${c.effectId}/complete`,
      `{"connectionId":"${c.a.connectionId}","attempt":1,"result":{"outputText":"ok<ed><a0><80>","requestId":"r","serverId":"tracker","toolName":"createIssue"},"receipt":null}`,
      c.a.token,
    ),
  ),
  bad("invalid UTF-8 body", "Driver protocol: a registration whose name is the raw byte FF", () =>
    rawBytes("POST", "/v1/drivers/register", '{"name":"driver-<ff>"}'),
  ),
  bad("invalid UTF-8 body", "operator: a resolve reason with the raw bytes FE FF", (c) =>
    rawBytes(
      "POST",
      `/api/operator/effects/${c.effectId}/resolve`,
      '{"outcome":"not_executed","reason":"checked <fe><ff>"}',
      OPERATOR_TOKEN,
    ),
  ),
  bad("invalid UTF-8 body", "operator: a reconcile reason with a 4-byte lead (F5) past U+10FFFF", (c) =>
    rawBytes("POST", `/api/operator/effects/${c.effectId}/reconcile`, '{"reason":"a<f5><80><80><80>"}', OPERATOR_TOKEN),
  ),
  // (2) a field the contract does not define: refused, naming it, never ignored
  bad("unknown field", "run API: a tool call with an extra top-level field", (c) => enqueue(c, { extra: 1 })),
  bad("unknown field", "run API: a create-run body with an extra field", (c) =>
    call("POST", "/v1/runs", { driverInstanceId: c.b.id, extra: true }),
  ),
  bad("unknown field", "Driver protocol: a registration with an extra field", () =>
    call("POST", "/v1/drivers/register", { name: "driver-c", extra: "x" }),
  ),
  bad("unknown field", "Driver protocol: a heartbeat with an extra field", (c) =>
    call("POST", "/v1/drivers/heartbeat", { connectionId: c.a.connectionId, extra: 1 }, c.a.token),
  ),
  bad("unknown field", "Driver protocol: a claim with an extra field", (c) =>
    call("POST", "/v1/drivers/effects/claim", { connectionId: c.a.connectionId, commandId: c.commandId, extra: 1 }, c.a.token),
  ),
  bad("unknown field", "Driver protocol: an accepted command update with an extra field", (c) =>
    call("POST", `/v1/drivers/commands/${c.commandId}/update`, { connectionId: c.a.connectionId, status: "accepted", extra: 1 }, c.a.token),
  ),
  bad("unknown field", "Driver protocol: a failed update whose error has an extra field", (c) => failWith(c, { extra: 1 })),
  bad("unknown field", "Driver protocol: a complete with an extra top-level field", (c) => completeWith(c, { extra: 1 })),
  bad("unknown field", "Driver protocol: a complete whose result has an extra field", (c) =>
    completeWith(c, { result: { ...result, extra: 1 } }),
  ),
  bad("unknown field", "Driver protocol: a mark-unknown with an extra field", (c) =>
    call(
      "POST",
      `/v1/drivers/effects/${c.effectId}/mark-unknown`,
      { connectionId: c.a.connectionId, attempt: 1, reason: "lost", extra: 1 },
      c.a.token,
    ),
  ),
  bad("unknown field", "Driver protocol: a deadline-missed with an extra field", (c) =>
    call(
      "POST",
      `/v1/drivers/effects/${c.effectId}/deadline-missed`,
      { connectionId: c.a.connectionId, attempt: 1, elapsedMs: 5, extra: 1 },
      c.a.token,
    ),
  ),
  bad("unknown field", "Driver protocol: a late-result with an extra field", (c) => lateResult(c, { extra: 1 })),
  bad("unknown field", "operator: a resolve with an extra field", (c) => resolveAs(c, { extra: 1 })),
  bad("unknown field", "operator: a reconcile with an extra field", (c) =>
    call("POST", `/api/operator/effects/${c.effectId}/reconcile`, { reason: "r", extra: 1 }, OPERATOR_TOKEN),
  ),
  bad("unknown field", "operator: a compensate with an extra field", (c) =>
    call("POST", `/api/operator/effects/${c.effectId}/compensate`, { reason: "r", extra: 1 }, OPERATOR_TOKEN),
  ),
  // (3) invisible format characters (Unicode Cf) in identifiers, as control and bidi characters are
  bad("format character in an identifier", "run API: toolName with ZERO WIDTH SPACE (U+200B)", (c) =>
    enqueue(c, { toolName: "create\u200bIssue" }),
  ),
  bad("format character in an identifier", "run API: toolName with SOFT HYPHEN (U+00AD)", (c) =>
    enqueue(c, { toolName: "create\u00adIssue" }),
  ),
  bad("format character in an identifier", "run API: requestId with WORD JOINER (U+2060)", (c) => enqueue(c, { requestId: "r\u2060" })),
  bad("format character in an identifier", "run API: toolCallId with ZERO WIDTH NO-BREAK SPACE (U+FEFF)", (c) =>
    enqueue(c, { toolCallId: "\ufeffcall-1" }),
  ),
  bad("format character in an identifier", "run API: toolName with a TAG character (U+E0041)", (c) =>
    enqueue(c, { toolName: "createIssue\u{E0041}" }),
  ),
  bad("format character in an identifier", "Driver protocol: a registration name with ZERO WIDTH JOINER (U+200D)", () =>
    call("POST", "/v1/drivers/register", { name: "driver\u200d-c" }),
  ),
  bad("format character in an identifier", "Driver protocol: a result toolName with ZERO WIDTH SPACE", (c) =>
    completeWith(c, { result: { ...result, toolName: "create\u200bIssue" } }),
  ),
  bad("format character in an identifier", "Driver protocol: a late-result toolName with WORD JOINER", (c) =>
    lateResult(c, { toolName: "create\u2060Issue" }),
  ),
  bad("format character in an identifier", "operator: a listing filter toolName with ZERO WIDTH SPACE", () =>
    listEffects("toolName=create%E2%80%8BIssue"),
  ),
];

describe("bad input catalogue: a typed error, nothing changed", () => {
  it.each(CATALOGUE.map((row) => [`${row.category}: ${row.name}`, row] as const))("%s", async (_name, row) => {
    const before = dump();
    const res = await row.send(ctx);
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: row.status, code: row.code });
    expect(typeof res.body.error.message).toBe("string");
    if (row.message) expect(res.body.error.message).toMatch(row.message);
    expect(JSON.stringify(res.body)).not.toMatch(/\n\s+at /); // never a stack trace
    expect(dump()).toBe(before);
    // DESIGN §7: a refusal by the operator service (a well-formed request) is audited, and only that row is added
    const refusals = f.store.sqlite.prepare("SELECT action, actor, outcome FROM effect_operator_refusals").all();
    const audited = row.category === "invalid operator request" && OPERATOR_REFUSAL_CODES.includes(row.code as never);
    expect(refusals).toEqual(audited ? [expect.objectContaining({ outcome: row.code })] : []);
  });
});

describe("the strict rules refuse only what is wrong", () => {
  it("stores valid multi-byte UTF-8 exactly, keeps format characters in free text, and ignores a leading byte order mark", async () => {
    // "créer 作成 👩‍💻" as raw bytes (the emoji joins with U+200D: a format character is fine in an argument value)
    const title = "cr\u00e9er \u4f5c\u6210 \u{1F469}\u200d\u{1F4BB}";
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from(JSON.stringify({ serverId: "tracker", toolName: "作成", arguments: { title } }), "utf8"),
    ]);
    const res = await raw("POST", enqueuePath(ctx), body, json);
    expect(res.status).toBe(201);
    const row = f.store.sqlite
      .prepare("SELECT tool_name AS toolName, arguments_json AS argumentsJson FROM external_tool_effects WHERE id = ?")
      .get(res.body.effectId) as { toolName: string; argumentsJson: string };
    expect(row.toolName).toBe("作成");
    expect(JSON.parse(row.argumentsJson)).toEqual({ title });
    expect(row.argumentsJson).not.toContain("\ufffd");
  });
});

/** Invalid API configuration: one `config.invalid` line naming the variable; startup stops (nothing is opened). */
const BAD_CONFIG: Array<[string, Record<string, string>, string]> = [
  ["port out of range", { MOSOO_PORT: "70000" }, "MOSOO_PORT"],
  ["heartbeat TTL not a number", { MOSOO_HEARTBEAT_TTL_MS: "soon" }, "MOSOO_HEARTBEAT_TTL_MS"],
  ["reconciliation flag neither on nor off", { MOSOO_EFFECT_RECONCILIATION: "maybe" }, "MOSOO_EFFECT_RECONCILIATION"],
  [
    "backoff max below initial",
    { MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "5000", MOSOO_LOOKUP_BACKOFF_MAX_MS: "1000" },
    "MOSOO_LOOKUP_BACKOFF_MAX_MS",
  ],
  ["operator token too short", { MOSOO_OPERATOR_TOKEN: "short" }, "MOSOO_OPERATOR_TOKEN"],
  ["lookup timeout above its bound", { MOSOO_LOOKUP_TIMEOUT_MS: "999999" }, "MOSOO_LOOKUP_TIMEOUT_MS"],
  // strict integers (Number() would accept every one of these; MOSOO_PORT=0x50 listened on port 80)
  ["port in hexadecimal", { MOSOO_PORT: "0x50" }, "MOSOO_PORT"],
  ["port in exponent notation", { MOSOO_PORT: "1e2" }, "MOSOO_PORT"],
  ["port with a plus sign", { MOSOO_PORT: "+80" }, "MOSOO_PORT"],
  ["port with a leading space", { MOSOO_PORT: " 80" }, "MOSOO_PORT"],
  ["sweep interval with a fraction", { MOSOO_SWEEP_INTERVAL_MS: "2000.5" }, "MOSOO_SWEEP_INTERVAL_MS"],
  ["backoff factor in hexadecimal", { MOSOO_LOOKUP_BACKOFF_FACTOR: "0x2" }, "MOSOO_LOOKUP_BACKOFF_FACTOR"],
  ["max lookups in binary", { MOSOO_MAX_LOOKUPS: "0b11" }, "MOSOO_MAX_LOOKUPS"],
  // the PostgreSQL store's variables (the URL itself is never echoed: store-factory.test.ts)
  ["database URL of another database kind", { MOSOO_DATABASE_URL: "mysql://u:p@h/db" }, "MOSOO_DATABASE_URL"],
  ["pool size zero", { MOSOO_DATABASE_URL: "postgres://h/db", MOSOO_DATABASE_POOL_SIZE: "0" }, "MOSOO_DATABASE_POOL_SIZE"],
  ["pool size without a database URL", { MOSOO_DATABASE_POOL_SIZE: "5" }, "MOSOO_DATABASE_POOL_SIZE"],
];

describe("strict integers in the environment: plain decimal values still load", () => {
  it("reads MOSOO_PORT=80, MOSOO_LOOKUP_BACKOFF_FACTOR=1.5", () => {
    const config = loadApiConfig({ MOSOO_PORT: "80", MOSOO_LOOKUP_BACKOFF_FACTOR: "1.5" });
    expect(config.port).toBe(80);
    expect(config.reconciliation.backoff.factor).toBe(1.5);
  });
});

describe("unknown MOSOO_* names are reported, known ones of every program are not", () => {
  it("names a misspelt variable and no variable of the API, the CLI, the Driver or the scripts", () => {
    expect(
      unknownMosooEnvNames({
        MOSOO_PORTT: "1",
        MOSOO_PORT: "1",
        MOSOO_API_URL: "x",
        MOSOO_BENCH_QUICK: "1",
        MOSOO_OPERATOR_TOKEN: "t",
        HOME: "/root",
        MOSOO_DB_FIEL: "x",
      }),
    ).toEqual(["MOSOO_DB_FIEL", "MOSOO_PORTT"]);
    // derived from the config schema: every key of it is known
    expect(unknownMosooEnvNames(Object.fromEntries(Object.keys(ApiConfigSchema.shape).map((k) => [k, "1"])))).toEqual([]);
  });
});

describe("bad input catalogue: invalid config", () => {
  it.each(BAD_CONFIG)("%s → config.invalid naming the variable", (_name, env, variable) => {
    let thrown: unknown;
    try {
      loadApiConfig(env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toMatch(new RegExp(`^config\\.invalid: ${variable}: `));
  });
});
