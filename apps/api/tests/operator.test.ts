import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createHttpApp } from "../src/adapters/http/app.js";
import { loadApiConfig } from "../src/config/api-config.js";
import { startApi } from "../src/server.js";
import { connectDriver, createRuntimeFixture, enqueueCreateIssue, reconnectDriver, type RuntimeFixture } from "./helpers/runtime-fixture.js";
import { commitAtProvider, createReconciliationFixture, dispatchWrite, type ReconciliationFixture } from "./helpers/reconciliation-fixture.js";
import { effectRow, reconciliationRecords } from "./helpers/reconciliation-db.js";

const TOKEN = "operator-token-0123456789";
const API_DIR = join(import.meta.dirname, "..");
const run = promisify(execFile);
let f: RuntimeFixture | undefined;
let rx: ReconciliationFixture | undefined;
afterEach(() => {
  f?.close();
  rx?.close();
  f = rx = undefined;
});

/** A runtime with one effect fenced `unknown` (claimed, then the Driver restarted and claimed again). */
async function unknownEffect(fx: RuntimeFixture) {
  const driver = connectDriver(fx.runtime);
  const call = enqueueCreateIssue(fx.runtime, driver);
  const env = await fx.runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
  fx.runtime.commands.updateCommand(driver.instance, env!.commandId, { connectionId: driver.connectionId, status: "accepted" });
  await fx.runtime.ledger.claim(driver.instance, driver.connectionId, call.commandId);
  const restarted = reconnectDriver(fx.runtime, driver);
  await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  expect((await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId)).kind).toBe("unknown");
  return { ...call, restarted };
}

function http(fx: { runtime: RuntimeFixture["runtime"] }, token = TOKEN) {
  const app = createHttpApp(fx.runtime, pino({ level: "silent" }), { operatorToken: TOKEN });
  return async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
}

