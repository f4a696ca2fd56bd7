import { afterEach, describe, expect, it } from "vitest";
import type { Runtime } from "../src/composition-root.js";
import { renderReconcile, renderShow, terminalSafeJson } from "../src/entry/cli/effects-render.js";
import {
  operatorCredentials,
  buildHttpApp,
  commitAtProvider,
  connectDriver,
  createDoubleWorld,
  dispatchWrite,
  type DoubleWorld,
  gateLookups,
  reconnectDriver,
  until,
  operatorNamed,
} from "./kit/index.js";
import { effectRow, ledgerSnapshot, reconciliationRecords } from "./helpers/reconciliation-db.js";

const TOKEN = "operator-token-0123456789";
const MISSING = "01JDZZZZZZZZZZZZZZZZZZZZZZ";
let f: DoubleWorld | undefined;
afterEach(() => {
  f?.close();
  f = undefined;
});

/** One effect fenced `unknown`: claimed, then its Driver reconnected and the redelivered claim fenced it. */
async function unknownEffect(fx: DoubleWorld, opts: { serverId?: string; toolName?: string } = {}) {
  const call = await dispatchWrite(fx, opts);
  const restarted = await reconnectDriver(fx.runtime, call.driver);
  await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  expect((await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId)).kind).toBe("unknown");
  return { ...call, restarted };
}

/**
 * A write the provider double committed whose response was lost (`unknown`), bound to an adapter
 * whose lookups wait until `open()` is called: a reconciler started now holds the lease meanwhile.
 */
async function committedUnknownWithGatedLookup() {
  f = createDoubleWorld();
  const fx = f;
  const call = await dispatchWrite(fx);
  await commitAtProvider(fx, call);
  await fx.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
    connectionId: call.driver.connectionId,
    attempt: 1,
    reason: "transport closed",
  });
  return { fx, call, open: gateLookups(fx) };
}

/** The operator credentials of these tests: `alice` (TOKEN) and `bob` (BOB_TOKEN), every scope. */
const BOB_TOKEN = "operator-token-bob-0123456789";
const CREDENTIALS = operatorCredentials([
  { name: "alice", token: TOKEN },
  { name: "bob", token: BOB_TOKEN },
]);

function http(runtime: Runtime, opts: { token?: string; configured?: string | undefined } = {}) {
  const app = buildHttpApp(runtime, "configured" in opts ? { operatorToken: opts.configured } : { operators: CREDENTIALS });
  const token = opts.token ?? TOKEN;
  return async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
}

const E = "/api/operator/effects";
const ok = { reason: "checked the tracker" };

describe("operator routes: gating", () => {
  it("with MOSOO_EFFECT_RECONCILIATION off every route answers 404 feature.disabled to the operator, 401 without a token", async () => {
    f = createDoubleWorld({ enabled: false });
    const call = await unknownEffect(f);
    const before = ledgerSnapshot(f.store);
    for (const [method, path, body] of [
      ["GET", E],
      ["GET", `${E}/${call.effectId}`],
      ["POST", `${E}/${call.effectId}/reconcile`, ok],
      ["POST", `${E}/${call.effectId}/resolve`, { outcome: "not_executed", ...ok }],
      ["POST", `${E}/${call.effectId}/compensate`, ok],
    ] as const) {
      expect(await http(f.runtime)(method, path, body)).toMatchObject({ status: 404, body: { error: { code: "feature.disabled" } } });
      expect(await http(f.runtime, { token: "" })(method, path, body)).toMatchObject({
        status: 401,
        body: { error: { code: "auth.missing_token" } },
      });
    }
    expect(ledgerSnapshot(f.store)).toEqual(before);
  });

  it("without a configured token answers 403; a missing token 401 auth.missing_token; a wrong one 401 auth.invalid_token", async () => {
    f = createDoubleWorld({ bind: false });
    expect(await http(f.runtime, { configured: undefined })("GET", E)).toMatchObject({
      status: 403,
      body: { error: { code: "auth.operator_disabled" } },
    });
    expect(await http(f.runtime, { token: "" })("GET", E)).toMatchObject({ status: 401, body: { error: { code: "auth.missing_token" } } });
    expect(await http(f.runtime, { token: "wrong-token-0123456789" })("GET", E)).toMatchObject({
      status: 401,
      body: { error: { code: "auth.invalid_token" } },
    });
    expect(await http(f.runtime, { token: TOKEN.toUpperCase() })("GET", E)).toMatchObject({ status: 401 });
  });
});

