/**
 * Driver registration under docs/DESIGN.md §10: the enrollment token is
 * required; an existing instance id is re-registered only with its own token or the operator token
 * (no identity takeover); registrations are rate-limited (429 `request.rate_limited` with
 * `Retry-After`), refused credentials and accepted registrations in separate budgets; registrations that never connected are purged by the maintenance sweep after
 * `driverUnconnectedTtlMs` (manual clock).
 */
import { afterEach, describe, expect, it } from "vitest";
import { TEST_AUTH, TEST_SECRETS } from "./helpers/http-call.js";
import { buildHttpApp, createTestWorld, type Store } from "./kit/index.js";

let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

function setup(opts: { perMinute?: number; unconnectedTtlMs?: number; heartbeatTtlMs?: number } = {}) {
  const world = createTestWorld({ heartbeatTtlMs: opts.heartbeatTtlMs ?? 10_000, driverUnconnectedTtlMs: opts.unconnectedTtlMs ?? 60_000 });
  store = world.store;
  const { clock, runtime } = world;
  const app = buildHttpApp(runtime, { ...TEST_AUTH, driverRegisterPerMinute: opts.perMinute ?? TEST_AUTH.driverRegisterPerMinute });
  const call = async (method: string, path: string, body: unknown, token?: string) => {
    const res = await app.request(path, {
      method,
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
  const count = () => (store!.sqlite.prepare("SELECT count(*) AS n FROM driver_instances").get() as { n: number }).n;
  return { runtime, app, clock, call, count };
}

describe("Driver registration", () => {
  it("needs the enrollment token (or the operator token) for a new instance", async () => {
    const s = setup();
    expect(await s.call("POST", "/v1/drivers/register", { name: "d" })).toMatchObject({
      status: 401,
      body: { error: { code: "auth.missing_token" } },
    });
    expect(await s.call("POST", "/v1/drivers/register", { name: "d" }, "wrong-enrollment-token-0123456789")).toMatchObject({
      status: 401,
      body: { error: { code: "auth.invalid_token" } },
    });
    expect(await s.call("POST", "/v1/drivers/register", { name: "d" }, TEST_SECRETS.adminKey)).toMatchObject({
      status: 403,
      body: { error: { code: "auth.forbidden" } },
    });
    expect(s.count()).toBe(0);
    expect(await s.call("POST", "/v1/drivers/register", { name: "d" }, TEST_SECRETS.enrollmentToken)).toMatchObject({ status: 201 });
    expect(await s.call("POST", "/v1/drivers/register", { name: "d" }, TEST_SECRETS.operatorToken)).toMatchObject({ status: 201 });
    expect(s.count()).toBe(2);
  });

  it("refuses an identity takeover: a finalized id is re-registered only with its own token or the operator token", async () => {
    const s = setup();
    const victim = (await s.call("POST", "/v1/drivers/register", { name: "victim" }, TEST_SECRETS.enrollmentToken)).body;
    const other = (await s.call("POST", "/v1/drivers/register", { name: "other" }, TEST_SECRETS.enrollmentToken)).body;
    await s.runtime.repair.finalize(victim.driverInstanceId, "driver_request");
    const row = () => store!.sqlite.prepare("SELECT * FROM driver_instances WHERE id = ?").get(victim.driverInstanceId);
    const before = JSON.stringify(row());
    const takeover = { name: "attacker", driverInstanceId: victim.driverInstanceId };
    // no proof used to be needed
    expect(await s.call("POST", "/v1/drivers/register", takeover)).toMatchObject({ status: 401 });
    expect(await s.call("POST", "/v1/drivers/register", takeover, TEST_SECRETS.enrollmentToken)).toMatchObject({
      status: 403,
      body: { error: { code: "auth.forbidden" } },
    });
    expect(await s.call("POST", "/v1/drivers/register", takeover, other.driverToken)).toMatchObject({
      status: 403,
      body: { error: { code: "auth.forbidden" } },
    });
    expect(JSON.stringify(row())).toBe(before);
    // its own (finalized) token re-registers it, and that old token is revoked
    const again = await s.call(
      "POST",
      "/v1/drivers/register",
      { name: "victim", driverInstanceId: victim.driverInstanceId },
      victim.driverToken,
    );
    expect(again).toMatchObject({ status: 201, body: { driverInstanceId: victim.driverInstanceId } });
    expect(again.body.driverToken).not.toBe(victim.driverToken);
    expect(await s.call("POST", "/v1/drivers/connect", undefined, victim.driverToken)).toMatchObject({
      status: 401,
      body: { error: { code: "auth.invalid_token" } },
    });
    expect(await s.call("POST", "/v1/drivers/connect", undefined, again.body.driverToken)).toMatchObject({ status: 200 });
    // the operator may re-register a finalized instance too
    await s.runtime.repair.finalize(victim.driverInstanceId, "driver_request");
    expect(
      await s.call(
        "POST",
        "/v1/drivers/register",
        { name: "victim", driverInstanceId: victim.driverInstanceId },
        TEST_SECRETS.operatorToken,
      ),
    ).toMatchObject({ status: 201 });
  });

  it("rate-limits registrations per client: 429 request.rate_limited with Retry-After, nothing written", async () => {
    const s = setup({ perMinute: 3 });
    for (let i = 0; i < 3; i++)
      expect((await s.call("POST", "/v1/drivers/register", { name: `d${i}` }, TEST_SECRETS.enrollmentToken)).status).toBe(201);
    const limited = await s.call("POST", "/v1/drivers/register", { name: "d4" }, TEST_SECRETS.enrollmentToken);
    expect(limited).toMatchObject({ status: 429, body: { error: { code: "request.rate_limited" } } });
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    // the operator token is an accepted registration too: same budget
    expect((await s.call("POST", "/v1/drivers/register", { name: "d5" }, TEST_SECRETS.operatorToken)).status).toBe(429);
    // refused attempts have their own budget: a guess is still checked (401), not spent by the accepted ones
    expect(await s.call("POST", "/v1/drivers/register", { name: "d6" }, "guess-0123456789abcdef")).toMatchObject({
      status: 401,
      body: { error: { code: "auth.invalid_token" } },
    });
    expect(s.count()).toBe(3);
    // the other routes are not limited
    expect((await s.call("GET", "/health", undefined)).status).toBe(200);
  });

  it("limits a flood of refused attempts on its own budget, and a Driver with the right token still registers afterwards", async () => {
    const s = setup({ perMinute: 3 });
    // review finding: 29 requests without a credential locked every Driver out (429), renewable forever
    expect((await s.call("POST", "/v1/drivers/register", { name: "a" })).status).toBe(401);
    expect((await s.call("POST", "/v1/drivers/register", { name: "b" }, "guess-0123456789abcdef")).status).toBe(401);
    expect((await s.call("POST", "/v1/drivers/register", { name: "c" }, TEST_SECRETS.adminKey)).status).toBe(403);
    // the flood itself is limited: further refused attempts answer 429 with Retry-After
    for (const token of [undefined, "guess-0123456789abcdef", TEST_SECRETS.adminKey]) {
      const limited = await s.call("POST", "/v1/drivers/register", { name: "flood" }, token);
      expect(limited).toMatchObject({ status: 429, body: { error: { code: "request.rate_limited" } } });
      const retryAfter = Number(limited.headers.get("retry-after"));
      expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    }
    expect(s.count()).toBe(0);
    // correctly authenticated registrations from the same address still succeed
    expect(await s.call("POST", "/v1/drivers/register", { name: "driver" }, TEST_SECRETS.enrollmentToken)).toMatchObject({ status: 201 });
    expect(await s.call("POST", "/v1/drivers/register", { name: "op" }, TEST_SECRETS.operatorToken)).toMatchObject({ status: 201 });
    expect(s.count()).toBe(2);
    // and the refused budget is still spent: the flood stays limited
    expect((await s.call("POST", "/v1/drivers/register", { name: "flood" })).status).toBe(429);
  });

  it("purges registrations that never connected once the TTL has passed (manual clock); connected ones and ones with runs stay", async () => {
    // heartbeats outlive the test's clock moves: only never-connected registrations are in question
    const s = setup({ unconnectedTtlMs: 60_000, heartbeatTtlMs: 600_000 });
    const reg = async (name: string) =>
      (await s.call("POST", "/v1/drivers/register", { name }, TEST_SECRETS.enrollmentToken)).body as {
        driverInstanceId: string;
        driverToken: string;
      };
    const idle = await reg("idle");
    const live = await reg("live");
    const live2 = await reg("live-2");
    await s.call("POST", "/v1/drivers/connect", undefined, live.driverToken);
    const idleWithRun = await reg("idle-with-run");
    // a run on a never-connected instance (the run API allows it): the instance is kept with its run
    expect((await s.call("POST", "/v1/runs", { driverInstanceId: idleWithRun.driverInstanceId }, TEST_SECRETS.adminKey)).status).toBe(201);
    expect(s.count()).toBe(4);
    s.clock.advance(59_000);
    expect((await s.runtime.sweep.sweepOnce()).driversPurged).toBe(0);
    s.clock.advance(2_000);
    const report = await s.runtime.sweep.sweepOnce();
    expect(report.driversPurged).toBe(2);
    const ids = (store!.sqlite.prepare("SELECT id FROM driver_instances ORDER BY id").all() as Array<{ id: string }>).map((r) => r.id);
    expect(ids.sort()).toEqual([live.driverInstanceId, idleWithRun.driverInstanceId].sort());
    expect(ids).not.toContain(idle.driverInstanceId);
    expect(ids).not.toContain(live2.driverInstanceId);
  });
});
