/**
 * What an adapter says through the host's log (docs/DESIGN.md §4): credentials the host knows are cut
 * out by content, values under credential-like keys by key, and every entry is bounded.
 */
import { describe, expect, it } from "vitest";
import { createRedactor, hostSecrets } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.redaction.js";

describe("adapter log redaction", () => {
  const redactor = createRedactor(["provider-secret-123", "abc"]);

  it("replaces known secrets in text and in nested strings, and values under credential-like keys", () => {
    expect(redactor.text("token=provider-secret-123;")).toBe("token=[redacted];");
    expect(redactor.fields({ a: { b: ["x provider-secret-123 y"] }, apiKey: "anything", Authorization: "Bearer z" })).toEqual({
      a: { b: ["x [redacted] y"] },
      apiKey: "[redacted]",
      Authorization: "[redacted]",
    });
    // a value shorter than 6 characters is not treated as a secret (it would redact ordinary words)
    expect(redactor.text("abc")).toBe("abc");
  });

  it("redacts the start of a secret that ends a text cut inside it, however long the secret", () => {
    const long = "a1b2c3d4".repeat(150); // 1,200 characters, cut by the sandboxed process's 1,000-character bound
    const cut = createRedactor([long, "provider-secret-123"]);
    const sent = `Error: 401; sent Authorization: Bearer ${long}`.slice(0, 1_000);
    expect(cut.text(sent, 2_000)).toBe("Error: 401; sent Authorization: Bearer [redacted]");
    expect(cut.text("x Bearer provider-secr", 2_000)).toBe("x Bearer [redacted]");
    // fewer than 12 characters of it, or the secret elsewhere than at the end: left as it is
    expect(cut.text("x Bearer provider-se")).toBe("x Bearer provider-se");
    expect(cut.text("provider-secr is a prefix, not an end")).toBe("provider-secr is a prefix, not an end");
  });

  it("bounds strings, keys, depth and the whole entry", () => {
    expect(redactor.text("x".repeat(10_000))).toHaveLength(500);
    expect(redactor.fields({ a: { b: { c: { d: { e: 1 } } } } })).toEqual({ a: { b: { c: { d: "[omitted]" } } } });
    expect(Object.keys(redactor.fields(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]))))).toHaveLength(32);
    const wide = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, Array.from({ length: 32 }, () => "y".repeat(500))]));
    expect(redactor.fields(wide)).toEqual({ omitted: "log fields over 16 Ki characters" });
    expect(redactor.fields("not an object")).toEqual({});
  });

  it("the host's own credentials come from its environment's credential-like names (lists split on commas and colons)", () => {
    expect(
      hostSecrets({ MOSOO_OPERATOR_TOKEN: "op-token-123456", MOSOO_API_KEYS: "a:key-aaaaaa:runs,b:key-bbbbbb:runs", HOME: "/root" }),
    ).toEqual(expect.arrayContaining(["op-token-123456", "key-aaaaaa", "key-bbbbbb"]));
    expect(hostSecrets({ HOME: "/root-directory" })).toEqual([]);
  });
});
