// An error summary (printed at startup, stored with lookup records) never carries a URL's credentials or query.
import { describe, expect, it } from "vitest";
import { summarizeError } from "../src/host/error-message.js";

describe("summarizeError hides what a URL may carry", () => {
  it.each([
    [
      "credentials",
      new TypeError("Request cannot be constructed from a URL that includes credentials: http://u:SECRET@127.0.0.1:5999/mcp"),
      "TypeError: Request cannot be constructed from a URL that includes credentials: http://***@127.0.0.1:5999/mcp",
    ],
    [
      "a query",
      new Error("fetch failed for https://provider.test/mcp?token=SECRET&x=1"),
      "Error: fetch failed for https://provider.test/mcp?***",
    ],
    ["both, quoted", new Error("bad url 'http://a:SECRET@h/p?k=SECRET'"), "Error: bad url 'http://***@h/p?***'"],
  ])("%s", (_label, error, expected) => {
    expect(summarizeError(error)).toBe(expected);
    expect(summarizeError(error)).not.toContain("SECRET");
  });

  it("leaves a message without a URL as it is", () => {
    expect(summarizeError(new Error("lookup timed out after 2000 ms"))).toBe("Error: lookup timed out after 2000 ms");
  });
});
