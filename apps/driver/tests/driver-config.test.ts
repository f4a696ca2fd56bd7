import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { McpConfigSchema } from "../src/driver-config.contract.js";
import { DriverConfigError, loadMcpConfigFile, parseMcpConfig, resolveApiUrls } from "../src/driver-config.loader.js";

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

describe("API URLs (--api-url, MOSOO_API_URLS, MOSOO_API_URL)", () => {
  const resolve = (flags: string[], env: Record<string, string | undefined> = {}) => resolveApiUrls({ flags, env });

  it("takes repeated flags in order, normalized (trailing slash, case, default port), and comma-separated entries", () => {
    expect(resolve(["http://10.0.0.1:8787/", "HTTP://API-2.Example:80"])).toEqual({
      urls: ["http://10.0.0.1:8787", "http://api-2.example"],
      source: "--api-url",
    });
    expect(resolve(["http://a:1, http://b:2"]).urls).toEqual(["http://a:1", "http://b:2"]);
    expect(resolve(["https://gw.example/mosoo/"]).urls).toEqual(["https://gw.example/mosoo"]);
  });

  it("reads MOSOO_API_URLS, else MOSOO_API_URL, when no flag is given; a flag wins over both; an empty variable is unset", () => {
    const env = { MOSOO_API_URLS: "http://a:1,http://b:2", MOSOO_API_URL: "http://c:3" };
    expect(resolve([], env)).toEqual({ urls: ["http://a:1", "http://b:2"], source: "MOSOO_API_URLS" });
    expect(resolve([], { MOSOO_API_URL: "http://c:3" })).toEqual({ urls: ["http://c:3"], source: "MOSOO_API_URL" });
    expect(resolve([], { MOSOO_API_URLS: "", MOSOO_API_URL: "http://c:3" }).source).toBe("MOSOO_API_URL");
    expect(resolve(["http://d:4"], env)).toEqual({ urls: ["http://d:4"], source: "--api-url" });
  });

  it("refuses a missing list with one line naming every way to give one", () => {
    expectConfigError(() => resolve([], {}), /^no API URL: give --api-url <url> \(repeatable\) or set MOSOO_API_URLS .* or MOSOO_API_URL$/);
  });

  it.each([
    ["http://a:1,,http://b:2", /^MOSOO_API_URLS: entry 2 is empty \(a stray comma\?\)$/],
    ["http://a:1,", /^MOSOO_API_URLS: entry 2 is empty/],
    ["http://a:1,ftp://b", /^MOSOO_API_URLS: entry 2 of 2: expected an http:\/\/ or https:\/\/ URL$/],
    ["not a url", /^MOSOO_API_URLS: entry 1 of 1: expected an http/],
    ["http://user:secret@a:1", /^MOSOO_API_URLS: entry 1 of 1: may not contain credentials/],
    ["http://a:1/?x=1", /^MOSOO_API_URLS: entry 1 of 1: may not have a query/],
    ["http://a:1/#top", /^MOSOO_API_URLS: entry 1 of 1: may not have a query \(\?…\) or fragment/],
    ["http://a:1,http://A:1/", /^MOSOO_API_URLS: entry 2 of 2: the same URL as entry 1$/],
  ])("refuses MOSOO_API_URLS=%j with one line naming the entry", (list, pattern) => {
    expectConfigError(() => resolve([], { MOSOO_API_URLS: list }), pattern);
  });

  it("never echoes an entry (it could carry a credential) and bounds the list", () => {
    try {
      resolve(["http://user:hunter2-secret@a:1"]);
      throw new Error("expected a DriverConfigError");
    } catch (error) {
      expect((error as Error).message).not.toContain("hunter2");
    }
    const many = Array.from({ length: 17 }, (_, i) => `http://h${i}:1`);
    expectConfigError(() => resolve(many), /^--api-url: at most 16 API URLs$/);
  });
});
