import { execFileSync, execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadApiConfig } from "../src/config/api-config.js";
import { startApi } from "../src/server.js";
import { createDoubleWorld, dispatchWrite, type DoubleWorld, reconnectDriver, runEffectsCli } from "./kit/index.js";
import { effectRow, ledgerSnapshot } from "./helpers/reconciliation-db.js";

const TOKEN = "operator-token-0123456789";
const API_DIR = join(import.meta.dirname, "..");
/** Reconciliation on, and one operator credential `alice` (TOKEN) that in-process actions (`--db`) are checked against. */
const ON = { MOSOO_EFFECT_RECONCILIATION: "on", MOSOO_OPERATOR_TOKEN: TOKEN, MOSOO_OPERATOR_TOKEN_NAME: "alice" };
let dir: string | undefined;
let f: DoubleWorld | undefined;
afterEach(() => {
  f?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  f = undefined;
  dir = undefined;
});

/** A file-backed store with one `unknown` effect on an unbound server (the fixture is closed again so the CLI opens the file alone). */
async function storeWithUnknownEffect() {
  dir = mkdtempSync(join(tmpdir(), "mosoo-cli-"));
  const dbFile = join(dir, "api.db");
  f = createDoubleWorld({ bind: false, dbFile });
  const call = await dispatchWrite(f);
  const restarted = await reconnectDriver(f.runtime, call.driver);
  await f.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  await f.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId);
  return { dbFile, call };
}

/** Runs the CLI in-process; resolves with stdout, or the exit code and the line a failure prints. */
const cli = (args: string[], env: Record<string, string> = ON) => runEffectsCli(args, env);