describe("operator routes: list and show", () => {
  it("lists by status, server, tool, run and age, newest first, with a keyset cursor", async () => {
    f = createDoubleWorld({ bind: false });
    const fx = f;
    const a = await unknownEffect(fx);
    fx.clock.advance(60_000);
    const b = await unknownEffect(fx, { serverId: "other", toolName: "sendMail" });
    fx.clock.advance(1_000);
    const c = await unknownEffect(fx);
    const op = http(fx.runtime);
    const ids = (r: { body: { effects: Array<{ id: string }> } }) => r.body.effects.map((e) => e.id);
    expect(ids(await op("GET", E))).toEqual([c.effectId, b.effectId, a.effectId]);
    expect(ids(await op("GET", `${E}?serverId=tracker`))).toEqual([c.effectId, a.effectId]);
    expect(ids(await op("GET", `${E}?toolName=sendMail`))).toEqual([b.effectId]);
    expect(ids(await op("GET", `${E}?runId=${a.runId}`))).toEqual([a.effectId]);
    expect(ids(await op("GET", `${E}?minAgeMs=30000`))).toEqual([a.effectId]);
    expect(ids(await op("GET", `${E}?status=succeeded`))).toEqual([]);
    const page1 = await op("GET", `${E}?limit=2`);
    expect(ids(page1)).toEqual([c.effectId, b.effectId]);
    expect(page1.body.nextCursor).toBe(b.effectId);
    const page2 = await op("GET", `${E}?limit=2&cursor=${page1.body.nextCursor}`);
    expect(ids(page2)).toEqual([a.effectId]);
    expect(page2.body.nextCursor).toBeNull();
    for (const bad of ["status=lost", "limit=0", "limit=501", "minAgeMs=-1", "cursor=nope", "runId=x", "colour=red"]) {
      expect(await op("GET", `${E}?${bad}`)).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
    }
  });

  it("shows one effect's whole history; an unknown id is 404 effect.not_found, a malformed one 400", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const op = http(f.runtime);
    const shown = await op("GET", `${E}/${call.effectId}`);
    expect(shown.body).toMatchObject({
      id: call.effectId,
      status: "unknown",
      idempotencyKey: call.idempotencyKey,
      command: { id: call.commandId, status: "accepted" },
      attempts: [{ attempt: 1, status: "unknown", unknownReason: "redelivered_while_executing" }],
      reconciliations: [],
      operatorActions: [],
      compensations: [],
      compensatesEffectId: null,
    });
    expect(await op("GET", `${E}/${MISSING}`)).toMatchObject({ status: 404, body: { error: { code: "effect.not_found" } } });
    expect(await op("GET", `${E}/not-an-id`)).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
  });
});

