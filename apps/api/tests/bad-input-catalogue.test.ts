/**
 * Bad input catalogue (issue 5 item 6; DESIGN.md §9): malformed Driver protocol messages, a Driver
 * touching another Driver's command or effect, oversized results and receipts, invalid operator
 * requests, invalid config. Each row is refused with its typed error (HTTP status + stable code)
 * and the store is byte-for-byte the same afterwards (every table dumped before and after).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import pino from "pino";
import { createHttpApp } from "../src/adapters/http/app.js";
import { ConfigError, loadApiConfig } from "../src/config/api-config.js";
import { createRuntimeFixture, type RuntimeFixture } from "./helpers/runtime-fixture.js";
import { requestJson } from "./helpers/http-call.js";
import { RECONCILIATION_OFF } from "../src/modules/reconciliation/application/reconciliation-settings.js";
import { OPERATOR_REFUSAL_CODES } from "../src/modules/reconciliation/domain/reconciliation.types.js";

const OPERATOR_TOKEN = "operator-token-0123456789";
let f: RuntimeFixture;
let app: ReturnType<typeof createHttpApp>;

interface Ctx {
  a: { token: string; id: string; connectionId: string };
  b: { token: string; id: string; connectionId: string };
  runId: string;
  commandId: string;
  effectId: string;
}
let ctx: Ctx;

function call(method: string, path: string, body?: unknown, token?: string) {
  return requestJson(app, method, path, body, token);
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
  const tables = f.store.sqlite
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%' AND name <> 'effect_operator_refusals' ORDER BY name")
    .all() as Array<{ name: string }>;
  return JSON.stringify(tables.map(({ name }) => [name, f.store.sqlite.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all()]));
}

beforeEach(async () => {
  // the operator surface exists only with reconciliation on; no server is bound, so effects keep the baseline fence
  f = createRuntimeFixture({ reconciliation: { ...RECONCILIATION_OFF, enabled: true } });
  app = createHttpApp(f.runtime, pino({ level: "silent" }), { operatorToken: OPERATOR_TOKEN });
  const a = await driver("driver-a");
  const b = await driver("driver-b");
  const run = await call("POST", "/v1/runs", { driverInstanceId: a.id });
  const tc = await call("POST", `/v1/runs/${run.body.runId}/tool-calls`, { serverId: "tracker", toolName: "createIssue", arguments: { title: "a", body: "b" }, requestId: "r" });
  await call("GET", `/v1/drivers/commands/next?connectionId=${a.connectionId}&waitMs=0`, undefined, a.token);
  const claim = await call("POST", "/v1/drivers/effects/claim", { connectionId: a.connectionId, commandId: tc.body.commandId }, a.token);
  expect(claim.body.kind).toBe("execute");
  ctx = { a, b, runId: run.body.runId, commandId: tc.body.commandId, effectId: tc.body.effectId };
});
afterEach(() => f.close());

const result = { outputText: "ok", requestId: "r", serverId: "tracker", toolName: "createIssue" };
const op = { authorization: OPERATOR_TOKEN };

/** One bad request: what it is, how it is sent, and the typed refusal it must get. */
interface BadInput {
  category: "malformed protocol" | "another Driver's command/effect" | "oversized" | "invalid operator request";
  name: string;
  send: (c: Ctx) => ReturnType<typeof call>;
  status: number;
  code: string;
}

