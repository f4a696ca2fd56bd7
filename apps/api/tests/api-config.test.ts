import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadApiConfig } from "../src/config/api-config.js";

describe("API config", () => {
  it("has defaults: SQLite under ./var of the folder the command was run in, loopback host", () => {
    const c = loadApiConfig({ INIT_CWD: "/srv/mosoo" });
    expect(c).toMatchObject({ dbFile: "/srv/mosoo/var/mosoo.db", host: "127.0.0.1", port: 8787, heartbeatTtlMs: 15_000, logLevel: "info" });
    expect(loadApiConfig({}).dbFile).toBe(join(process.cwd(), "var", "mosoo.db"));
    expect(loadApiConfig({ MOSOO_DB_FILE: "/abs/x.db", INIT_CWD: "/srv/mosoo" }).dbFile).toBe("/abs/x.db");
  });

  it.each([
    ["MOSOO_PORT", "70000"],
    ["MOSOO_PORT", "abc"],
    ["MOSOO_HEARTBEAT_TTL_MS", "10"],
    ["MOSOO_LOG_LEVEL", "loud"],
    ["MOSOO_REPEAT_GUARD", "tracker"],
    ["MOSOO_REPEAT_GUARD", "tracker=999"],
    ["MOSOO_REPEAT_GUARD", "tracker=0x100000"],
    ["MOSOO_REPEAT_GUARD", "tracker=60000,tracker=70000"],
    ["MOSOO_REPEAT_GUARD", "bad server=60000"],
    ["MOSOO_REPEAT_GUARD", "tracker=600000,"],
    ["MOSOO_REPEAT_GUARD", "__proto__=600000"],
    ["MOSOO_REPEAT_GUARD", "constructor=600000"],
  ])("stops on %s=%s with one line naming the variable", (name, value) => {
    try {
      loadApiConfig({ [name]: value });
      throw new Error("expected a ConfigError");
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const message = (err as Error).message;
      expect(message.startsWith(`config.invalid: ${name}:`)).toBe(true);
      expect(message).not.toContain("\n");
    }
  });
});

describe("the repeat guard's config", () => {
  it("is off by default and parses serverId=windowMs pairs", () => {
    expect(loadApiConfig({}).repeatGuard.size).toBe(0);
    expect(loadApiConfig({ MOSOO_REPEAT_GUARD: "" }).repeatGuard.size).toBe(0);
    expect([...loadApiConfig({ MOSOO_REPEAT_GUARD: "tracker=600000, payments=86400000" }).repeatGuard]).toEqual([
      ["tracker", 600_000],
      ["payments", 86_400_000],
    ]);
  });
});

describe("API config secrets", () => {
  it("never echoes the operator token in a config error", () => {
    expect(() => loadApiConfig({ MOSOO_OPERATOR_TOKEN: "short-secret" })).toThrow(ConfigError);
    try {
      loadApiConfig({ MOSOO_OPERATOR_TOKEN: "short-secret" });
    } catch (err) {
      expect((err as Error).message).toMatch(/^config\.invalid: MOSOO_OPERATOR_TOKEN: /);
      expect((err as Error).message).not.toContain("short-secret");
    }
  });
});

describe("a config.invalid line repeats a value only for numeric and fixed-word settings", () => {
  /** The first line of the ConfigError `loadApiConfig(env)` throws. */
  function refusal(env: Record<string, string>): string {
    try {
      loadApiConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error("expected a ConfigError");
  }

  it("never echoes the value of a free-form setting (a secret pasted into the wrong variable stays unprinted)", () => {
    const message = refusal({ MOSOO_REPEAT_GUARD: "tracker=60000,,sk_live_hunter2hunter2=60000" });
    expect(message).toBe("config.invalid: MOSOO_REPEAT_GUARD: an empty entry (a stray comma) is not allowed");
    expect(message).not.toContain("hunter2");
  });

  it("still shows what was given for a number or a fixed word", () => {
    expect(refusal({ MOSOO_PORT: "70000" })).toMatch(/^config\.invalid: MOSOO_PORT: .* \(got "70000"\)$/);
    expect(refusal({ MOSOO_METRICS_PUBLIC: "yes" })).toMatch(/^config\.invalid: MOSOO_METRICS_PUBLIC: .* \(got "yes"\)$/);
  });
});