describe("mosoo-effects CLI on a store file (--db)", () => {
  it("lists as a table, shows the history, resolves, and prints JSON with --json", async () => {
    const { dbFile, call } = await storeWithUnknownEffect();
    f!.close();
    f = undefined;
    const list = await cli(["--db", dbFile, "list"]);
    expect(list.code).toBe(0);
    expect(list.out).toContain(call.effectId);
    expect(list.out).toMatch(/│ unknown\s+│ tracker\s+│ createIssue/);
    const listed = JSON.parse((await cli(["--db", dbFile, "--json", "list", "--server", "tracker"])).out);
    expect(listed).toMatchObject({ effects: [{ id: call.effectId, status: "unknown" }], nextCursor: null });

    const show = await cli(["--db", dbFile, "show", call.effectId]);
    expect(show.code).toBe(0);
    for (const section of [
      "attempts:",
      "lookups:",
      "operator actions:",
      "compensations:",
      call.idempotencyKey,
      "redelivered_while_executing",
    ])
      expect(show.out).toContain(section);

    const resolved = await cli([
      "--db",
      dbFile,
      "resolve",
      call.effectId,
      "--outcome",
      "succeeded",
      "--output-text",
      "Created issue #3",
      "--provider-operation-id",
      "ISS-3",
      "--token",
      TOKEN,
      "--reason",
      "found it",
    ]);
    expect(resolved).toMatchObject({ code: 0, out: `effect ${call.effectId} is succeeded (resolution operator)\n` });
    const history = JSON.parse((await cli(["--db", dbFile, "--json", "show", call.effectId])).out);
    expect(history).toMatchObject({ status: "succeeded", resolution: "operator", result: { outputText: "Created issue #3" } });
    expect(history.operatorActions).toEqual([
      expect.objectContaining({ actor: "alice", action: "resolve", receipt: expect.objectContaining({ providerOperationId: "ISS-3" }) }),
    ]);
  });

  it("finds an effect by tool call id, and lists every status of a run by default", async () => {
    const { dbFile, call } = await storeWithUnknownEffect();
    const toolCallId = (await f!.runtime.operator.show(call.effectId)).toolCallId;
    // a second, settled-later effect of the same run would not be listed by the default `unknown` filter
    const queued = await f!.runtime.runs.enqueueToolCall(call.runId, { serverId: "mail", toolName: "send", arguments: { to: "x" } });
    f!.close();
    f = undefined;
    const byCall = JSON.parse((await cli(["--db", dbFile, "--json", "list", "--tool-call", toolCallId])).out);
    expect(byCall.effects.map((e: { id: string }) => e.id)).toEqual([call.effectId]);
    expect(byCall.effects[0]).toMatchObject({ toolCallId, status: "unknown" });
    const byRun = JSON.parse((await cli(["--db", dbFile, "--json", "list", "--run", call.runId])).out);
    expect(byRun.effects.map((e: { id: string; status: string }) => `${e.id}:${e.status}`)).toEqual([
      `${queued.effectId}:intent`,
      `${call.effectId}:unknown`,
    ]);
    const onlyUnknown = JSON.parse((await cli(["--db", dbFile, "--json", "list", "--run", call.runId, "--status", "unknown"])).out);
    expect(onlyUnknown.effects.map((e: { id: string }) => e.id)).toEqual([call.effectId]);
    const table = await cli(["--db", dbFile, "list", "--status", "any"]);
    expect(table.out).toContain(toolCallId);
  });

  it("says the feature is off (exit 1, one line) when MOSOO_EFFECT_RECONCILIATION is not on, changing nothing", async () => {
    const { dbFile, call } = await storeWithUnknownEffect();
    const before = ledgerSnapshot(f!.store);
    f!.close();
    f = undefined;
    const r = await cli(["--db", dbFile, "resolve", call.effectId, "--outcome", "not_executed", "--token", TOKEN, "--reason", "b"], {
      MOSOO_OPERATOR_TOKEN: TOKEN,
    });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^mosoo-effects: feature\.disabled: .*MOSOO_EFFECT_RECONCILIATION=on\n$/);
    f = createDoubleWorld({ bind: false, dbFile });
    expect(ledgerSnapshot(f.store)).toEqual(before);
  });

  it.each<[string, string[]]>([
    ["an unknown status", ["list", "--status", "lost"]],
    ["a bad duration", ["list", "--older-than", "soon"]],
    ["a page size of 0", ["list", "--limit", "0"]],
    [
      "--actor (gone: the actor is the credential's name)",
      ["resolve", "X", "--outcome", "not_executed", "--actor", "trusted-admin", "--reason", "r"],
    ],
    ["succeeded without output", ["resolve", "X", "--outcome", "succeeded", "--token", TOKEN, "--reason", "r"]],
    ["not_executed with output", ["resolve", "X", "--outcome", "not_executed", "--output-text", "t", "--token", TOKEN, "--reason", "r"]],
    ["a result that is not JSON", ["resolve", "X", "--outcome", "succeeded", "--result-json", "{", "--token", TOKEN, "--reason", "r"]],
    ["an unknown command", ["undo"]],
    ["a malformed effect id", ["show", "not-an-id"]],
    [
      "--is-error with --result-json",
      ["resolve", "X", "--outcome", "succeeded", "--result-json", '{"content":[]}', "--is-error", "--token", TOKEN, "--reason", "r"],
    ],
    ["an API URL that is not http(s)", ["--api-url", "notaurl", "list"]],
  ])("exits 2 on %s and changes nothing", async (_label, args) => {
    const { dbFile, call } = await storeWithUnknownEffect();
    const before = ledgerSnapshot(f!.store);
    const r = await cli(["--db", dbFile, ...args.map((a) => (a === "X" ? call.effectId : a))]);
    expect(r.code).toBe(2);
    expect(ledgerSnapshot(f!.store)).toEqual(before);
    expect(effectRow(f!.store, call.effectId).status).toBe("unknown");
    // one line with the documented code (a usage error by the parser, or the service's request.invalid)
    expect(r.err).toMatch(/^mosoo-effects: [a-z_]+\.[a-z_]+: [^\n]+\n$/);
  });

  it("exits 1 with the service's code for an unknown effect, and 2 for a --db that names no Mosoo store", async () => {
    const { dbFile } = await storeWithUnknownEffect();
    expect(await cli(["--db", dbFile, "show", "01JDZZZZZZZZZZZZZZZZZZZZZZ"])).toMatchObject({
      code: 1,
      err: expect.stringMatching(/^mosoo-effects: effect\.not_found: /),
    });
    const missing = await cli(["--db", join(dir!, "nope.db"), "list"]);
    expect(missing).toMatchObject({ code: 2, err: expect.stringMatching(/^mosoo-effects: store\.not_found: /) });
    // another SQLite file (e.g. the provider's) is refused and left as it was
    const other = join(dir!, "provider.db");
    const foreign = new Database(other);
    foreign.exec("CREATE TABLE issues (id TEXT)");
    foreign.close();
    expect(await cli(["--db", other, "list"])).toMatchObject({ code: 2, err: expect.stringMatching(/^mosoo-effects: store\.not_mosoo: /) });
    const after = new Database(other, { readonly: true });
    expect(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: "issues" }]);
    after.close();
  });
});

