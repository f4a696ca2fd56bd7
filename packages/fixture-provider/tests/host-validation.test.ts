import { request } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureProvider, type FixtureProviderHandle } from "../src/index.js";

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "host-validation-test", version: "0" } },
});

describe("DNS rebinding protection", () => {
  let dir: string;
  let handle: FixtureProviderHandle;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "fixture-host-"));
    handle = await startFixtureProvider({ dbFile: join(dir, "fixture.sqlite") });
  });
  afterAll(async () => {
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One request through node:http (fetch would drop a `Host` header); answers status and parsed body. */
  function send(method: string, url: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: unknown }> {
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text === "" ? undefined : (JSON.parse(text) as unknown) }));
      });
      req.on("error", reject);
      req.end(body);
    });
  }

  function post(headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
    const base = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    return send("POST", handle.url, { ...base, ...headers }, initialize);
  }

  it("answers a loopback Host and Origin", async () => {
    const response = await post({ host: `localhost:${handle.port}`, origin: `http://127.0.0.1:${handle.port}` });
    expect(response.status).toBe(200);
  });

  it.each([
    ["a foreign Host", { host: "evil.example.com" }, "invalid Host header"],
    ["a foreign Origin", { origin: "http://evil.example.com" }, "invalid Origin header"],
    ["Origin null", { origin: "null" }, "invalid Origin header"],
  ])("refuses %s with 403 and a JSON-RPC error", async (_name, headers, message) => {
    const response = await post(headers);
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ jsonrpc: "2.0", error: { code: -32000, message }, id: null });
  });

  it("guards the control API too", async () => {
    const response = await send("GET", `${handle.controlUrl}/faults`, { host: "evil.example.com" });
    expect(response.status).toBe(403);
  });
});
