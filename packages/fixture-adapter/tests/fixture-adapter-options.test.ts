// The fixture adapter's `url` option follows the adapter fetch policy: a port fetch refuses (WHATWG Fetch
// "bad port", e.g. 6667) is refused when the binding is built, as `adapter.invalid_options`.
import { createAdapterRegistry } from "@mosoo/effect-reconciliation/host";
import { describe, expect, it } from "vitest";
import { fixtureIssueTrackerAdapterFactory } from "../src/index.js";

describe("fixture adapter options", () => {
  it("refuses an endpoint on a fetch-forbidden port with url.fetch_forbidden_port, and accepts a usable one", () => {
    const registry = createAdapterRegistry();
    const { id } = registry.register(fixtureIssueTrackerAdapterFactory);
    expect(() => registry.instantiate(id, { url: "http://127.0.0.1:6667/mcp" })).toThrow(
      expect.objectContaining({ code: "adapter.invalid_options", message: expect.stringContaining("url.fetch_forbidden_port: port 6667") }),
    );
    expect(registry.instantiate(id, { url: "http://127.0.0.1:6670/mcp" }).declaration.id).toBe(id);
  });
});