describe("mosoo-effects refuses bad input at the boundary", () => {
  it("refuses a loose --limit, an --actor, a lone surrogate in the reason, and a FIFO as --db; nothing changes", async () => {
    const { dbFile, call } = await storeWithUnknownEffect();
    f!.close();
    f = undefined;
    const sqlite = new Database(dbFile, { readonly: true });
    const snapshot = () => JSON.stringify(sqlite.prepare("SELECT * FROM external_tool_effects ORDER BY rowid").all());
    const before = snapshot();
    for (const limit of ["0x10", "1e2", "+5", " 5"]) expect((await cli(["--db", dbFile, "list", "--limit", limit])).code).toBe(2);
    const actor = await cli([
      "--db",
      dbFile,
      "resolve",
      call.effectId,
      "--outcome",
      "not_executed",
      "--actor",
      "alice\u202e",
      "--reason",
      "checked",
    ]);
    expect(actor).toMatchObject({
      code: 2,
      err: expect.stringMatching(/^mosoo-effects: .*--actor.* is gone: the actor is the name of the operator credential/),
    });
    const reason = await cli([
      "--db",
      dbFile,
      "resolve",
      call.effectId,
      "--outcome",
      "not_executed",
      "--token",
      TOKEN,
      "--reason",
      "checked\ud800",
    ]);
    expect(reason).toMatchObject({
      code: 2,
      err: expect.stringMatching(/^mosoo-effects: request\.invalid: reason: must be well-formed UTF-16/),
    });
    expect(snapshot()).toBe(before);
    sqlite.close();
    const fifo = join(dir!, "store.fifo");
    execFileSync("mkfifo", [fifo]);
    expect(await cli(["--db", fifo, "list"])).toMatchObject({
      code: 2,
      err: expect.stringMatching(/^mosoo-effects: config\.invalid: --db: is not a regular file/),
    });
  });
});