describe("operator routes: resolve by hand", () => {
  it("resolves succeeded with a validated MCP tool result and the operator's receipt; the redelivered claim returns it", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const body = {
      outcome: "succeeded",
      result: {
        content: [{ type: "text", text: "Created issue #7" }],
        structuredContent: { number: 7 },
        _meta: { "io.mosoo/provider-operation-id": "ISS-7" },
      },
      receipt: { providerOperationId: "ISS-7", observedAt: "2026-11-29T12:00:00.000Z", detail: { url: "https://tracker.example/7" } },
      reason: "found #7 in the tracker",
    };
    // the actor is the name of the credential that sent it (bob), no field of the body
    const res = await http(f.runtime, { token: BOB_TOKEN })("POST", `${E}/${call.effectId}/resolve`, body);
    expect(res).toMatchObject({ status: 200, body: { status: "succeeded", resolution: "operator" } });
    expect(await f.runtime.ledger.claim(call.restarted.instance, call.restarted.connectionId, call.commandId)).toMatchObject({
      kind: "completed",
      result: { outputText: "Created issue #7", serverId: "tracker", toolName: "createIssue" },
    });
    const shown = await f.runtime.operator.show(call.effectId);
    expect(shown.providerReceipt).toEqual({ "io.mosoo/provider-operation-id": "ISS-7" });
    expect(shown.operatorActions).toEqual([
      expect.objectContaining({
        action: "resolve",
        actor: "bob",
        outcome: "succeeded",
        statusBefore: "unknown",
        statusAfter: "succeeded",
        receipt: body.receipt,
      }),
    ]);
    expect((await f.runtime.runs.getRunView(call.runId)).events.map((e) => e.type)).toContain("effect.resolved");
  });

  it("resolves not_executed, lifts the fence, and refuses a second resolution (409 effect.not_unknown) changing nothing", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const op = http(f.runtime);
    expect(await op("POST", `${E}/${call.effectId}/resolve`, { outcome: "not_executed", ...ok })).toMatchObject({
      status: 200,
      body: { status: "not_executed", resolution: "operator" },
    });
    const before = ledgerSnapshot(f.store);
    expect(await op("POST", `${E}/${call.effectId}/resolve`, { outcome: "not_executed", ...ok })).toMatchObject({
      status: 409,
      body: { error: { code: "effect.not_unknown" } },
    });
    expect(ledgerSnapshot(f.store)).toEqual(before);
    expect(await f.runtime.ledger.claim(call.restarted.instance, call.restarted.connectionId, call.commandId)).toEqual({
      kind: "not_executed",
      effectId: call.effectId,
    });
    await f.runtime.runs.deleteRun(call.runId); // the fence is gone
  });

  it.each<[string, unknown, number, string]>([
    ["a missing reason", { outcome: "not_executed" }, 400, "request.invalid"],
    [
      "an actor in the body (the actor is the credential's name)",
      { outcome: "not_executed", actor: "trusted-admin", reason: "r" },
      400,
      "request.invalid",
    ],
    ["a NUL in the reason", { outcome: "not_executed", reason: "r\u0000" }, 400, "request.invalid"],
    ["an unknown outcome", { outcome: "maybe", ...ok }, 400, "request.invalid"],
    ["succeeded without a result", { outcome: "succeeded", ...ok }, 400, "request.invalid"],
    [
      "a result that is not an MCP tool result",
      { outcome: "succeeded", result: { content: "Created issue #7" }, ...ok },
      400,
      "request.invalid",
    ],
    [
      "a content block of an unknown type",
      { outcome: "succeeded", result: { content: [{ type: "hologram" }] }, ...ok },
      400,
      "request.invalid",
    ],
    [
      "an oversized result",
      { outcome: "succeeded", result: { content: [{ type: "text", text: "x".repeat(1024 * 1024 + 1) }] }, ...ok },
      400,
      "request.invalid",
    ],
    [
      "an oversized receipt",
      { outcome: "succeeded", result: { content: [] }, receipt: { detail: { blob: "x".repeat(5000) } }, ...ok },
      400,
      "request.invalid",
    ],
    [
      "a receipt with unknown keys",
      { outcome: "succeeded", result: { content: [] }, receipt: { trustMe: true }, ...ok },
      400,
      "request.invalid",
    ],
    ["not_executed with a result", { outcome: "not_executed", result: { content: [] }, ...ok }, 400, "request.invalid"],
    ["a body that is not JSON", "{oops", 400, "request.invalid"],
  ])("refuses %s with %i %s, changing nothing", async (_label, body, status, code) => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const before = ledgerSnapshot(f.store);
    expect(await http(f.runtime)("POST", `${E}/${call.effectId}/resolve`, body)).toMatchObject({ status, body: { error: { code } } });
    expect(ledgerSnapshot(f.store)).toEqual(before);
  });

  it("refuses an unknown effect id (404) and an effect that is not unknown (409), changing nothing", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await dispatchWrite(f); // executing, not unknown
    const before = ledgerSnapshot(f.store);
    const op = http(f.runtime);
    expect(await op("POST", `${E}/${MISSING}/resolve`, { outcome: "not_executed", ...ok })).toMatchObject({
      status: 404,
      body: { error: { code: "effect.not_found" } },
    });
    expect(await op("POST", `${E}/${call.effectId}/resolve`, { outcome: "not_executed", ...ok })).toMatchObject({
      status: 409,
      body: { error: { code: "effect.not_unknown" } },
    });
    expect(ledgerSnapshot(f.store)).toEqual(before);
  });
});

