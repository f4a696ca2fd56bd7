import { afterEach, describe, expect, it } from "vitest";
import { CONSOLE_SESSION_TTL_MS } from "../src/modules/console/application/console-session.service.js";
import { buildHttpApp, createDoubleWorld, dispatchWrite, type DoubleWorld, operatorCredentials, reconnectDriver } from "./kit/index.js";
import { ledgerSnapshot } from "./helpers/reconciliation-db.js";

/** The console's HTTP surface without a browser: gating, cookie flags, CSRF, CSP, expiry, sign-out (docs/DESIGN.md §7, §10). */
const TOKEN = "operator-token-console-0123456789";
const ORIGIN = "http://localhost";
let f: DoubleWorld | undefined;
afterEach(() => {
  f?.close();
  f = undefined;
});

async function unknownEffect(fx: DoubleWorld) {
  const call = await dispatchWrite(fx, { serverId: "mail", toolName: "sendMail" });
  const restarted = await reconnectDriver(fx.runtime, call.driver);
  await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  expect((await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId)).kind).toBe("unknown");
  return call;
}

/** The console with one operator credential `alice` (TOKEN, every scope), or none when `operatorToken` is undefined. */
function consoleClient(fx: DoubleWorld, opts: { operatorToken?: string | undefined } = { operatorToken: TOKEN }) {
  const operators = operatorCredentials(opts.operatorToken === undefined ? [] : [{ name: "alice", token: opts.operatorToken }]);
  const app = buildHttpApp(fx.runtime, { operators });
  const request = (path: string, init: RequestInit = {}) => app.request(`${ORIGIN}${path}`, init);
  const signIn = (body: Record<string, string>, headers: Record<string, string> = { origin: ORIGIN }) =>
    request("/console/session", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(body).toString(),
    });
  return { request, signIn };
}

/** Signs in and returns the cookie header value and the session's CSRF token. */
async function session(c: ReturnType<typeof consoleClient>) {
  const res = await c.signIn({ token: TOKEN });
  expect(res.status).toBe(303);
  const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
  const info = (await (await c.request("/console/api/session", { headers: { cookie } })).json()) as { csrfToken: string; actor: string };
  expect(info.actor).toBe("alice");
  return { cookie, csrf: info.csrfToken };
}

