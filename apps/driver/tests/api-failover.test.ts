import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { newUlid } from "@mosoo/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DriverApiClient } from "../src/api-client.js";
import { ApiEndpointPool } from "../src/api-endpoints.js";
import { ApiUnavailableError, deliveryOfFetchFailure } from "../src/api-errors.js";
import { error, FakeDriverApi, FakeLedgerState } from "./helpers/fake-driver-api.js";
import { captureLogger } from "./helpers/log-capture.js";

const FAST_RETRY = { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 5 };

let state: FakeLedgerState;
let api1: FakeDriverApi;
let api2: FakeDriverApi;
beforeEach(async () => {
  // Two API instances of one deployment: one shared "database".
  state = new FakeLedgerState();
  api1 = new FakeDriverApi(state);
  api2 = new FakeDriverApi(state);
  await api1.start();
  await api2.start();
});
afterEach(async () => {
  await api1.stop();
  await api2.stop();
});

/** A URL on which nothing listens (a port that was just free). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

function clientOf(urls: string[], extra: { fetch?: typeof fetch } = {}) {
  const { logger, lines } = captureLogger();
  const { driverToken } = api1.seedInstance();
  const client = new DriverApiClient({ apiUrls: urls, driverToken, retry: FAST_RETRY, logger, ...extra });
  return { client, lines, failovers: () => lines.filter((l) => l["msg"] === "api.failover") };
}

const completeBody = (connectionId: string) => ({
  connectionId,
  attempt: 1,
  result: { outputText: "created", requestId: "req-1", serverId: "issues", toolName: "create_issue" },
  receipt: null,
});

describe("DriverApiClient with several API URLs", () => {
  it("sends everything to the first URL while it answers", async () => {
    const { client, failovers } = clientOf([api1.url, api2.url]);
    const { connectionId } = await client.call("connect", {});
    await client.call("heartbeat", { body: { connectionId } });
    await client.call("heartbeat", { body: { connectionId } });
    expect(api1.requests.map((r) => r.route)).toEqual(["connect", "heartbeat", "heartbeat"]);
    expect(api2.requests).toHaveLength(0);
    expect(failovers()).toHaveLength(0);
  });

  it("moves to the next URL at once when the current one refuses, keeps the same connection, logs the switch and stays there (sticky until failure)", async () => {
    const { client, failovers } = clientOf([api1.url, api2.url]);
    const { connectionId } = await client.call("connect", {});
    const port1 = Number(new URL(api1.url).port);
    await api1.stop();

    const beat = await client.call("heartbeat", { body: { connectionId } });
    expect(beat).toEqual({ heartbeatTtlMs: state.heartbeatTtlMs });
    expect(api2.requestsOf("heartbeat").map((r) => r.body)).toEqual([{ connectionId }]);
    expect(api2.requestsOf("connect")).toHaveLength(0); // same connection: no reconnect
    expect(client.currentApiUrl).toBe(api2.url);
    expect(failovers()).toEqual([
      expect.objectContaining({ level: 40, route: "heartbeat", fromUrl: api1.url, toUrl: api2.url, errorCode: "api.unreachable" }),
    ]);

    // The first instance comes back on its port: the Driver stays on the second one.
    await api1.start(port1);
    await client.call("heartbeat", { body: { connectionId } });
    expect(api1.requests.filter((r) => r.route === "heartbeat")).toHaveLength(0);
    expect(api2.requestsOf("heartbeat")).toHaveLength(2);
    expect(failovers()).toHaveLength(1);
  });

  it.each(["before_apply", "after_apply"] as const)(
    "an instance killed while it handles complete (%s): the same report goes to the next URL and the shared ledger applies it once",
    async (point) => {
      const { client } = clientOf([api1.url, api2.url]);
      const { connectionId } = await client.call("connect", {});
      const effectId = newUlid();
      api1.killOn("effectComplete", point);

      const stored = await client.call("effectComplete", { params: { effectId }, body: completeBody(connectionId) });

      expect(api1.requestsOf("effectComplete")).toHaveLength(1);
      expect(api2.requestsOf("effectComplete").map((r) => r.body)).toEqual([completeBody(connectionId)]);
      expect(stored).toEqual({ outcome: point === "after_apply" ? "duplicate" : "applied", status: "succeeded" });
      expect([...state.completedEffects]).toEqual([effectId]);
    },
  );

  it("resends register to the next URL after a refused connection (nothing was sent)", async () => {
    const dead = await deadUrl();
    const client = new DriverApiClient({ apiUrls: [dead, api2.url], retry: FAST_RETRY });
    const registered = await client.call("register", { body: { name: "driver-test" } });
    expect(api2.requestsOf("register")).toHaveLength(1);
    expect(state.tokens.get(registered.driverToken)).toBe(registered.driverInstanceId);
  });

  it("never resends register after an ambiguous failure (the dead instance may have registered it), but later calls go to the next URL", async () => {
    const client = new DriverApiClient({ apiUrls: [api1.url, api2.url], retry: FAST_RETRY });
    api1.killOn("register", "after_apply");
    const failure = await client.call("register", { body: { name: "driver-test" } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiUnavailableError);
    expect(failure).toMatchObject({ code: "api.unreachable", delivery: "unknown", apiUrl: api1.url });
    expect(api1.requestsOf("register")).toHaveLength(1);
    expect(api2.requestsOf("register")).toHaveLength(0);
    expect(client.currentApiUrl).toBe(api2.url);
  });

  it("a call's resendAfter narrows the rule: a reset long-poll is not resent anywhere", async () => {
    const { client } = clientOf([api1.url, api2.url]);
    const { connectionId } = await client.call("connect", {});
    api1.killOn("nextCommand", "before_apply");
    const failure = await client
      .call(
        "nextCommand",
        { query: { connectionId, waitMs: 20 } },
        { resendAfter: (f) => f instanceof ApiUnavailableError && f.delivery === "not_sent" },
      )
      .catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: "api.unreachable", delivery: "unknown" });
    expect(api2.requestsOf("nextCommand")).toHaveLength(0);
  });

  it("does not fail over on a 5xx (a live instance answered): retried on the same URL", async () => {
    const { client, failovers } = clientOf([api1.url, api2.url]);
    const { connectionId } = await client.call("connect", {});
    api1.failNext("heartbeat", error(503, "store.busy", "busy"), error(500, "server.error", "oops"));
    await client.call("heartbeat", { body: { connectionId } });
    expect(api1.requestsOf("heartbeat")).toHaveLength(3);
    expect(api2.requests).toHaveLength(0);
    expect(failovers()).toHaveLength(0);
  });

  it("every URL dead: each is tried once per round, rounds are retried with backoff, and the error names every URL", async () => {
    const urls = [await deadUrl(), await deadUrl()];
    const sentTo: string[] = [];
    const recordingFetch: typeof fetch = (input, init) => {
      sentTo.push(new URL(String(input)).origin);
      return fetch(input, init);
    };
    const { client, lines } = clientOf(urls, { fetch: recordingFetch });
    const failure = await client.call("heartbeat", { body: { connectionId: newUlid() } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiUnavailableError);
    expect(failure).toMatchObject({ delivery: "not_sent" });
    const message = (failure as Error).message;
    expect(message).toContain(`failed on 2 API URLs: ${urls[0]}: `);
    expect(message).toContain(`; ${urls[1]}: `);
    expect(message).toMatch(/ECONNREFUSED/);
    // FAST_RETRY: 3 rounds of 2 attempts, alternating (the pool moves on with each failure).
    expect(sentTo).toEqual([urls[0], urls[1], urls[0], urls[1], urls[0], urls[1]]);
    expect(lines.filter((l) => l["msg"] === "api.retry")).toHaveLength(2);
  });

  it("one URL: the single-URL behaviour (no fail-over line, retries on the same URL)", async () => {
    const dead = await deadUrl();
    const sentTo: string[] = [];
    const recordingFetch: typeof fetch = (input, init) => {
      sentTo.push(new URL(String(input)).origin);
      return fetch(input, init);
    };
    const { client, failovers } = clientOf([dead], { fetch: recordingFetch });
    await expect(client.call("heartbeat", { body: { connectionId: newUlid() } })).rejects.toBeInstanceOf(ApiUnavailableError);
    expect(sentTo).toEqual([dead, dead, dead]);
    expect(failovers()).toHaveLength(0);
  });
});

describe("ApiEndpointPool", () => {
  it("moves once when two requests fail on the same URL, and wraps around in order", () => {
    const { logger, lines } = captureLogger();
    const pool = new ApiEndpointPool(["http://a/", "http://b", "http://c"], logger);
    const failure = new ApiUnavailableError("down", { delivery: "not_sent" });
    pool.reportUnreachable("http://a", "heartbeat", failure);
    pool.reportUnreachable("http://a", "nextCommand", failure); // already moved on: no second switch
    expect(pool.current).toBe("http://b");
    expect(pool.nextUntried(new Set(["http://b"]))).toBe("http://c");
    expect(pool.nextUntried(new Set(["http://a", "http://b", "http://c"]))).toBeUndefined();
    pool.reportUnreachable("http://b", "heartbeat", failure);
    pool.reportUnreachable("http://c", "heartbeat", failure);
    expect(pool.current).toBe("http://a");
    expect(lines.filter((l) => l["msg"] === "api.failover").map((l) => [l["fromUrl"], l["toUrl"]])).toEqual([
      ["http://a", "http://b"],
      ["http://b", "http://c"],
      ["http://c", "http://a"],
    ]);
  });
});

describe("deliveryOfFetchFailure", () => {
  const fetchFailure = (cause: unknown) => new TypeError("fetch failed", { cause });
  const sysError = (code: string) => Object.assign(new Error(code), { code });

  it("is not_sent only when the connection provably never opened", () => {
    expect(deliveryOfFetchFailure(fetchFailure(sysError("ECONNREFUSED")), false)).toBe("not_sent");
    expect(deliveryOfFetchFailure(fetchFailure(sysError("ENOTFOUND")), false)).toBe("not_sent");
    expect(deliveryOfFetchFailure(fetchFailure(new AggregateError([sysError("ECONNREFUSED"), sysError("ECONNREFUSED")])), false)).toBe(
      "not_sent",
    );
  });

  it("is unknown after a reset, a closed socket, a mixed aggregate, a cause without code, or a timeout", () => {
    expect(deliveryOfFetchFailure(fetchFailure(sysError("ECONNRESET")), false)).toBe("unknown");
    expect(deliveryOfFetchFailure(fetchFailure(sysError("UND_ERR_SOCKET")), false)).toBe("unknown");
    expect(deliveryOfFetchFailure(fetchFailure(new AggregateError([sysError("ECONNREFUSED"), sysError("ECONNRESET")])), false)).toBe(
      "unknown",
    );
    expect(deliveryOfFetchFailure(fetchFailure(new Error("?")), false)).toBe("unknown");
    expect(deliveryOfFetchFailure(fetchFailure(sysError("ECONNREFUSED")), true)).toBe("unknown");
  });
});
