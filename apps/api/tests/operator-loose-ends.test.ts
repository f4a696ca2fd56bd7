/**
 * Operator loose ends (docs/DESIGN.md §7):
 * - a lookup that contradicts how an effect was settled raises operator attention
 *   `contradicted_by_provider` (status untouched), visible in list and show, over HTTP and the CLI;
 * - every refused operator action (compensate included) is audited in `effect_operator_refusals`,
 *   and nothing else changes;
 * - a `succeeded` effect whose result is an MCP error result is marked (`toolError`, `succeeded (tool error)`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CommanderError } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { buildEffectsCli } from "../src/entry/cli/effects-cli.js";
import { CliFailure } from "../src/entry/cli/effects-cli.exit-codes.js";
import type { Runtime } from "../src/composition-root.js";
import {
  buildHttpApp,
  commitAtProvider,
  createDoubleWorld,
  dispatchWrite,
  type DoubleWorld,
  type DoubleWorldOptions,
  gateLookups,
  reconnectDriver,
  until,
  operatorCredentials,
  operatorNamed,
} from "./kit/index.js";
import { effectRow, ledgerSnapshot } from "./helpers/reconciliation-db.js";

const TOKEN = "operator-token-0123456789";
const E = "/api/operator/effects";
const MISSING = "01JDZZZZZZZZZZZZZZZZZZZZZZ";
const ok = { reason: "checked the tracker" };
let f: DoubleWorld | undefined;
let dir: string | undefined;
afterEach(() => {
  f?.close();
  f = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function setup(opts: DoubleWorldOptions = {}): DoubleWorld {
  f = createDoubleWorld(opts);
  return f;
}

function http(runtime: Runtime) {
  const app = buildHttpApp(runtime, { operators: operatorCredentials([{ name: "alice", token: TOKEN }]) });
  return async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
}

/** Runs the CLI in-process against a store file; resolves with its exit code and output. */
async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const program = buildEffectsCli(
    (t) => (out += t),
    // the in-process client checks --token against this environment's operator credentials (alice)
    { MOSOO_EFFECT_RECONCILIATION: "on", MOSOO_OPERATOR_TOKEN: TOKEN, MOSOO_OPERATOR_TOKEN_NAME: "alice" } as NodeJS.ProcessEnv,
    () => Date.UTC(2026, 10, 29, 13),
  );
  program.configureOutput({
    writeOut: (t) => (out += t),
    writeErr: (t) => (err += t),
    outputError: (t, w) => w(`mosoo-effects: ${t.trim()}\n`),
  });
  try {
    await program.parseAsync(["node", "mosoo-effects", ...args]);
    return { code: 0, out, err };
  } catch (e) {
    if (e instanceof CommanderError) return { code: e.exitCode === 0 ? 0 : 2, out, err };
    if (e instanceof CliFailure) return { code: e.exitCode, out, err: `mosoo-effects: ${e.message}\n` };
    throw e;
  }
}

/** A write whose response was lost (`unknown`); `committed` says whether the provider double has it. */
async function unknownWrite(fx: DoubleWorld, committed: boolean) {
  const call = await dispatchWrite(fx);
  if (committed) await commitAtProvider(fx, call);
  await fx.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
    connectionId: call.driver.connectionId,
    attempt: 1,
    reason: "transport closed",
  });
  return call;
}

/** The effect's `request_id` (the Driver's result must name it). */
const requestIdOf = (fx: DoubleWorld, effectId: string) =>
  (fx.store.sqlite.prepare("SELECT request_id FROM external_tool_effects WHERE id = ?").get(effectId) as { request_id: string }).request_id;

const refusals = (fx: DoubleWorld) =>
  fx.store.sqlite
    .prepare(
      "SELECT effect_id, action, actor, reason, outcome, message, effect_status, created_at_ms FROM effect_operator_refusals ORDER BY id",
    )
    .all() as Array<Record<string, unknown>>;

