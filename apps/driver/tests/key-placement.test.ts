import { DEFAULT_KEY_PLACEMENT, newUlid } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import { DriverConfigError, parseMcpConfig } from "../src/driver-config.loader.js";
import { McpConnections, placeIdempotencyKey } from "../src/mcp-connections.js";

describe("idempotency key placement per MCP server", () => {
  it("places the key in the default _meta name, another _meta name, or a tool argument; the agent's arguments are not changed", () => {
    const key = newUlid();
    const args = Object.freeze({ title: "t", amount: 3 });
    expect(placeIdempotencyKey(DEFAULT_KEY_PLACEMENT, args, key)).toEqual({ arguments: args, _meta: { "io.mosoo/idempotency-key": key } });
    expect(placeIdempotencyKey({ in: "meta", name: "idempotency-key" }, args, key)).toEqual({ arguments: args, _meta: { "idempotency-key": key } });
    expect(placeIdempotencyKey({ in: "argument", name: "idempotency_key" }, args, key)).toEqual({ arguments: { title: "t", amount: 3, idempotency_key: key }, _meta: {} });
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
      expect(() => parseMcpConfig(JSON.stringify({ servers: { s: { type: "http", url: "http://127.0.0.1:1/mcp", idempotencyKey } } }), "mcp.json")).toThrow(DriverConfigError);
    }
  });
});