describe("operator console over HTTP", () => {
  it("is 404 on every path when no operator token is configured", async () => {
    f = createDoubleWorld();
    const c = consoleClient(f, { operatorToken: undefined });
    for (const path of [
      "/console",
      "/console/sign-in",
      "/console/effects/01JDZZZZZZZZZZZZZZZZZZZZZZ",
      "/console/api/effects",
      "/console/assets/console.js",
    ]) {
      const res = await c.request(path);
      expect(res.status).toBe(404);
      expect(await res.text()).toContain("operator console is off");
    }
    expect((await c.signIn({ token: "anything" })).status).toBe(404);
  });

  it("says 'feature off' when MOSOO_EFFECT_RECONCILIATION is off, and refuses to sign in", async () => {
    f = createDoubleWorld({ enabled: false });
    const c = consoleClient(f);
    for (const path of ["/console", "/console/sign-in"]) {
      const res = await c.request(path);
      expect(res.status).toBe(404);
      expect(await res.text()).toContain("Feature off.");
    }
    expect((await c.signIn({ actor: "alice", token: TOKEN })).status).toBe(404);
  });

  it("signs in only with the right token; the session cookie is HttpOnly, SameSite=Strict, Path=/console; pages carry a strict CSP", async () => {
    f = createDoubleWorld();
    const c = consoleClient(f);
    const page = await c.request("/console");
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/console/sign-in");
    const form = await c.request("/console/sign-in");
    expect(form.status).toBe(200);
    const csp = form.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(form.headers.get("cache-control")).toBe("no-store");

    const wrong = await c.signIn({ token: "not-the-token" });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    expect(await wrong.text()).toContain("the operator token is not valid");
    const missing = await c.signIn({});
    expect(missing.status).toBe(400);
    expect(missing.headers.get("set-cookie")).toBeNull();
    // Nothing typed is echoed back (the form has no name field; a posted `actor` is ignored, never shown).
    const echoed = await (await c.signIn({ actor: `"><script>alert(1)</script>`, token: "x" })).text();
    expect(echoed).not.toContain("<script>alert(1)</script>");
    expect(echoed).not.toContain("alert(1)");
    // A sign-in posted from another site is refused (hono csrf: Origin).
    const crossSite = await c.signIn({ token: TOKEN }, { origin: "http://evil.example" });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.get("set-cookie")).toBeNull();

    // a posted `actor` does not name the session: the credential does
    const ok = await c.signIn({ actor: "mallory", token: TOKEN });
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toBe("/console");
    const cookie = ok.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^mosoo_console_session=[A-Za-z0-9_-]{43};/);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Path=/console");
    expect(cookie).toMatch(/Max-Age=28800/);
    expect(cookie).not.toContain(TOKEN);
    const app = await c.request("/console", { headers: { cookie: cookie.split(";")[0]! } });
    expect(app.status).toBe(200);
    expect(await app.text()).toContain('src="/console/assets/console.js"');
  });

  it("refuses every console API call without a session, and every write without the session's CSRF token or as JSON; nothing changes", async () => {
    f = createDoubleWorld();
    const fx = f;
    const call = await unknownEffect(fx);
    const c = consoleClient(fx);
    const before = ledgerSnapshot(fx.store);
    const resolve = (headers: Record<string, string>, body: unknown = { outcome: "not_executed", reason: "checked" }) =>
      c.request(`/console/api/effects/${call.effectId}/resolve`, {
        method: "POST",
        headers: { origin: ORIGIN, ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    const code = async (res: Response) => ({ status: res.status, code: ((await res.json()) as { error: { code: string } }).error.code });

    expect(await code(await c.request("/console/api/effects"))).toEqual({ status: 401, code: "auth.session_required" });
    expect(await code(await c.request("/console/api/effects", { headers: { cookie: "mosoo_console_session=forged" } }))).toEqual({
      status: 401,
      code: "auth.session_required",
    });
    expect(await code(await resolve({ "content-type": "application/json" }))).toEqual({ status: 401, code: "auth.session_required" });

    const { cookie, csrf } = await session(c);
    expect(await code(await resolve({ cookie, "content-type": "application/json" }))).toEqual({ status: 403, code: "auth.csrf_rejected" });
    expect(await code(await resolve({ cookie, "content-type": "application/json", "x-csrf-token": "wrong" }))).toEqual({
      status: 403,
      code: "auth.csrf_rejected",
    });
    expect(await code(await resolve({ cookie, "content-type": "text/plain", "x-csrf-token": csrf }))).toEqual({
      status: 415,
      code: "request.unsupported_media_type",
    });
    expect(
      await code(
        await resolve(
          { cookie, "content-type": "application/json", "x-csrf-token": csrf },
          { outcome: "not_executed", reason: "x", actor: "someone-else" },
        ),
      ),
    ).toEqual({
      status: 400,
      code: "request.invalid",
    });
    expect(ledgerSnapshot(fx.store)).toEqual(before);

    // The same request with the token goes through the operator service, audited under the session's credential's name.
    const res = await resolve({ cookie, "content-type": "application/json", "x-csrf-token": csrf });
    expect(res.status).toBe(200);
    expect((await fx.runtime.operator.show(call.effectId)).operatorActions).toMatchObject([
      { action: "resolve", actor: "alice", outcome: "not_executed", reason: "checked" },
    ]);
    // A second resolution is the service's conflict, as JSON.
    expect(await code(await resolve({ cookie, "content-type": "application/json", "x-csrf-token": csrf }))).toEqual({
      status: 409,
      code: "effect.not_unknown",
    });
  });

  it("lists with the attention filter, counts by reason, and serves stats; the API responses carry the CSP too", async () => {
    f = createDoubleWorld();
    const fx = f;
    const a = await unknownEffect(fx);
    const b = await unknownEffect(fx);
    fx.store.sqlite.prepare("UPDATE external_tool_effects SET operator_attention = 'key_conflict' WHERE id = ?").run(b.effectId);
    const c = consoleClient(fx);
    const { cookie } = await session(c);
    const list = await c.request("/console/api/effects?attention=key_conflict", { headers: { cookie } });
    expect(list.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(((await list.json()) as { effects: Array<{ id: string }> }).effects.map((e) => e.id)).toEqual([b.effectId]);
    expect((await c.request("/console/api/effects?attention=bogus", { headers: { cookie } })).status).toBe(400);
    const stats = (await (await c.request("/console/api/stats", { headers: { cookie } })).json()) as {
      unknownTotal: number;
      byAttention: unknown[];
      unknownSeries: Array<{ count: number }>;
    };
    expect(stats.unknownTotal).toBe(2);
    expect(stats.byAttention).toEqual(
      expect.arrayContaining([
        { reason: "key_conflict", count: 1 },
        { reason: null, count: 1 },
      ]),
    );
    expect(stats.unknownSeries.at(-1)?.count).toBe(2);
    expect(a.effectId).not.toBe(b.effectId);
  });

  it("a session expires after its lifetime; signing out needs the CSRF token and ends it", async () => {
    f = createDoubleWorld();
    const fx = f;
    const c = consoleClient(fx);
    const first = await session(c);
    fx.clock.advance(CONSOLE_SESSION_TTL_MS);
    expect((await c.request("/console/api/session", { headers: { cookie: first.cookie } })).status).toBe(401);

    const { cookie, csrf } = await session(c);
    const out = (body: Record<string, string>) =>
      c.request("/console/sign-out", {
        method: "POST",
        headers: { cookie, origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(body).toString(),
      });
    expect((await out({})).status).toBe(403);
    expect((await c.request("/console/api/session", { headers: { cookie } })).status).toBe(200);
    const done = await out({ csrf });
    expect(done.status).toBe(303);
    expect(done.headers.get("set-cookie")).toMatch(/mosoo_console_session=;/);
    expect((await c.request("/console/api/session", { headers: { cookie } })).status).toBe(401);
  });
});