describe("mosoo-effects names a misspelt option, never the value typed with it", () => {
  it.each([
    ["a global option with =", ["--tokne=SECRET-hunter2", "list"], "--tokne"],
    ["a command's option with =", ["list", "--statsu=SECRET-hunter2"], "--statsu"],
    ["a short option with its value attached", ["-zSECRET-hunter2", "list"], "-z"],
  ])("%s: exit 2, one line with the name only", async (_label, args, name) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.err).toBe(`mosoo-effects: request.invalid: unknown option '${name}'\n`);
    expect(r.err).not.toContain("hunter2");
  });

  it("names an option whose value is invalid without repeating the value (a credential in a malformed URL stays unprinted)", async () => {
    const r = await cli(["--api-url", "ftp://operator:SECRET-hunter2@example.test", "list"]);
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      "mosoo-effects: request.invalid: option '--api-url <url>' argument is invalid. must be an http(s) URL such as http://127.0.0.1:8787\n",
    );
    expect(r.err).not.toContain("hunter2");
  });

  it.each([
    ["credentials", "http://operator:SECRET-hunter2@127.0.0.1:5999", "may not contain credentials"],
    ["a query", "http://127.0.0.1:5999/?token=SECRET-hunter2", "may not have a query"],
  ])("refuses an --api-url with %s before any request, without repeating it", async (_label, url, reason) => {
    const r = await cli(["--token", TOKEN, "--api-url", url, "list"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`mosoo-effects: request.invalid: option '--api-url <url>' argument is invalid. ${reason}`);
    expect(r.err).not.toContain("hunter2");
  });

  it("names the missing operator token with its code (exit 2, one line)", async () => {
    const r = await cli(["--api-url", "http://127.0.0.1:1", "list"], {});
    expect(r).toMatchObject({ code: 2, err: expect.stringMatching(/^mosoo-effects: auth\.missing_token: no operator token: /) as string });
  });

  it("exits 2 on a missing operator token for an action with --db too, as over the API, and changes nothing", async () => {
    const { dbFile, call } = await storeWithUnknownEffect();
    const before = ledgerSnapshot(f!.store);
    const r = await cli(["--db", dbFile, "resolve", call.effectId, "--outcome", "not_executed", "--reason", "r"], {
      MOSOO_EFFECT_RECONCILIATION: "on",
    });
    expect(r).toMatchObject({
      code: 2,
      err: expect.stringMatching(/^mosoo-effects: auth\.missing_token: an action is taken as an operator/),
    });
    expect(ledgerSnapshot(f!.store)).toEqual(before);
  });

  it("names --database-url, not only the API's variable, when the store it names cannot be opened (its password unprinted)", async () => {
    const r = await cli(["--database-url", "postgres://app:SECRET@127.0.0.1:1/mosoo", "list"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^mosoo-effects: config\.invalid: --database-url \(or MOSOO_DATABASE_URL\): cannot open the PostgreSQL store/);
    expect(r.err).not.toContain("SECRET");
  });

  it("names a misspelt command, but not a word that could be a secret pasted as one", async () => {
    expect(await cli(["lsit"])).toMatchObject({
      code: 2,
      err: "mosoo-effects: request.invalid: unknown command 'lsit' (Did you mean list?)\n",
    });
    const pasted = await cli(["s3cret-hunter2-0123456789"]);
    expect(pasted).toMatchObject({ code: 2, err: "mosoo-effects: request.invalid: unknown command\n" });
  });

  it("keeps commander's suggestion of a known flag", async () => {
    const r = await cli(["list", "--limt", "5"]);
    expect(r).toMatchObject({ code: 2, err: "mosoo-effects: request.invalid: unknown option '--limt' (Did you mean --limit?)\n" });
  });
});

describe("mosoo-effects as a process", () => {
  const run = promisify(execFile);
  const spawnCli = (args: string[], env: Record<string, string>) =>
    run(process.execPath, ["--import", "tsx", "src/effects.main.ts", ...args], { cwd: API_DIR, env: { ...process.env, ...env } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  it("talks to a running API over HTTP with the token; exits 2 with one line on bad input or no token and 1 on a refusal", async () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-cli-"));
    const api = await startApi(loadApiConfig({ MOSOO_DB_FILE: join(dir, "api.db"), MOSOO_PORT: "0", ...ON }), pino({ level: "silent" }), {
      sweep: false,
    });
    try {
      const ok = await spawnCli(["--api-url", api.url, "--json", "list"], { MOSOO_OPERATOR_TOKEN: TOKEN });
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout)).toEqual({ effects: [], nextCursor: null });
      const wrong = await spawnCli(["--api-url", api.url, "list"], { MOSOO_OPERATOR_TOKEN: "wrong-token-0123456789" });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toBe("mosoo-effects: auth.invalid_token: the credential is not valid\n");
      const bad = await spawnCli(["--api-url", api.url, "list", "--limit", "x"], { MOSOO_OPERATOR_TOKEN: TOKEN });
      expect(bad.code).toBe(2);
      expect(bad.stderr.trim().split("\n")).toHaveLength(1);
      const noToken = await spawnCli(["--api-url", api.url, "list"], { MOSOO_OPERATOR_TOKEN: "" });
      expect(noToken.code).toBe(2);
      expect(noToken.stderr).toMatch(/^mosoo-effects: auth\.missing_token: no operator token: [^\n]+\n$/);
    } finally {
      await api.close();
    }
  }, 60_000);
});