describe("contradicted_by_provider: a lookup contradicts how the effect was settled", () => {
  it("operator said not_executed, the provider has the write: attention raised, status kept, visible in list and show", async () => {
    const fx = setup();
    const call = await unknownWrite(fx, true);
    const open = gateLookups(fx);
    const sweeping = fx.runtime.reconciler.reconcile(call.effectId, "sweep");
    await until(() => effectRow(fx.store, call.effectId).lease_owner !== null); // its lease is taken: the lookup waits at the gate
    fx.clock.advance(fx.settings.leaseMs + 1); // the lookup outlives its lease: only then may an operator resolve
    await fx.runtime.operator.resolve(call.effectId, { outcome: "not_executed", reason: "nothing in the tracker" }, operatorNamed("alice"));
    const versionAfterResolve = effectRow(fx.store, call.effectId).version;
    open();
    expect((await sweeping).kind).toBe("superseded");
    expect(effectRow(fx.store, call.effectId)).toMatchObject({
      status: "not_executed",
      resolution: "operator",
      operator_attention: "contradicted_by_provider",
      version: versionAfterResolve + 1,
    });

    const op = http(fx.runtime);
    const listed = await op("GET", `${E}?attention=contradicted_by_provider`);
    expect(listed.body.effects).toEqual([
      expect.objectContaining({ id: call.effectId, status: "not_executed", operatorAttention: "contradicted_by_provider" }),
    ]);
    expect((await op("GET", E)).body.effects).toEqual([]); // the default list is still the unknown ones
    expect((await op("GET", `${E}?status=not_executed`)).body.effects[0]).toMatchObject({ operatorAttention: "contradicted_by_provider" });
    expect((await op("GET", `${E}/${call.effectId}`)).body).toMatchObject({
      operatorAttention: "contradicted_by_provider",
      reconciliations: [expect.objectContaining({ outcome: "superseded", error: "the lost lookup answered confirmed_succeeded" })],
    });
    expect(await op("GET", `${E}?attention=bored`)).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
  });

  it("operator said succeeded, the provider proves non-execution: the same attention", async () => {
    const fx = setup();
    const call = await unknownWrite(fx, false);
    const open = gateLookups(fx);
    const sweeping = fx.runtime.reconciler.reconcile(call.effectId, "sweep");
    await until(() => effectRow(fx.store, call.effectId).lease_owner !== null); // its lease is taken: the lookup waits at the gate
    fx.clock.advance(fx.settings.leaseMs + 1); // the lookup outlives its lease: only then may an operator resolve
    await fx.runtime.operator.resolve(
      call.effectId,
      {
        outcome: "succeeded",
        result: { content: [{ type: "text", text: "Created issue #1" }] },
        reason: "I think it went through",
      },
      operatorNamed("bob"),
    );
    open();
    expect((await sweeping).kind).toBe("superseded");
    expect(effectRow(fx.store, call.effectId)).toMatchObject({
      status: "succeeded",
      resolution: "operator",
      operator_attention: "contradicted_by_provider",
    });
  });

  it("an agreeing lookup that lost the race raises nothing", async () => {
    const fx = setup();
    const call = await unknownWrite(fx, true);
    const open = gateLookups(fx);
    const sweeping = fx.runtime.reconciler.reconcile(call.effectId, "sweep");
    await until(() => effectRow(fx.store, call.effectId).lease_owner !== null); // its lease is taken: the lookup waits at the gate
    fx.clock.advance(fx.settings.leaseMs + 1); // the lookup outlives its lease: only then may an operator resolve
    await fx.runtime.operator.resolve(
      call.effectId,
      {
        outcome: "succeeded",
        result: { content: [{ type: "text", text: "Created issue #1" }] },
        ...ok,
      },
      operatorNamed("alice"),
    );
    open();
    expect((await sweeping).kind).toBe("superseded");
    expect(effectRow(fx.store, call.effectId).operator_attention).toBeNull();
  });

  it("the store refuses contradicted_by_provider on an effect that is not settled (CHECK)", async () => {
    const fx = setup();
    const call = await unknownWrite(fx, false);
    expect(() =>
      fx.store.sqlite
        .prepare("UPDATE external_tool_effects SET operator_attention = 'contradicted_by_provider' WHERE id = ?")
        .run(call.effectId),
    ).toThrow(/CHECK constraint failed/);
  });
});

