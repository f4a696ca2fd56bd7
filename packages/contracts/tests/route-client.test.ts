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

  it("refuses an answer that is not JSON as api.invalid_answer", async () => {
    const url = await serve((_req, res) => res.end("<html>not the API</html>"));
    const err = await callError(callRoute(SYSTEM_API.health, {}, { baseUrl: url, timeoutMs: 10_000 }));
    expect(err.code).toBe("api.invalid_answer");
  });
});
