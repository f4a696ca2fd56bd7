import { execFile } from "node:child_process";
import * as crypto from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ConfigError, loadApiConfig } from "../src/config/api-config.js";
import { OperatorCredentials, tokenDigest } from "../src/modules/operator/domain/operator-credential.js";
import { buildEffectsCli } from "../src/entry/cli/effects-cli.js";
import { CliFailure } from "../src/entry/cli/effects-cli.exit-codes.js";
import { buildHttpApp, createDoubleWorld, dispatchWrite, type DoubleWorld, operatorCredentials, reconnectDriver } from "./kit/index.js";
import { ledgerSnapshot } from "./helpers/reconciliation-db.js";

// A spy that runs the real timingSafeEqual: counts how many digests each identification compares.
vi.mock("node:crypto", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:crypto")>();
  return { ...real, timingSafeEqual: vi.fn(real.timingSafeEqual) };
});

/**
 * Operators are named by their credential (docs/DESIGN.md §7, §10): the audit actor is the name of
 * the credential that authenticated the request, never a request field; each action needs its
 * scope; refused tokens spend a failure budget; the configuration refuses weak or duplicated credentials.
 */
const ALICE = "alice-token-0123456789abcdef";
const AUDITOR = "auditor-token-0123456789abcdef";
const RESOLVER = "resolver-token-0123456789abcdef";
const CREDENTIALS = operatorCredentials([
  { name: "alice", token: ALICE },
  { name: "auditor", token: AUDITOR, scopes: ["read"] },
  { name: "resolver", token: RESOLVER, scopes: ["resolve"] },
]);
const E = "/api/operator/effects";
const ORIGIN = "http://localhost";