describe("refused operator actions are audited and change nothing else", () => {
  it("resolve, reconcile and compensate refusals each leave one audit row (actor, action, effect, refusal code, reason, time)", async () => {
    const fx = setup({ bind: false });
    const running = await dispatchWrite(fx); // executing: not unknown, not succeeded
    const before = ledgerSnapshot(fx.store);
    const op = http(fx.runtime);
    const cases: Array<[string, string, unknown, number, string]> = [
      ["resolve", `${E}/${running.effectId}/resolve`, { outcome: "not_executed", ...ok }, 409, "effect.not_unknown"],
      ["lookup", `${E}/${running.effectId}/reconcile`, ok, 409, "effect.not_reconcilable"],
      ["compensate", `${E}/${running.effectId}/compensate`, ok, 409, "effect.not_succeeded"],
      ["resolve", `${E}/${MISSING}/resolve`, { outcome: "not_executed", ...ok }, 404, "effect.not_found"],
    ];
    for (const [, path, body, status, code] of cases)
      expect(await op("POST", path, body)).toMatchObject({ status, body: { error: { code } } });
    expect(ledgerSnapshot(fx.store)).toEqual(before);
    const rows = refusals(fx);
    expect(rows.map((r) => [r["action"], r["effect_id"], r["outcome"], r["effect_status"]])).toEqual([
      ["resolve", running.effectId, "effect.not_unknown", "executing"],
      ["lookup", running.effectId, "effect.not_reconcilable", "executing"],
      ["compensate", running.effectId, "effect.not_succeeded", "executing"],
      ["resolve", MISSING, "effect.not_found", null],
    ]);
    for (const r of rows)
      expect(r).toMatchObject({
        actor: "alice",
        reason: "checked the tracker",
        created_at_ms: fx.clock.now(),
        message: expect.any(String),
      });
    expect((await op("GET", `${E}/${running.effectId}`)).body.refusedActions).toEqual([
      expect.objectContaining({ action: "resolve", actor: "alice", outcome: "effect.not_unknown", effectStatus: "executing" }),
      expect.objectContaining({ action: "lookup", outcome: "effect.not_reconcilable" }),
      expect.objectContaining({ action: "compensate", outcome: "effect.not_succeeded" }),
    ]);
  });

  it("a compensation no adapter declares is refused and audited (compensation.not_declared)", async () => {
    const fx = setup({ bind: false });
    const call = await dispatchWrite(fx);
    await fx.runtime.ledger.complete(call.driver.instance, call.effectId, {
      connectionId: call.driver.connectionId,
      attempt: 1,
      result: { outputText: "Created issue #1", requestId: requestIdOf(fx, call.effectId), serverId: "tracker", toolName: "createIssue" },
      receipt: null,
    });
    const before = ledgerSnapshot(fx.store);
    await expect(
      fx.runtime.operator.compensate(call.effectId, { reason: "customer asked for an undo" }, operatorNamed("carol")),
    ).rejects.toMatchObject({ code: "compensation.not_declared" });
    expect(ledgerSnapshot(fx.store)).toEqual(before);
    expect(refusals(fx)).toEqual([
      expect.objectContaining({
        action: "compensate",
        actor: "carol",
        outcome: "compensation.not_declared",
        effect_status: "succeeded",
        reason: "customer asked for an undo",
      }),
    ]);
  });

  it("a malformed request is refused before the service (no reason to audit): no refusal row", async () => {
    const fx = setup({ bind: false });
    const running = await dispatchWrite(fx);
    expect(await http(fx.runtime)("POST", `${E}/${running.effectId}/resolve`, { outcome: "not_executed" })).toMatchObject({ status: 400 });
    expect(refusals(fx)).toEqual([]);
  });
});

describe("a succeeded effect whose provider result is an error is marked as such", () => {
  it("HTTP list and show carry toolError: true (false for a plain success)", async () => {
    const fx = setup({ bind: false });
    const failing = await dispatchWrite(fx);
    const requestId = (id: string) => requestIdOf(fx, id);
    await fx.runtime.ledger.complete(failing.driver.instance, failing.effectId, {
      connectionId: failing.driver.connectionId,
      attempt: 1,
      result: {
        outputText: "issue_tracker_readonly: try later",
        isError: true,
        requestId: requestId(failing.effectId),
        serverId: "tracker",
        toolName: "createIssue",
      },
      receipt: null,
    });
    const op = http(fx.runtime);
    const listed = await op("GET", `${E}?status=succeeded`);
    expect(listed.body.effects).toEqual([expect.objectContaining({ id: failing.effectId, status: "succeeded", toolError: true })]);
    expect((await op("GET", `${E}/${failing.effectId}`)).body).toMatchObject({
      status: "succeeded",
      toolError: true,
      result: { isError: true },
    });
  });

  it("the CLI table says `succeeded (tool error)` and --json has toolError: true; a plain success is not marked", async () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-tool-error-"));
    const dbFile = join(dir, "api.db");
    const fx = setup({ bind: false, dbFile });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const call = await dispatchWrite(fx);
      const restarted = await reconnectDriver(fx.runtime, call.driver);
      await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
      await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId);
      ids.push(call.effectId);
    }
    fx.close();
    f = undefined;
    const [failed, plain] = ids as [string, string];
    expect(
      (
        await cli([
          "--db",
          dbFile,
          "resolve",
          failed,
          "--outcome",
          "succeeded",
          "--output-text",
          "issue_tracker_readonly",
          "--is-error",
          "--token",
          TOKEN,
          "--reason",
          "the tracker refused it",
        ])
      ).code,
    ).toBe(0);
    expect(
      (
        await cli([
          "--db",
          dbFile,
          "resolve",
          plain,
          "--outcome",
          "succeeded",
          "--output-text",
          "Created issue #2",
          "--token",
          TOKEN,
          "--reason",
          "found it",
        ])
      ).code,
    ).toBe(0);
    const table = await cli(["--db", dbFile, "list", "--status", "succeeded"]);
    expect(table.out).toMatch(new RegExp(`${failed} │ succeeded \\(tool error\\) │`));
    expect(table.out).toMatch(new RegExp(`${plain} │ succeeded\\s+│`));
    const json = JSON.parse((await cli(["--db", dbFile, "--json", "list", "--status", "succeeded"])).out) as {
      effects: Array<{ id: string; toolError: boolean }>;
    };
    expect(Object.fromEntries(json.effects.map((e) => [e.id, e.toolError]))).toEqual({ [failed]: true, [plain]: false });
    expect((await cli(["--db", dbFile, "show", failed])).out).toMatch(/status\s+│ succeeded \(tool error\)/);
    expect(JSON.parse((await cli(["--db", dbFile, "--json", "show", failed])).out)).toMatchObject({ toolError: true });
  });
});
