// Adapter fetch policy: an MCP endpoint URL on a port fetch refuses (the WHATWG Fetch "bad port" list,
// e.g. 6000, 6665-6669) is refused when the adapter's options are validated, with the stable code
// `url.fetch_forbidden_port` inside `adapter.invalid_options`, not later by an opaque `fetch failed`.
import { describe, expect, it } from "vitest";
import { instantiateBinding, loadAdapterModule } from "../src/host/index.js";
import { ConventionAdapterOptionsSchema } from "../src/host/convention-adapter.js";
import { FETCH_BAD_PORTS, McpEndpointUrlSchema } from "../src/author/mcp-endpoint-url.js";

const urlOn = (port: number) => `http://127.0.0.1:${port}/mcp`;

describe("McpEndpointUrlSchema", () => {
  it("refuses every port of the bad-port list with url.fetch_forbidden_port", () => {
    for (const port of FETCH_BAD_PORTS) {
      const parsed = McpEndpointUrlSchema.safeParse(urlOn(port));
      expect(parsed.success, `port ${port}`).toBe(false);
      expect(parsed.error?.issues[0]?.message).toMatch(new RegExp(`^url\\.fetch_forbidden_port: port ${port} `));
    }
  });

  it("matches what Node's fetch refuses: each listed port fails with 'bad port' before any connection", async () => {
    for (const port of [...FETCH_BAD_PORTS].filter((p) => p !== 0)) {
      const failure = await fetch(urlOn(port)).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect((failure as { cause?: { message?: string } } | undefined)?.cause?.message, `port ${port}`).toBe("bad port");
    }
  });

  it("accepts the neighbouring ports, default ports and https", () => {
    for (const url of [
      urlOn(6664),
      urlOn(6670),
      urlOn(5999),
      urlOn(8080),
      "http://tracker.example/mcp",
      "https://tracker.example:443/mcp",
    ]) {
      expect(McpEndpointUrlSchema.safeParse(url).success, url).toBe(true);
    }
    expect(McpEndpointUrlSchema.safeParse("ftp://tracker.example/mcp").success).toBe(false);
  });

  it("the convention adapter's binding is refused at validation: adapter.invalid_options naming url.fetch_forbidden_port", async () => {
    expect(ConventionAdapterOptionsSchema.safeParse({ url: urlOn(6667) }).success).toBe(false);
    const loaded = await loadAdapterModule(
      { module: "@mosoo/effect-reconciliation/host", export: "conventionAdapterFactory" },
      import.meta.filename,
    );
    await expect(instantiateBinding(loaded, { url: urlOn(6000) }, undefined, AbortSignal.timeout(5_000))).rejects.toMatchObject({
      code: "adapter.invalid_options",
      message: expect.stringContaining("url.fetch_forbidden_port: port 6000"),
    });
  });
});
