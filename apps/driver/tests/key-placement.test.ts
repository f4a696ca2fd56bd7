import { DEFAULT_KEY_PLACEMENT, KeyPlacementSchema, newUlid } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import { DriverConfigError, parseMcpConfig } from "../src/driver-config.loader.js";
import { McpConnections, placeIdempotencyKey } from "../src/mcp-connections.js";
import { handleMcpExecuteCommand } from "../src/mcp-execute.handler.js";
import { captureLogger } from "./helpers/log-capture.js";
import { mcpExecuteEnvelope, RecordingApi } from "./helpers/recording-api.js";
import { inMemoryTransportFactory, ToolRecorder } from "./helpers/recording-mcp-server.js";

describe("idempotency key placement per MCP server", () => {
  it("places the key in the default _meta name, another _meta name, or a tool argument; the agent's arguments are not changed", () => {
    const key = newUlid();
    const args = Object.freeze({ title: "t", amount: 3 });
    expect(placeIdempotencyKey(DEFAULT_KEY_PLACEMENT, args, key)).toEqual({ arguments: args, _meta: { "io.mosoo/idempotency-key": key } });
    expect(placeIdempotencyKey({ in: "meta", name: "idempotency-key" }, args, key)).toEqual({
      arguments: args,
      _meta: { "idempotency-key": key },
    });
    expect(placeIdempotencyKey({ in: "argument", name: "idempotency_key" }, args, key)).toEqual({
      arguments: { title: "t", amount: 3, idempotency_key: key },
      _meta: {},
    });
    expect(args).toEqual({ title: "t", amount: 3 });
  });

  it("the Driver's MCP config names the placement per server; the default is ours", () => {
    const config = parseMcpConfig(
      JSON.stringify({
        servers: {
          checkout: { type: "http", url: "http://127.0.0.1:1/mcp", idempotencyKey: { in: "meta", name: "idempotency_key" } },
          payments: { type: "stdio", command: "node", idempotencyKey: { in: "argument", name: "idempotency_key" } },
          tracker: { type: "http", url: "http://127.0.0.1:2/mcp" },
        },
      }),
      "mcp.json",
    );
    const mcp = new McpConnections(config);
    expect(mcp.keyPlacement("checkout")).toEqual({ in: "meta", name: "idempotency_key" });
    expect(mcp.keyPlacement("payments")).toEqual({ in: "argument", name: "idempotency_key" });
    expect(mcp.keyPlacement("tracker")).toEqual(DEFAULT_KEY_PLACEMENT);
  });

  it("refuses a placement that is not meta or argument, or has no name", () => {
    for (const idempotencyKey of [{ in: "header", name: "x" }, { in: "argument" }, { in: "meta", name: "" }]) {
      expect(() =>
        parseMcpConfig(JSON.stringify({ servers: { s: { type: "http", url: "http://127.0.0.1:1/mcp", idempotencyKey } } }), "mcp.json"),
      ).toThrow(DriverConfigError);
    }
  });
});

describe("key placement names and argument clashes", () => {
  const config = (idempotencyKey: unknown) =>
    JSON.stringify({ servers: { s: { type: "http", url: "http://127.0.0.1:1/mcp", idempotencyKey } } });
  const refusal = (idempotencyKey: unknown): string => {
    try {
      parseMcpConfig(config(idempotencyKey), "mcp.json");
    } catch (error) {
      expect(error).toBeInstanceOf(DriverConfigError);
      return (error as Error).message;
    }
    throw new Error("expected a DriverConfigError");
  };

  it.each([
    ["argument", "__proto__"],
    ["meta", "__proto__"],
    ["argument", "constructor"],
  ])("refuses %s name %s (it would set a prototype, not add a field)", (where, name) => {
    expect(refusal({ in: where, name })).toMatch(/__proto__, constructor and prototype are reserved by JavaScript objects/);
  });

  it.each([
    ["meta", "a lone high surrogate", "idempotency\ud800key"],
    ["argument", "a lone low surrogate", "idempotency_key\udc00"],
  ])("refuses a %s name with %s (not well-formed UTF-16), as the API's input rules do", (where, _what, name) => {
    expect(refusal({ in: where, name })).toMatch(/no lone surrogates/);
    expect(KeyPlacementSchema.safeParse({ in: where, name }).error?.issues[0]?.message).toMatch(
      /^a key placement name must be well-formed UTF-16/,
    );
  });

  it("refuses _meta.progressToken: MCP reserves it for progress notifications", () => {
    expect(refusal({ in: "meta", name: "progressToken" })).toMatch(/progressToken is reserved by MCP/);
    // as a tool argument the name is the tool's business
    expect(() => parseMcpConfig(config({ in: "argument", name: "progressToken" }), "mcp.json")).not.toThrow();
  });

  it.each([
    ["a right-to-left override U+202E", "idem\u202Epotency_key"],
    ["a first-strong isolate U+2068", "\u2068idempotency_key"],
    ["a right-to-left mark U+200F", "idempotency_key\u200F"],
    ["a zero-width space U+200B", "idempotency\u200B_key"],
    ["a newline", "idempotency\nkey"],
  ])("refuses an argument name with %s", (_what, name) => {
    expect(refusal({ in: "argument", name })).toMatch(/may not contain control or invisible format characters/);
  });

  it("refuses a name with surrounding whitespace", () => {
    expect(refusal({ in: "argument", name: " idempotency_key" })).toMatch(/may not start or end with whitespace/);
  });

  it("a call whose own arguments already use the key's argument name fails mcp.server_unavailable (key_argument_conflict) before any claim; nothing is sent", async () => {
    const events: string[] = [];
    const api = new RecordingApi(events);
    const recorder = new ToolRecorder(events);
    const mcpConfig = parseMcpConfig(
      JSON.stringify({
        servers: { issues: { type: "http", url: "http://127.0.0.1:9/mcp", idempotencyKey: { in: "argument", name: "title" } } },
      }),
      "mcp.json",
    );
    const mcp = new McpConnections(mcpConfig, { createTransport: inMemoryTransportFactory(recorder) });
    try {
      const { logger } = captureLogger();
      const outcome = await handleMcpExecuteCommand(mcpExecuteEnvelope(), {
        api,
        mcp,
        connectionId: newUlid(),
        logger,
        toolTimeoutMs: 2_000,
      });
      expect(outcome).toMatchObject({
        status: "failed",
        effectId: null,
        error: { code: "mcp.server_unavailable", retryable: false, details: { serverId: "issues", reason: "key_argument_conflict" } },
      });
      expect(outcome.status === "failed" && outcome.error.message).toContain('already has an argument "title"');
      expect(recorder.calls).toHaveLength(0);
      expect(events).toEqual(["api:commandUpdate:accepted", "api:commandUpdate:failed"]);
    } finally {
      await mcp.closeAll();
    }
  });
});