describe("operator surface (DESIGN §7)", () => {
  it("is off without a token, and refuses missing or wrong tokens", async () => {
    f = createRuntimeFixture();
    const off = createHttpApp(f.runtime, pino({ level: "silent" }));
    const res = await off.request("/v1/operator/effects", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe("auth.operator_disabled");
    expect((await http(f, "")("GET", "/v1/operator/effects")).body.error.code).toBe("auth.missing_token");
    expect((await http(f, "wrong-token-0123456789")("GET", "/v1/operator/effects")).status).toBe(401);
  });

  it("lists and shows an unknown effect, resolves it not_executed with an audit row, and lifts the fence", async () => {
    f = createRuntimeFixture();
    const call = await unknownEffect(f);
    const op = http(f);
    const list = await op("GET", "/v1/operator/effects?status=unknown");
    expect(list.body.effects.map((e: { id: string }) => e.id)).toEqual([call.effectId]);
    const shown = await op("GET", `/v1/operator/effects/${call.effectId}`);
    expect(shown.body).toMatchObject({ status: "unknown", attempts: [{ attempt: 1, status: "unknown" }], operatorActions: [] });

    const bad = await op("POST", `/v1/operator/effects/${call.effectId}/resolve`, { outcome: "not_executed", actor: "", reason: "x" });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
    expect(effectRow(f.store, call.effectId).status).toBe("unknown");

    const nul = await op("POST", `/v1/operator/effects/${call.effectId}/resolve`, { outcome: "not_executed", actor: "\u0000", reason: "r" });
    expect(nul).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
    expect(effectRow(f.store, call.effectId).status).toBe("unknown");
    const done = await op("POST", `/v1/operator/effects/${call.effectId}/resolve`, { outcome: "not_executed", actor: "alice", reason: "no issue in the tracker" });
    expect(done).toMatchObject({ status: 200, body: { status: "not_executed", resolution: "operator" } });
    const again = await op("POST", `/v1/operator/effects/${call.effectId}/resolve`, { outcome: "not_executed", actor: "alice", reason: "twice" });
    expect(again).toMatchObject({ status: 409, body: { error: { code: "effect.not_unknown" } } });
    const history = (await op("GET", `/v1/operator/effects/${call.effectId}`)).body;
    expect(history.operatorActions).toEqual([expect.objectContaining({ action: "resolve", actor: "alice", reason: "no issue in the tracker", outcome: "not_executed" })]);
    expect(f.runtime.runs.getRunView(call.runId).events.map((e) => e.type)).toContain("effect.resolved");
    // the command (still accepted on the restarted Driver) gets the settled answer at its next claim
    expect(await f.runtime.ledger.claim(call.restarted.instance, call.restarted.connectionId, call.commandId)).toEqual({ kind: "not_executed", effectId: call.effectId });
    f.runtime.runs.deleteRun(call.runId); // no fence any more
  });

  it("resolves succeeded with the output the operator verified; the redelivered claim returns it", async () => {
    f = createRuntimeFixture();
    const call = await unknownEffect(f);
    const res = await http(f)("POST", `/v1/operator/effects/${call.effectId}/resolve`, { outcome: "succeeded", outputText: "Created issue #7", actor: "bob", reason: "found #7" });
    expect(res.status).toBe(200);
    expect(await f.runtime.ledger.claim(call.restarted.instance, call.restarted.connectionId, call.commandId)).toEqual({
      kind: "completed",
      effectId: call.effectId,
      result: { outputText: "Created issue #7", requestId: "req-1", serverId: "tracker", toolName: "createIssue" },
    });
  });

  it("refuses a lookup without an adapter (flag off), and runs one through the bound adapter with the flag on", async () => {
    f = createRuntimeFixture();
    const call = await unknownEffect(f);
    expect(await http(f)("POST", `/v1/operator/effects/${call.effectId}/lookup`, { actor: "alice", reason: "check" })).toMatchObject({
      status: 409,
      body: { error: { code: "effect.not_reconcilable" } },
    });
    rx = createReconciliationFixture();
    const c2 = await dispatchWrite(rx);
    await commitAtProvider(rx, c2);
    rx.runtime.ledger.markUnknown(c2.driver.instance, c2.effectId, { connectionId: c2.driver.connectionId, attempt: 1, reason: "transport closed" });
    const res = await http(rx)("POST", `/v1/operator/effects/${c2.effectId}/lookup`, { actor: "alice", reason: "customer asked" });
    expect(res.body).toMatchObject({ outcome: "confirmed_succeeded", effect: { status: "succeeded", resolution: "reconciled" } });
    expect(reconciliationRecords(rx.store, c2.effectId).map((r) => r.trigger)).toEqual(["operator"]);
    expect(rx.runtime.operator.show(c2.effectId).operatorActions).toEqual([expect.objectContaining({ action: "lookup", actor: "alice", outcome: "confirmed_succeeded" })]);
  });

  it("a manual resolution racing a reconciler: one outcome, the reconciler records superseded", async () => {
    rx = createReconciliationFixture();
    const fx = rx;
    const call = await dispatchWrite(fx);
    await commitAtProvider(fx, call);
    fx.runtime.ledger.markUnknown(call.driver.instance, call.effectId, { connectionId: call.driver.connectionId, attempt: 1, reason: "transport closed" });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const inner = fx.adapter.lookup.bind(fx.adapter);
    fx.adapter.lookup = async (req, ctx) => {
      await gate;
      return inner(req, ctx);
    };
    const sweeping = fx.runtime.reconciler.reconcile(call.effectId, "sweep");
    fx.runtime.operator.resolve(call.effectId, { outcome: "not_executed", actor: "alice", reason: "override" });
    open();
    expect((await sweeping).kind).toBe("superseded");
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "operator", lease_owner: null });
    expect(reconciliationRecords(fx.store, call.effectId).map((r) => [r.outcome, r.reason_code])).toEqual([["superseded", "cas_lost"]]);
  });
});

describe("mosoo-operator CLI", () => {
  const cli = (args: string[], env: Record<string, string> = {}) =>
    run(join(API_DIR, "..", "..", "node_modules", ".bin", "tsx"), ["src/operator.main.ts", ...args], { cwd: API_DIR, env: { ...process.env, ...env } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  it("exits 2 with one line on bad input", async () => {
    const r = await cli(["resolve", "01JDZZZZZZZZZZZZZZZZZZZZZZ", "--outcome", "maybe", "--actor", "a", "--reason", "b"], { MOSOO_OPERATOR_TOKEN: TOKEN });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^mosoo-operator: .*maybe/);
  }, 30_000);

  it("lists unknown effects of a running API, and reports an API error code in one line", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mosoo-op-"));
    const api = await startApi(loadApiConfig({ MOSOO_DB_FILE: join(dir, "api.db"), MOSOO_PORT: "0", MOSOO_OPERATOR_TOKEN: TOKEN }), pino({ level: "silent" }), { sweep: false });
    try {
      const ok = await cli(["--api-url", api.url, "list"], { MOSOO_OPERATOR_TOKEN: TOKEN });
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout)).toEqual({ effects: [] });
      const missing = await cli(["--api-url", api.url, "show", "01JDZZZZZZZZZZZZZZZZZZZZZZ"], { MOSOO_OPERATOR_TOKEN: TOKEN });
      expect(missing.code).toBe(1);
      expect(missing.stderr.trim()).toMatch(/^mosoo-operator: effect\.not_found: /);
    } finally {
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
