import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { newUlid } from "@mosoo/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DriverApiClient } from "../src/api-client.js";
import { ApiContractError, ApiRequestError, ApiUnavailableError, isConnectionLostError } from "../src/api-errors.js";
import { error, FakeDriverApi } from "./helpers/fake-driver-api.js";

const FAST_RETRY = { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 5 };

let api: FakeDriverApi;
beforeEach(async () => {
  api = new FakeDriverApi();
  await api.start();
});
afterEach(async () => {
  await api.stop();
});

async function connectedClient(): Promise<{ client: DriverApiClient; connectionId: string; token: string }> {
  const { driverToken } = api.seedInstance();
  const client = new DriverApiClient({ apiUrls: [`${api.url}/`], driverToken, retry: FAST_RETRY });
  const { connectionId } = await client.call("connect", {});
  return { client, connectionId, token: driverToken };
}

describe("DriverApiClient", () => {
  it("registers with the enrollment token, then sends its own bearer token and validates responses", async () => {
    const client = new DriverApiClient({ apiUrls: [api.url], retry: FAST_RETRY, enrollmentToken: "enrollment-token-0123456789" });
    const registered = await client.call("register", { body: { name: "driver-test" } });
    expect(api.requestsOf("register")[0]).toMatchObject({
      body: { name: "driver-test" },
      authorization: "Bearer enrollment-token-0123456789",
    });
    const authed = client.withDriverToken(registered.driverToken);
    const connected = await authed.call("connect", {});
    expect(connected.driverInstanceId).toBe(registered.driverInstanceId);
    expect(api.requestsOf("connect")[0]?.authorization).toBe(`Bearer ${registered.driverToken}`);
  });

  it("registers without an Authorization header when no enrollment token is configured (the API then answers 401)", async () => {
    const client = new DriverApiClient({ apiUrls: [api.url], retry: FAST_RETRY });
    await client.call("register", { body: { name: "driver-test" } });
    expect(api.requestsOf("register")[0]).toMatchObject({ authorization: undefined });
  });

  it("long-polls nextCommand with connectionId and waitMs in the query", async () => {
    const { client, connectionId } = await connectedClient();
    const answer = await client.call("nextCommand", { query: { connectionId, waitMs: 20 } });
    expect(answer).toEqual({ command: null });
    expect(api.requestsOf("nextCommand")[0]?.query).toEqual({ connectionId, waitMs: "20" });
  });

  it("maps a 4xx body to ApiRequestError {status, code} and does not retry it", async () => {
    const { client, connectionId } = await connectedClient();
    api.failNext("heartbeat", error(409, "driver.connection_superseded", "superseded"));
    const failure = await client.call("heartbeat", { body: { connectionId: connectionId } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiRequestError);
    expect(failure).toMatchObject({ status: 409, code: "driver.connection_superseded" });
    expect(isConnectionLostError(failure)).toBe(true);
    expect(api.requestsOf("heartbeat")).toHaveLength(1);
  });

  it("retries a 5xx on an idempotent call and succeeds", async () => {
    const { client, connectionId } = await connectedClient();
    api.failNext("commandUpdate", error(503, "server.unavailable", "busy"), error(500, "server.error", "oops"));
    const commandId = newUlid();
    const answer = await client.call("commandUpdate", { params: { commandId }, body: { connectionId, status: "accepted" } });
    expect(answer).toEqual({ outcome: "applied", status: "accepted" });
    expect(api.requestsOf("commandUpdate")).toHaveLength(3);
    expect(api.requestsOf("commandUpdate")[2]?.path).toBe(`/v1/drivers/commands/${commandId}/update`);
  });

  it("gives up after the bounded number of attempts", async () => {
    const { client, connectionId } = await connectedClient();
    api.failNext("heartbeat", error(503, "a", "a"), error(503, "b", "b"), error(503, "c", "c"), error(503, "d", "d"));
    await expect(client.call("heartbeat", { body: { connectionId: connectionId } })).rejects.toMatchObject({ status: 503, code: "c" });
    expect(api.requestsOf("heartbeat")).toHaveLength(3);
  });

  it("does not retry register (a repeat would mint another instance)", async () => {
    const client = new DriverApiClient({ apiUrls: [api.url], retry: FAST_RETRY });
    api.failNext("register", error(503, "server.unavailable", "busy"));
    await expect(client.call("register", { body: { name: "x" } })).rejects.toMatchObject({ status: 503 });
    expect(api.requestsOf("register")).toHaveLength(1);
  });

  it("maps a non-JSON error body to code http.<status>", async () => {
    const { client, connectionId } = await connectedClient();
    api.failNext("heartbeat", { status: 418, body: "teapot" });
    await expect(client.call("heartbeat", { body: { connectionId: connectionId } })).rejects.toMatchObject({
      status: 418,
      code: "http.418",
    });
  });

  it("refuses a response that does not match the contract", async () => {
    const { client, connectionId } = await connectedClient();
    api.failNext("effectClaim", { status: 200, body: { kind: "execute", effectId: "nope" } });
    const failure = await client.call("effectClaim", { body: { connectionId, commandId: newUlid() } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiContractError);
    expect((failure as ApiContractError).direction).toBe("response");
    expect(api.requestsOf("effectClaim")).toHaveLength(1);
  });

  it("refuses to send a request that does not match the contract", async () => {
    const { client, connectionId } = await connectedClient();
    await expect(
      client.call("effectMarkUnknown", { params: { effectId: newUlid() }, body: { connectionId, attempt: 0, reason: "x" } }),
    ).rejects.toMatchObject({
      direction: "request",
    });
    expect(api.requestsOf("effectMarkUnknown")).toHaveLength(0);
  });

  it("reports an unreachable API as ApiUnavailableError after retrying", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { driverToken } = api.seedInstance();
    const client = new DriverApiClient({ apiUrls: [`http://127.0.0.1:${port}`], driverToken, retry: FAST_RETRY });
    const failure = await client.call("heartbeat", { body: { connectionId: newUlid() } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiUnavailableError);
    expect((failure as ApiUnavailableError).message).toMatch(/ECONNREFUSED/);
  });
});