const CATALOGUE: BadInput[] = [
  { category: "malformed protocol", name: "claim body is not JSON", send: (c) => call("POST", "/v1/drivers/effects/claim", "{not json", c.a.token), status: 400, code: "request.invalid" },
  { category: "malformed protocol", name: "claim without connectionId", send: (c) => call("POST", "/v1/drivers/effects/claim", { commandId: c.commandId }, c.a.token), status: 400, code: "request.invalid" },
  { category: "malformed protocol", name: "complete with attempt 0", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/complete`, { connectionId: c.a.connectionId, attempt: 0, result, receipt: null }, c.a.token), status: 400, code: "request.invalid" },
  { category: "malformed protocol", name: "complete with a result missing outputText", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/complete`, { connectionId: c.a.connectionId, attempt: 1, result: { requestId: "r", serverId: "tracker", toolName: "createIssue" }, receipt: null }, c.a.token), status: 400, code: "request.invalid" },
  { category: "malformed protocol", name: "complete with a result naming another tool", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/complete`, { connectionId: c.a.connectionId, attempt: 1, result: { ...result, toolName: "deleteIssue" }, receipt: null }, c.a.token), status: 400, code: "request.invalid" },
  { category: "malformed protocol", name: "command update with an unknown status", send: (c) => call("POST", `/v1/drivers/commands/${c.commandId}/update`, { connectionId: c.a.connectionId, status: "exploded" }, c.a.token), status: 400, code: "request.invalid" },
  { category: "malformed protocol", name: "command update completed without a result", send: (c) => call("POST", `/v1/drivers/commands/${c.commandId}/update`, { connectionId: c.a.connectionId, status: "completed" }, c.a.token), status: 400, code: "request.invalid" },
  { category: "malformed protocol", name: "mark-unknown with extra fields of the wrong type", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/mark-unknown`, { connectionId: c.a.connectionId, attempt: "one", reason: 5 }, c.a.token), status: 400, code: "request.invalid" },
  { category: "malformed protocol", name: "malformed bearer token", send: (c) => call("POST", "/v1/drivers/effects/claim", { connectionId: c.a.connectionId, commandId: c.commandId }, "not-a-token"), status: 401, code: "auth.invalid_token" },
  { category: "malformed protocol", name: "no bearer token", send: (c) => call("POST", "/v1/drivers/effects/claim", { connectionId: c.a.connectionId, commandId: c.commandId }), status: 401, code: "auth.missing_token" },
  { category: "malformed protocol", name: "claim on a superseded connection", send: (c) => call("POST", "/v1/drivers/effects/claim", { connectionId: c.b.connectionId, commandId: c.commandId }, c.a.token), status: 409, code: "driver.connection_superseded" },
  { category: "another Driver's command/effect", name: "B claims A's command", send: (c) => call("POST", "/v1/drivers/effects/claim", { connectionId: c.b.connectionId, commandId: c.commandId }, c.b.token), status: 404, code: "command.not_found" },
  { category: "another Driver's command/effect", name: "B completes A's effect", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/complete`, { connectionId: c.b.connectionId, attempt: 1, result, receipt: null }, c.b.token), status: 404, code: "effect.not_found" },
  { category: "another Driver's command/effect", name: "B marks A's effect unknown", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/mark-unknown`, { connectionId: c.b.connectionId, attempt: 1, reason: "mine now" }, c.b.token), status: 404, code: "effect.not_found" },
  { category: "another Driver's command/effect", name: "B fails A's command", send: (c) => call("POST", `/v1/drivers/commands/${c.commandId}/update`, { connectionId: c.b.connectionId, status: "failed", error: { code: "mcp.tool_call_failed", message: "x", retryable: true, details: {} } }, c.b.token), status: 404, code: "command.not_found" },
  { category: "oversized", name: "result outputText over 1 MiB", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/complete`, { connectionId: c.a.connectionId, attempt: 1, result: { ...result, outputText: "x".repeat(1024 * 1024 + 1) }, receipt: null }, c.a.token), status: 400, code: "request.invalid" },
  { category: "oversized", name: "receipt over 16 KiB", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/complete`, { connectionId: c.a.connectionId, attempt: 1, result, receipt: { pad: "x".repeat(17 * 1024) } }, c.a.token), status: 400, code: "request.invalid" },
  { category: "oversized", name: "request body over 4 MiB", send: (c) => call("POST", `/v1/drivers/effects/${c.effectId}/complete`, { connectionId: c.a.connectionId, attempt: 1, result: { ...result, outputText: "x".repeat(5 * 1024 * 1024) }, receipt: null }, c.a.token), status: 413, code: "request.too_large" },
  { category: "invalid operator request", name: "resolve without the operator token", send: (c) => call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "not_executed", actor: "a", reason: "r" }), status: 401, code: "auth.missing_token" },
  { category: "invalid operator request", name: "resolve with a wrong operator token", send: (c) => call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "not_executed", actor: "a", reason: "r" }, "wrong-token-0123456789"), status: 401, code: "auth.invalid_token" },
  { category: "invalid operator request", name: "resolve with a blank actor", send: (c) => call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "not_executed", actor: "  ", reason: "r" }, op.authorization), status: 400, code: "request.invalid" },
  { category: "invalid operator request", name: "resolve with an unknown outcome", send: (c) => call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "undo", actor: "a", reason: "r" }, op.authorization), status: 400, code: "request.invalid" },
  { category: "invalid operator request", name: "resolve an executing (not unknown) effect", send: (c) => call("POST", `/api/operator/effects/${c.effectId}/resolve`, { outcome: "not_executed", actor: "a", reason: "r" }, op.authorization), status: 409, code: "effect.not_unknown" },
  { category: "invalid operator request", name: "lookup of an effect that does not exist", send: () => call("POST", "/api/operator/effects/01JDZZZZZZZZZZZZZZZZZZZZZZ/reconcile", { actor: "a", reason: "r" }, op.authorization), status: 404, code: "effect.not_found" },
  { category: "invalid operator request", name: "lookup of an effect no adapter is bound for", send: (c) => call("POST", `/api/operator/effects/${c.effectId}/reconcile`, { actor: "a", reason: "r" }, op.authorization), status: 409, code: "effect.not_reconcilable" },
];