describe("operator routes: reconcile now", () => {
  it("runs a lookup through the bound adapter (trigger operator) and audits it with the outcome it committed", async () => {
    f = createDoubleWorld();
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call);
    await f.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "transport closed",
    });
    const res = await http(f.runtime)("POST", `${E}/${call.effectId}/reconcile`, { reason: "customer asked" });
    expect(res).toMatchObject({
      status: 200,
      body: { outcome: "confirmed_succeeded", effect: { status: "succeeded", resolution: "reconciled" } },
    });
    expect(reconciliationRecords(f.store, call.effectId).map((r) => r.trigger)).toEqual(["operator"]);
    expect((await f.runtime.operator.show(call.effectId)).operatorActions).toEqual([
      expect.objectContaining({
        action: "lookup",
        actor: "alice",
        outcome: "confirmed_succeeded",
        statusBefore: "unknown",
        statusAfter: "succeeded",
      }),
    ]);
  });

  it("says why a lookup left the effect unknown (reasonCode), and the CLI prints it", async () => {
    f = createDoubleWorld({ double: { faults: { adapterFault: "throws" } } });
    const call = await unknownEffect(f);
    const res = await http(f.runtime)("POST", `${E}/${call.effectId}/reconcile`, { reason: "provider back?" });
    expect(res).toMatchObject({
      status: 200,
      body: {
        outcome: "still_unknown",
        reasonCode: "adapter_error",
        error: "Error: provider double adapter: simulated crash",
        effect: { status: "unknown" },
      },
    });
    expect(renderReconcile(res.body as Record<string, unknown>)).toBe(
      `lookup still_unknown (adapter_error: Error: provider double adapter: simulated crash); effect ${call.effectId} is unknown`,
    );
    // `show` lists the lookup with its error
    const shown = renderShow((await f.runtime.operator.show(call.effectId)) as unknown as Record<string, unknown>);
    expect(shown).toMatch(/adapter_error .*Error: provider double adapter: simulated crash/);
    // the adapter's message is adapter-controlled text: a line break in it cannot forge a second CLI line
    expect(
      renderReconcile({ outcome: "still_unknown", reasonCode: "adapter_error", error: "a\nlookup confirmed_succeeded", effect: null }),
    ).not.toContain("\n");
    // nor reorder it (a bidirectional override), nor flood it (a hostile API's 100k-character error is cut)
    const hostile = { outcome: "still_unknown", reasonCode: "adapter_error", effect: null };
    expect(renderReconcile({ ...hostile, error: "ok \u202edeifirev" })).toContain("ok \\u202edeifirev");
    expect(renderReconcile({ ...hostile, error: "x".repeat(100_000) }).length).toBeLessThan(700);
    // an invisible tag character is shown as its two escapes; a cut never leaves half a surrogate pair
    expect(renderReconcile({ ...hostile, error: "a\u{E0041}b" })).toContain("a\\udb40\\udc41b");
    const emojiAtTheCut = renderReconcile({ ...hostile, error: `${"x".repeat(598)}\u{1F600}tail` });
    expect(emojiAtTheCut).toContain(`${"x".repeat(598)}…`);
    expect(emojiAtTheCut).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    // --json: the same characters escaped the JSON way, the same string once parsed
    const json = terminalSafeJson({ error: "\u009b2J\u202e" });
    expect(json).toBe('{\n  "error": "\\u009b2J\\u202e"\n}');
    expect(JSON.parse(json)).toEqual({ error: "\u009b2J\u202e" });
    // an answer without the fields (an older API) still renders
    expect(renderReconcile({ outcome: "still_unknown", effect: { id: call.effectId, status: "unknown" } })).toBe(
      `lookup still_unknown; effect ${call.effectId} is unknown`,
    );
  });

  it("refuses an effect without a bound adapter and one that is not unknown (409 effect.not_reconcilable), and a body actor (400)", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const running = await dispatchWrite(f, { driver: await connectDriver(f.runtime, "driver-b") });
    const before = ledgerSnapshot(f.store);
    const op = http(f.runtime);
    expect(await op("POST", `${E}/${call.effectId}/reconcile`, ok)).toMatchObject({
      status: 409,
      body: { error: { code: "effect.not_reconcilable" } },
    });
    expect(await op("POST", `${E}/${running.effectId}/reconcile`, ok)).toMatchObject({
      status: 409,
      body: { error: { code: "effect.not_reconcilable" } },
    });
    expect(await op("POST", `${E}/${call.effectId}/reconcile`, { actor: "trusted-admin", reason: "r" })).toMatchObject({
      status: 400,
      body: { error: { code: "request.invalid" } },
    });
    expect(await op("POST", `${E}/${MISSING}/reconcile`, ok)).toMatchObject({ status: 404, body: { error: { code: "effect.not_found" } } });
    expect(ledgerSnapshot(f.store)).toEqual(before);
  });

  it("respects the lease: a lookup already running wins, the operator's records superseded", async () => {
    const { fx, call, open } = await committedUnknownWithGatedLookup();
    const sweeping = fx.runtime.reconciler.reconcile(call.effectId, "sweep");
    await until(() => effectRow(fx.store, call.effectId).lease_owner !== null); // its lease is taken: the lookup waits at the gate
    const byOperator = await fx.runtime.operator.reconcile(call.effectId, ok, operatorNamed("alice"));
    expect(byOperator).toMatchObject({ outcome: "superseded", reasonCode: "lease_held" });
    // it changed nothing, so its audit row says unknown -> unknown whatever happens next
    expect((await fx.runtime.operator.show(call.effectId)).operatorActions).toEqual([
      expect.objectContaining({ action: "lookup", outcome: "superseded", statusBefore: "unknown", statusAfter: "unknown" }),
    ]);
    open();
    expect((await sweeping).kind).toBe("confirmed_succeeded");
    expect(reconciliationRecords(fx.store, call.effectId).map((r) => [r.trigger, r.outcome])).toEqual([
      ["operator", "superseded"],
      ["sweep", "confirmed_succeeded"],
    ]);
  });
});

