import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { McpConfigSchema } from "../src/driver-config.contract.js";
import { DriverConfigError, loadMcpConfigFile, parseMcpConfig } from "../src/driver-config.loader.js";

function expectConfigError(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(DriverConfigError);
    expect((error as DriverConfigError).code).toBe("config.invalid");
    expect((error as Error).message).toMatch(pattern);
    expect((error as Error).message).not.toContain("\n");
    return;
  }
  throw new Error("expected a DriverConfigError");
}

describe("MCP config validation", () => {
  it("accepts http and stdio servers and defaults stdio args to []", () => {
    const config = parseMcpConfig(
      JSON.stringify({
        servers: {
          issues: { type: "http", url: "http://127.0.0.1:3917/mcp" },
          "files.local": { type: "stdio", command: "node", env: { A: "1" } },
        },
      }),
      "mcp.json",
    );
    expect(config.servers["issues"]).toEqual({ type: "http", url: "http://127.0.0.1:3917/mcp" });
    expect(config.servers["files.local"]).toEqual({ type: "stdio", command: "node", args: [], env: { A: "1" } });
  });

  it("refuses malformed JSON", () => {
    expectConfigError(() => parseMcpConfig("{servers:", "mcp.json"), /^MCP config mcp\.json is not valid JSON/);
  });

  it("refuses a non-http URL, naming the path of the bad field", () => {
    expectConfigError(
      () => parseMcpConfig(JSON.stringify({ servers: { issues: { type: "http", url: "file:///etc/passwd" } } }), "mcp.json"),
      /servers\.issues\.url: expected an http:\/\/ or https:\/\/ URL/,
    );
  });

  it("refuses an unknown transport type", () => {
    expectConfigError(() => parseMcpConfig(JSON.stringify({ servers: { issues: { type: "ws", url: "ws://x" } } }), "m"), /servers\.issues/);
  });

  it("refuses a server id outside [A-Za-z0-9_.-]", () => {
    expectConfigError(
      () => parseMcpConfig(JSON.stringify({ servers: { "bad id": { type: "stdio", command: "x" } } }), "m"),
      /serverId must be/,
    );
  });

  // JSON.parse keeps "__proto__" as an own key, but copying it into a parsed object sets the
  // prototype instead: the server (or header) vanished without a word. "constructor"/"prototype"
  // would be found by a plain lookup on any object. All three are refused by name.
  it.each(["__proto__", "constructor", "prototype"])("refuses the server id %s instead of dropping it", (id) => {
    const text = `{"servers":{"${id}":{"type":"http","url":"http://127.0.0.1:1/mcp"},"ok":{"type":"stdio","command":"x"}}}`;
    expectConfigError(
      () => parseMcpConfig(text, "m"),
      new RegExp(
        `^MCP config m is invalid: servers\\.${id}: the key "${id}" is not allowed \\(__proto__, constructor and prototype are reserved`,
      ),
    );
    // the contract refuses them too (for a config built without JSON.parse)
    if (id !== "__proto__") expect(McpConfigSchema.safeParse({ servers: { [id]: { type: "stdio", command: "x" } } }).success).toBe(false);
  });

  it.each([
    ["headers", `{"servers":{"s":{"type":"http","url":"http://127.0.0.1:1/mcp","headers":{"__proto__":"Bearer x","a":"b"}}}}`],
    ["env", `{"servers":{"s":{"type":"stdio","command":"x","env":{"__proto__":"1"}}}}`],
  ])("refuses a __proto__ key in %s instead of dropping it", (_where, text) => {
    expectConfigError(() => parseMcpConfig(text, "m"), /servers\.s\.(headers|env)\.__proto__: the key "__proto__" is not allowed/);
  });

  it("refuses a stdio server without a command and unknown keys (typo guard)", () => {
    expectConfigError(() => parseMcpConfig(JSON.stringify({ servers: { s: { type: "stdio", command: "" } } }), "m"), /servers\.s\.command/);
    expectConfigError(() => parseMcpConfig(JSON.stringify({ servers: { s: { type: "stdio", command: "x", argz: [] } } }), "m"), /argz/);
    expectConfigError(() => parseMcpConfig(JSON.stringify({ server: {} }), "m"), /servers|server/);
  });

  it("reports an unreadable file as config.invalid with the errno code", async () => {
    const missing = join(tmpdir(), "does-not-exist", "mcp.json");
    await expect(loadMcpConfigFile(missing)).rejects.toThrow(new RegExp(`cannot read MCP config .*mcp\\.json: ENOENT`));
    await expect(loadMcpConfigFile(missing)).rejects.toBeInstanceOf(DriverConfigError);
  });

  it("loads a valid file from disk", async () => {
    const dir = await mkdtemp(join(tmpdir(), "driver-config-"));
    const file = join(dir, "mcp.json");
    await writeFile(file, JSON.stringify({ servers: { issues: { type: "http", url: "https://mcp.example.com/mcp" } } }));
    await expect(loadMcpConfigFile(file)).resolves.toEqual({ servers: { issues: { type: "http", url: "https://mcp.example.com/mcp" } } });
  });
});