describe("bad input catalogue: a typed error, nothing changed", () => {
  it.each(CATALOGUE.map((row) => [`${row.category}: ${row.name}`, row] as const))("%s", async (_name, row) => {
    const before = dump();
    const res = await row.send(ctx);
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: row.status, code: row.code });
    expect(typeof res.body.error.message).toBe("string");
    expect(JSON.stringify(res.body)).not.toMatch(/\n\s+at /); // never a stack trace
    expect(dump()).toBe(before);
    // DESIGN §7: a refusal by the operator service (a well-formed request) is audited, and only that row is added
    const refusals = f.store.sqlite.prepare("SELECT action, actor, outcome FROM effect_operator_refusals").all();
    const audited = row.category === "invalid operator request" && OPERATOR_REFUSAL_CODES.includes(row.code as never);
    expect(refusals).toEqual(audited ? [expect.objectContaining({ actor: "a", outcome: row.code })] : []);
  });
});

/** Invalid API configuration: one `config.invalid` line naming the variable; startup stops (nothing is opened). */
const BAD_CONFIG: Array<[string, Record<string, string>, string]> = [
  ["port out of range", { MOSOO_PORT: "70000" }, "MOSOO_PORT"],
  ["heartbeat TTL not a number", { MOSOO_HEARTBEAT_TTL_MS: "soon" }, "MOSOO_HEARTBEAT_TTL_MS"],
  ["reconciliation flag neither on nor off", { MOSOO_EFFECT_RECONCILIATION: "maybe" }, "MOSOO_EFFECT_RECONCILIATION"],
  ["backoff max below initial", { MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "5000", MOSOO_LOOKUP_BACKOFF_MAX_MS: "1000" }, "MOSOO_LOOKUP_BACKOFF_MAX_MS"],
  ["operator token too short", { MOSOO_OPERATOR_TOKEN: "short" }, "MOSOO_OPERATOR_TOKEN"],
  ["lookup timeout above its bound", { MOSOO_LOOKUP_TIMEOUT_MS: "999999" }, "MOSOO_LOOKUP_TIMEOUT_MS"],
];

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