let f: DoubleWorld | undefined;
let dir: string | undefined;
afterEach(() => {
  f?.close();
  f = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function unknownEffect(fx: DoubleWorld) {
  const call = await dispatchWrite(fx, { serverId: "mail", toolName: "sendMail" });
  const restarted = await reconnectDriver(fx.runtime, call.driver);
  await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  expect((await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId)).kind).toBe("unknown");
  return call;
}

function api(fx: DoubleWorld, failuresPerMinute = 100) {
  const app = buildHttpApp(fx.runtime, { operators: CREDENTIALS, operatorAuthFailuresPerMinute: failuresPerMinute });
  const send = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await app.request(`${ORIGIN}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${token}`, origin: ORIGIN },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as any };
  };
  const signIn = (form: Record<string, string>) =>
    app.request(`${ORIGIN}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
      body: new URLSearchParams(form).toString(),
    });
  const consoleAs = async (token: string) => {
    const res = await signIn({ token, actor: "trusted-admin" });
    expect(res.status).toBe(303);
    const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
    const info = (await (await app.request(`${ORIGIN}/console/api/session`, { headers: { cookie } })).json()) as any;
    const post = async (path: string, body: unknown) => {
      const r = await app.request(`${ORIGIN}${path}`, {
        method: "POST",
        headers: { cookie, origin: ORIGIN, "content-type": "application/json", "x-csrf-token": info.csrfToken },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    return { info, post, get: async (path: string) => (await app.request(`${ORIGIN}${path}`, { headers: { cookie } })).status };
  };
  return { send, signIn, consoleAs };
}

const refusals = (fx: DoubleWorld) =>
  fx.store.sqlite.prepare("SELECT action, actor, outcome, reason FROM effect_operator_refusals ORDER BY id").all();

describe("the operator API names the actor by the credential", () => {
  it("records the credential's name as actor; a body actor is refused and changes nothing", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const op = api(f);
    const before = ledgerSnapshot(f.store);
    const forged = await op.send("POST", `${E}/${call.effectId}/resolve`, ALICE, {
      outcome: "not_executed",
      actor: "trusted-admin",
      reason: "r",
    });
    expect(forged).toMatchObject({ status: 400, body: { error: { code: "request.invalid" } } });
    expect(forged.body.error.message).toMatch(/actor is the name of your operator credential/);
    expect(ledgerSnapshot(f.store)).toEqual(before);
    expect(refusals(f)).toEqual([]);

    const ok = await op.send("POST", `${E}/${call.effectId}/resolve`, ALICE, { outcome: "not_executed", reason: "checked the mailbox" });
    expect(ok.status).toBe(200);
    const shown = await op.send("GET", `${E}/${call.effectId}`, AUDITOR);
    expect(shown.body.operatorActions).toEqual([
      expect.objectContaining({ action: "resolve", actor: "alice", reason: "checked the mailbox" }),
    ]);
  });

  it("a credential without the action's scope gets 403 auth.scope, audited under its name; nothing else changes", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const op = api(f);
    const before = ledgerSnapshot(f.store);
    expect((await op.send("GET", E, AUDITOR)).status).toBe(200);
    for (const [path, body] of [
      [`${E}/${call.effectId}/resolve`, { outcome: "not_executed", reason: "auditor tries" }],
      [`${E}/${call.effectId}/reconcile`, { reason: "auditor tries" }],
      [`${E}/${call.effectId}/compensate`, { reason: "auditor tries" }],
    ] as const)
      expect(await op.send("POST", path, AUDITOR, body)).toMatchObject({ status: 403, body: { error: { code: "auth.scope" } } });
    // a credential without `read` may not list or show
    expect(await op.send("GET", E, RESOLVER)).toMatchObject({ status: 403, body: { error: { code: "auth.scope" } } });
    expect(await op.send("GET", `${E}/${call.effectId}`, RESOLVER)).toMatchObject({ status: 403 });
    expect(ledgerSnapshot(f.store)).toEqual(before);
    expect(refusals(f)).toEqual([
      { action: "resolve", actor: "auditor", outcome: "auth.scope", reason: "auditor tries" },
      { action: "lookup", actor: "auditor", outcome: "auth.scope", reason: "auditor tries" },
      { action: "compensate", actor: "auditor", outcome: "auth.scope", reason: "auditor tries" },
    ]);
    // the resolver may resolve (its one scope), recorded under its own name
    expect((await op.send("POST", `${E}/${call.effectId}/resolve`, RESOLVER, { outcome: "not_executed", reason: "r" })).status).toBe(200);
    expect(f.store.sqlite.prepare("SELECT actor FROM effect_operator_actions").all()).toEqual([{ actor: "resolver" }]);
  });

  it("only a full operator deletes runs; read reaches /metrics", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const op = api(f);
    expect((await op.send("DELETE", `/v1/runs/${call.runId}`, AUDITOR)).body.error.code).toBe("auth.scope");
    const metrics = await buildHttpApp(f.runtime, { operators: CREDENTIALS }).request("/metrics", {
      headers: { authorization: `Bearer ${AUDITOR}` },
    });
    expect(metrics.status).toBe(200);
  });

  it("a wrong token is 401, and past the failure budget 429 with Retry-After; a right token still passes", async () => {
    f = createDoubleWorld({ bind: false });
    const op = api(f, 3);
    for (let i = 0; i < 3; i++)
      expect(await op.send("GET", E, "wrong-token-0123456789")).toMatchObject({
        status: 401,
        body: { error: { code: "auth.invalid_token" } },
      });
    const limited = await op.send("GET", E, "wrong-token-0123456789");
    expect(limited).toMatchObject({ status: 429, body: { error: { code: "request.rate_limited" } } });
    expect(Number(limited.retryAfter)).toBeGreaterThanOrEqual(1);
    expect((await op.send("GET", E, ALICE)).status).toBe(200);
    // the console's sign-in spends the same budget of this address
    const signIn = await op.signIn({ token: "wrong-token-0123456789" });
    expect(signIn.status).toBe(429);
    expect(Number(signIn.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(signIn.headers.get("set-cookie")).toBeNull();
  });
});

describe("the console session carries the credential that opened it", () => {
  it("signs in with a token only, shows its name and scopes, and audits actions (and refusals) under that name", async () => {
    f = createDoubleWorld({ bind: false });
    const call = await unknownEffect(f);
    const op = api(f);
    const auditor = await op.consoleAs(AUDITOR);
    expect(auditor.info).toMatchObject({ actor: "auditor", scopes: ["read"] });
    expect(await auditor.get("/console/api/effects")).toBe(200);
    expect(
      await auditor.post(`/console/api/effects/${call.effectId}/resolve`, { outcome: "not_executed", reason: "auditor" }),
    ).toMatchObject({
      status: 403,
      body: { error: { code: "auth.scope" } },
    });
    const alice = await op.consoleAs(ALICE);
    expect(alice.info).toMatchObject({ actor: "alice", scopes: ["read", "reconcile", "resolve", "compensate"] });
    expect(
      (await alice.post(`/console/api/effects/${call.effectId}/resolve`, { outcome: "not_executed", reason: "r", actor: "bob" })).status,
    ).toBe(400);
    expect((await alice.post(`/console/api/effects/${call.effectId}/resolve`, { outcome: "not_executed", reason: "checked" })).status).toBe(
      200,
    );
    expect(refusals(f)).toEqual([{ action: "resolve", actor: "auditor", outcome: "auth.scope", reason: "auditor" }]);
    expect(f.store.sqlite.prepare("SELECT actor FROM effect_operator_actions").all()).toEqual([{ actor: "alice" }]);
    // a wrong token: 401, no session
    const wrong = await op.signIn({ token: "not-a-token-0123456789" });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
  });
});

describe("operator tokens are compared in constant time", () => {
  it("compares a token with every credential's sha-256 digest, whichever matches (no early exit)", () => {
    const spy = vi.mocked(crypto.timingSafeEqual);
    const creds = new OperatorCredentials(
      ["a", "b", "c"].map((name) => ({ name, scopes: ["read"] as const, tokenSha256: tokenDigest(`${name}-token-0123456789abcdef`) })),
    );
    for (const [token, name] of [
      ["a-token-0123456789abcdef", "a"],
      ["c-token-0123456789abcdef", "c"],
      ["x", undefined],
    ] as const) {
      spy.mockClear();
      expect(creds.identify(token)?.name).toBe(name);
      expect(spy).toHaveBeenCalledTimes(3);
      for (const [given, held] of spy.mock.calls) expect([(given as Buffer).length, (held as Buffer).length]).toEqual([32, 32]);
    }
  });
});

describe("operator credentials in the configuration", () => {
  const file = (content: unknown) => {
    dir ??= mkdtempSync(join(tmpdir(), "mosoo-operators-"));
    const path = join(dir, "operators.json");
    writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content), { mode: 0o600 });
    return path;
  };
  const configError = (env: Record<string, string>): string => {
    try {
      loadApiConfig(env);
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    return "no error";
  };
  const cred = (name: string, token: string, scopes: string[] = ["read"]) => ({ name, token, scopes });

  it("loads named, scoped credentials next to MOSOO_OPERATOR_TOKEN (named operator, every scope)", () => {
    const path = file({ credentials: [cred("auditor", AUDITOR), cred("alice", ALICE, ["read", "resolve"])] });
    const { operators } = loadApiConfig({ MOSOO_OPERATOR_TOKEN: RESOLVER, MOSOO_OPERATOR_CREDENTIALS_FILE: path }).auth;
    expect(operators.names).toEqual(["operator", "auditor", "alice"]);
    expect(operators.identify(RESOLVER)).toEqual({ name: "operator", scopes: ["read", "reconcile", "resolve", "compensate"] });
    expect(operators.identify(ALICE)).toEqual({ name: "alice", scopes: ["read", "resolve"] });
    expect(loadApiConfig({ MOSOO_OPERATOR_TOKEN: RESOLVER, MOSOO_OPERATOR_TOKEN_NAME: "ops-lead" }).auth.operators.names).toEqual([
      "ops-lead",
    ]);
  });

  it.each<[string, () => Record<string, string>, RegExp]>([
    [
      "a duplicate name",
      () => ({ MOSOO_OPERATOR_CREDENTIALS_FILE: file({ credentials: [cred("alice", ALICE), cred("alice", AUDITOR)] }) }),
      /^config\.invalid: MOSOO_OPERATOR_CREDENTIALS_FILE: duplicate credential name alice/,
    ],
    [
      "a name that MOSOO_OPERATOR_TOKEN already has",
      () => ({ MOSOO_OPERATOR_TOKEN: RESOLVER, MOSOO_OPERATOR_CREDENTIALS_FILE: file({ credentials: [cred("operator", ALICE)] }) }),
      /^config\.invalid: MOSOO_OPERATOR_CREDENTIALS_FILE: duplicate credential name operator \(also in MOSOO_OPERATOR_TOKEN\)$/,
    ],
    [
      "a duplicate token",
      () => ({ MOSOO_OPERATOR_CREDENTIALS_FILE: file({ credentials: [cred("alice", ALICE), cred("bob", ALICE)] }) }),
      /^config\.invalid: MOSOO_OPERATOR_CREDENTIALS_FILE: credential bob reuses the token of credential alice$/,
    ],
    [
      "a token equal to MOSOO_OPERATOR_TOKEN",
      () => ({ MOSOO_OPERATOR_TOKEN: ALICE, MOSOO_OPERATOR_CREDENTIALS_FILE: file({ credentials: [cred("bob", ALICE)] }) }),
      /^config\.invalid: MOSOO_OPERATOR_CREDENTIALS_FILE: credential bob reuses the token of credential operator$/,
    ],
    [
      "a bad scope",
      () => ({ MOSOO_OPERATOR_CREDENTIALS_FILE: file({ credentials: [cred("alice", ALICE, ["read", "admin"])] }) }),
      /^config\.invalid: MOSOO_OPERATOR_CREDENTIALS_FILE: .*operators\.json: credentials\.0\.scopes\.1: /,
    ],
    [
      "a weak token",
      () => ({ MOSOO_OPERATOR_CREDENTIALS_FILE: file({ credentials: [cred("alice", "abababababababababab")] }) }),
      /^config\.invalid: MOSOO_OPERATOR_CREDENTIALS_FILE: .*credentials\.0\.token: a token is too weak/,
    ],
    [
      "a weak MOSOO_OPERATOR_TOKEN",
      () => ({ MOSOO_OPERATOR_TOKEN: "aaaaaaaaaaaaaaaaaaaa" }),
      /^config\.invalid: MOSOO_OPERATOR_TOKEN: a token is too weak/,
    ],
    [
      "an API key reusing an operator token",
      () => ({
        MOSOO_API_KEYS: `agent:${ALICE}:runs:read`,
        MOSOO_OPERATOR_CREDENTIALS_FILE: file({ credentials: [cred("alice", ALICE)] }),
      }),
      /^config\.invalid: MOSOO_API_KEYS: key agent reuses the secret of MOSOO_OPERATOR_CREDENTIALS_FILE \(credential alice\)/,
    ],
    [
      "a file that is not JSON",
      () => ({ MOSOO_OPERATOR_CREDENTIALS_FILE: file("{") }),
      /^config\.invalid: MOSOO_OPERATOR_CREDENTIALS_FILE: .* is not valid JSON$/,
    ],
  ])("refuses %s in one line, never echoing a token", (_what, env, expected) => {
    const message = configError(env());
    expect(message).toMatch(expected);
    expect(message.split("\n")).toHaveLength(1);
    for (const secret of [ALICE, AUDITOR, RESOLVER, "abababababababababab"]) expect(message).not.toContain(secret);
  });

  it("the API exits 2 with that one line at start", async () => {
    const path = file({ credentials: [cred("alice", ALICE), cred("alice", AUDITOR)] });
    const run = promisify(execFile);
    const result = await run(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: join(import.meta.dirname, ".."),
      env: { ...process.env, MOSOO_OPERATOR_CREDENTIALS_FILE: path, MOSOO_DB_FILE: join(dir!, "api.db"), MOSOO_PORT: "0" },
    }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^config\.invalid: MOSOO_OPERATOR_CREDENTIALS_FILE: duplicate credential name alice \(also in MOSOO_OPERATOR_CREDENTIALS_FILE\)\n$/,
    );
  }, 30_000);
});

describe("the operator CLI in-process (--db) acts as a configured credential", () => {
  async function cli(args: string[], env: Record<string, string>) {
    const program = buildEffectsCli(() => {}, { MOSOO_EFFECT_RECONCILIATION: "on", ...env } as NodeJS.ProcessEnv);
    try {
      await program.parseAsync(["node", "mosoo-effects", ...args]);
      return "ok";
    } catch (e) {
      if (e instanceof CliFailure) return `${e.exitCode} ${e.message}`;
      throw e;
    }
  }

  it("refuses an action without a token or with a scope-less one, and records the credential's name otherwise", async () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-operators-cli-"));
    const dbFile = join(dir, "api.db");
    f = createDoubleWorld({ bind: false, dbFile });
    const call = await unknownEffect(f);
    f.close();
    f = undefined;
    const path = join(dir, "operators.json");
    writeFileSync(
      path,
      JSON.stringify({
        credentials: [
          { name: "auditor", token: AUDITOR, scopes: ["read"] },
          { name: "alice", token: ALICE, scopes: ["resolve"] },
        ],
      }),
      { mode: 0o600 },
    );
    const env = { MOSOO_OPERATOR_CREDENTIALS_FILE: path };
    const resolve = (token?: string) =>
      cli(
        ["--db", dbFile, ...(token ? ["--token", token] : []), "resolve", call.effectId, "--outcome", "not_executed", "--reason", "r"],
        env,
      );
    expect(await cli(["--db", dbFile, "list"], env)).toBe("ok"); // reads need no credential
    expect(await resolve()).toMatch(/^2 auth\.missing_token: /); // nothing ran: the command line lacks the token
    expect(await resolve("wrong-token-0123456789")).toMatch(/^1 auth\.invalid_token: /);
    expect(await resolve(AUDITOR)).toMatch(/^1 auth\.scope: the operator credential auditor lacks the resolve scope$/);
    expect(await resolve(ALICE)).toBe("ok");
    f = createDoubleWorld({ bind: false, dbFile });
    expect(f.store.sqlite.prepare("SELECT actor FROM effect_operator_actions").all()).toEqual([{ actor: "alice" }]);
    expect(refusals(f)).toEqual([{ action: "resolve", actor: "auditor", outcome: "auth.scope", reason: "r" }]);
  });
});
