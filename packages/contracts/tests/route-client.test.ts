// callRoute's own errors: an API that cannot be reached says why (refused, no answer in time), and a non-JSON answer.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { callRoute, RouteCallError, SYSTEM_API } from "../src/index.js";

const servers: Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

/** A local HTTP server with `handler`, listening on a free port; returns its base URL. */
async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The RouteCallError `sent` rejects with (fails the test when it resolves or rejects otherwise). */
async function callError(sent: Promise<unknown>): Promise<RouteCallError> {
  const err = await sent.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RouteCallError);
  return err as RouteCallError;
}

describe("callRoute when the API gives no usable answer", () => {
  it("names the refused connection, not only undici's 'fetch failed'", async () => {
    // a port that was just free: listen, note it, close
    const url = await serve(() => undefined);
    const closing = servers.pop()!;
    await new Promise((resolve) => closing.close(resolve));
    const err = await callError(callRoute(SYSTEM_API.health, {}, { baseUrl: url, timeoutMs: 10_000 }));
    expect(err.code).toBe("api.unreachable");
    expect(err.message).toContain(url);
    expect(err.message).toMatch(/ECONNREFUSED/);
  });

  it("says how long it waited when the API never answers", async () => {
    const url = await serve(() => undefined); // accepts, never answers
    const err = await callError(callRoute(SYSTEM_API.health, {}, { baseUrl: url, timeoutMs: 200 }));
    expect(err.code).toBe("api.unreachable");
    expect(err.message).toBe(`${url}: no answer within 200 ms`);
  });

  it("never repeats a password of the URL or the token of a header it could not send", async () => {
    const url = await serve(() => undefined);
    const port = new URL(url).port;
    const withPassword = await callError(
      callRoute(SYSTEM_API.health, {}, { baseUrl: `http://user:s3cret@127.0.0.1:${port}`, timeoutMs: 10_000 }),
    );
    expect(withPassword.code).toBe("api.unreachable");
    expect(withPassword.message).not.toContain("s3cret");
    expect(withPassword.message).toContain("***@127.0.0.1");
    const badHeader = await callError(
      callRoute(SYSTEM_API.health, {}, { baseUrl: url, timeoutMs: 10_000, headers: { authorization: "Bearer tok\nSECRETTOKEN" } }),
    );
    expect(badHeader.code).toBe("api.unreachable");
    expect(badHeader.message).not.toContain("SECRETTOKEN");
    expect(badHeader.message).toContain("could not be built");
  });

  it("says why fetch refuses a port (9 is on fetch's list of bad ports)", async () => {
    const err = await callError(callRoute(SYSTEM_API.health, {}, { baseUrl: "http://127.0.0.1:9", timeoutMs: 10_000 }));
    expect(err.message).toMatch(/bad port: fetch refuses to connect to this port/);
  });

  it("refuses an answer that is not JSON as api.invalid_answer", async () => {
    const url = await serve((_req, res) => res.end("<html>not the API</html>"));
    const err = await callError(callRoute(SYSTEM_API.health, {}, { baseUrl: url, timeoutMs: 10_000 }));
    expect(err.code).toBe("api.invalid_answer");
    expect(err.message).toBe(`${url}: HTTP 200 with a body that is not JSON`);
  });
});