describe("operator resolve racing a reconciler", () => {
  it("a resolve during a lookup is refused (409 effect.lookup_in_progress) while its lease is live, changing nothing", async () => {
    const { fx, call, open } = await committedUnknownWithGatedLookup();
    const sweeping = fx.runtime.reconciler.reconcile(call.effectId, "sweep");
    await until(() => effectRow(fx.store, call.effectId).lease_owner !== null); // its lease is taken: the lookup waits at the gate
    const before = ledgerSnapshot(fx.store);
    const res = await http(fx.runtime)("POST", `${E}/${call.effectId}/resolve`, { outcome: "not_executed", reason: "override" });
    expect(res).toMatchObject({
      status: 409,
      body: {
        error: { code: "effect.lookup_in_progress", details: { leaseExpiresAtMs: effectRow(fx.store, call.effectId).lease_expires_at_ms } },
      },
    });
    expect(ledgerSnapshot(fx.store)).toEqual(before);
    open();
    expect((await sweeping).kind).toBe("confirmed_succeeded");
  });

  it("the operator commits first (the lookup outlived its lease): exactly one outcome, the reconciler records superseded", async () => {
    const { fx, call, open } = await committedUnknownWithGatedLookup();
    const sweeping = fx.runtime.reconciler.reconcile(call.effectId, "sweep");
    await until(() => effectRow(fx.store, call.effectId).lease_owner !== null); // its lease is taken: the lookup waits at the gate
    fx.clock.advance(fx.settings.leaseMs + 1); // the lookup has outlived its lease: the operator may resolve
    await fx.runtime.operator.resolve(call.effectId, { outcome: "not_executed", reason: "override" }, operatorNamed("alice"));
    open();
    expect((await sweeping).kind).toBe("superseded");
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "not_executed", resolution: "operator", lease_owner: null });
    expect(reconciliationRecords(fx.store, call.effectId).map((r) => [r.outcome, r.reason_code, r.error])).toEqual([
      ["superseded", "cas_lost", "the lost lookup answered confirmed_succeeded"],
    ]);
    // the operator's own audit row says what it changed
    expect((await fx.runtime.operator.show(call.effectId)).operatorActions).toEqual([
      expect.objectContaining({ action: "resolve", statusBefore: "unknown", statusAfter: "not_executed" }),
    ]);
  });

  it("an operator's lookup that outlived its lease while another operator resolved answers superseded, cas_lost (not lease_held)", async () => {
    const { fx, call, open } = await committedUnknownWithGatedLookup();
    const looking = fx.runtime.operator.reconcile(call.effectId, ok, operatorNamed("alice"));
    await until(() => effectRow(fx.store, call.effectId).lease_owner !== null);
    fx.clock.advance(fx.settings.leaseMs + 1);
    await fx.runtime.operator.resolve(call.effectId, { outcome: "not_executed", reason: "override" }, operatorNamed("bob"));
    open();
    const answer = await looking;
    expect(answer).toMatchObject({ outcome: "superseded", reasonCode: "cas_lost", effect: { status: "not_executed" } });
    expect(reconciliationRecords(fx.store, call.effectId).map((r) => [r.outcome, r.reason_code])).toEqual([["superseded", "cas_lost"]]);
    expect(renderReconcile(answer as unknown as Record<string, unknown>)).toContain("lookup superseded (cas_lost)");
  });

  it("the reconciler commits first: the operator's resolution is refused (409) and changes nothing", async () => {
    f = createDoubleWorld();
    const fx = f;
    const call = await dispatchWrite(fx);
    await commitAtProvider(fx, call);
    await fx.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      reason: "transport closed",
    });
    expect((await fx.runtime.reconciler.reconcile(call.effectId, "sweep")).kind).toBe("confirmed_succeeded");
    const before = ledgerSnapshot(fx.store);
    const res = await http(fx.runtime)("POST", `${E}/${call.effectId}/resolve`, {
      outcome: "not_executed",
      reason: "late",
    });
    expect(res).toMatchObject({ status: 409, body: { error: { code: "effect.not_unknown" } } });
    expect(ledgerSnapshot(fx.store)).toEqual(before);
    expect(effectRow(fx.store, call.effectId)).toMatchObject({ status: "succeeded", resolution: "reconciled" });
  });
});
