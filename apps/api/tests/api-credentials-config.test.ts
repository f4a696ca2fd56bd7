/**
 * Credentials in the API's config (docs/DESIGN.md §10): `MOSOO_API_KEYS` and the keys file
 * (`MOSOO_API_KEYS_FILE`, zod-validated), secrets of at least 16 characters never echoed, and a
 * non-loopback `MOSOO_HOST` refused without API keys. Every refusal is one line `config.invalid: ...`
 * (the process prints it and exits 2, checked once against the real entry point below).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, isLoopbackHost, loadApiConfig } from "../src/config/api-config.js";

const SECRET = "0123456789abcdef-secret";
let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function configError(env: Record<string, string>): string {
  try {
    loadApiConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}

function keysFile(content: string): string {
  dir ??= mkdtempSync(join(tmpdir(), "mosoo-keys-"));
  const file = join(dir, "keys.json");
  writeFileSync(file, content, { mode: 0o600 });
  return file;
}

describe("API keys in the config", () => {
  it("parses MOSOO_API_KEYS (name:secret:scope+scope, comma-separated) and a keys file together", () => {
    const file = keysFile(JSON.stringify({ keys: [{ name: "ops-dash", secret: `file-${SECRET}`, scopes: ["metrics:read"] }] }));
    const c = loadApiConfig({
      MOSOO_API_KEYS: `agent:${SECRET}:runs:write+runs:read, cleaner:other-${SECRET}:runs:delete`,
      MOSOO_API_KEYS_FILE: file,
    });
    expect(c.auth.apiKeys).toEqual([
      { name: "agent", secret: SECRET, scopes: ["runs:write", "runs:read"] },
      { name: "cleaner", secret: `other-${SECRET}`, scopes: ["runs:delete"] },
      { name: "ops-dash", secret: `file-${SECRET}`, scopes: ["metrics:read"] },
    ]);
    expect(c.auth).toMatchObject({
      metricsPublic: false,
      driverEnrollmentToken: undefined,
      driverRegisterPerMinute: 30,
      driverUnconnectedTtlMs: 3_600_000,
    });
  });

  it("reads a key restricted to Driver instances from the keys file", () => {
    const file = keysFile(
      JSON.stringify({ keys: [{ name: "team-a", secret: SECRET, scopes: ["runs:write"], drivers: ["01JDZZZZZZZZZZZZZZZZZZZZZZ"] }] }),
    );
    expect(loadApiConfig({ MOSOO_API_KEYS_FILE: file }).auth.apiKeys).toEqual([
      { name: "team-a", secret: SECRET, scopes: ["runs:write"], drivers: ["01JDZZZZZZZZZZZZZZZZZZZZZZ"] },
    ]);
    expect(
      configError({
        MOSOO_API_KEYS_FILE: keysFile(
          JSON.stringify({ keys: [{ name: "a", secret: SECRET, scopes: ["runs:write"], drivers: ["driver-1"] }] }),
        ),
      }),
    ).toMatch(/^config\.invalid: MOSOO_API_KEYS_FILE: .*keys\.0\.drivers\.0: expected a 26-character ULID$/);
  });

  it.each([
    ["no scopes part", `agent:${SECRET}`],
    ["an unknown scope", `agent:${SECRET}:runs:everything`],
    ["a short secret", "agent:short:runs:read"],
    ["a bad name", `a gent:${SECRET}:runs:read`],
    ["a duplicate name", `a:${SECRET}:runs:read,a:x${SECRET}:runs:read`],
    ["a reused secret", `a:${SECRET}:runs:read,b:${SECRET}:runs:read`],
  ])("refuses MOSOO_API_KEYS with %s in one line that never echoes a secret", (_what, value) => {
    const message = configError({ MOSOO_API_KEYS: value });
    expect(message).toMatch(/^config\.invalid: MOSOO_API_KEYS: /);
    expect(message).not.toContain("\n");
    expect(message).not.toContain(SECRET);
    expect(message).not.toContain("short");
  });

  it.each([
    ["not JSON", "{keys: ["],
    ["not an object of keys", JSON.stringify([{ name: "a", secret: SECRET, scopes: ["runs:read"] }])],
    ["an unknown field", JSON.stringify({ keys: [{ name: "a", secret: SECRET, scopes: ["runs:read"], admin: true }] })],
    ["an empty scope list", JSON.stringify({ keys: [{ name: "a", secret: SECRET, scopes: [] }] })],
    ["a short secret", JSON.stringify({ keys: [{ name: "a", secret: "short", scopes: ["runs:read"] }] })],
    [
      "a duplicate name",
      JSON.stringify({
        keys: [
          { name: "a", secret: SECRET, scopes: ["runs:read"] },
          { name: "a", secret: `x${SECRET}`, scopes: ["runs:read"] },
        ],
      }),
    ],
  ])("refuses a keys file with %s in one line naming MOSOO_API_KEYS_FILE", (_what, content) => {
    const message = configError({ MOSOO_API_KEYS_FILE: keysFile(content) });
    expect(message).toMatch(/^config\.invalid: MOSOO_API_KEYS_FILE: /);
    expect(message).not.toContain("\n");
    expect(message).not.toContain(SECRET);
  });

  it.each(["__proto__", "constructor", "prototype"])('refuses a keys file with a "%s" key, as bodies do', (key) => {
    const message = configError({
      MOSOO_API_KEYS_FILE: keysFile(`{"keys": [{"name": "a", "secret": "${SECRET}", "scopes": ["runs:read"], "${key}": {}}]}`),
    });
    expect(message).toMatch(new RegExp(`^config\\.invalid: MOSOO_API_KEYS_FILE: .*: keys\\.0\\.${key}: the key "${key}" is not allowed$`));
    expect(message).not.toContain(SECRET);
  });

  it("refuses a keys file that is missing or not a regular file", () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-keys-"));
    expect(configError({ MOSOO_API_KEYS_FILE: join(dir, "absent.json") })).toMatch(
      /^config\.invalid: MOSOO_API_KEYS_FILE: cannot read .*ENOENT$/,
    );
    mkdirSync(join(dir, "a-dir"));
    expect(configError({ MOSOO_API_KEYS_FILE: join(dir, "a-dir") })).toMatch(
      /^config\.invalid: MOSOO_API_KEYS_FILE: .* is not a regular file$/,
    );
  });

  it.each([
    ["only empty entries", ",,"],
    ["an empty entry between two keys", `a:${SECRET}:runs:read,,b:x${SECRET}:runs:read`],
    ["a trailing comma", `a:${SECRET}:runs:read,`],
    ["a blank entry", `a:${SECRET}:runs:read, ,b:x${SECRET}:runs:read`],
  ])("refuses MOSOO_API_KEYS with %s (it was accepted as no keys)", (_what, value) => {
    const message = configError({ MOSOO_API_KEYS: value });
    expect(message).toMatch(/^config\.invalid: MOSOO_API_KEYS: entry \d+ is empty \(a stray comma\?\); expected name:secret:scope\+scope$/);
    expect(message).not.toContain(SECRET);
  });

  it.each([
    [
      "an API key equal to the operator token",
      { MOSOO_API_KEYS: `agent:${SECRET}:runs:read`, MOSOO_OPERATOR_TOKEN: SECRET },
      "config.invalid: MOSOO_API_KEYS: key agent reuses the secret of MOSOO_OPERATOR_TOKEN; every credential needs its own secret",
    ],
    [
      "an API key equal to the enrollment token",
      { MOSOO_API_KEYS: `agent:${SECRET}:runs:read`, MOSOO_DRIVER_ENROLLMENT_TOKEN: SECRET },
      "config.invalid: MOSOO_API_KEYS: key agent reuses the secret of MOSOO_DRIVER_ENROLLMENT_TOKEN; every credential needs its own secret",
    ],
    [
      "the operator token equal to the enrollment token",
      { MOSOO_OPERATOR_TOKEN: SECRET, MOSOO_DRIVER_ENROLLMENT_TOKEN: SECRET },
      "config.invalid: MOSOO_DRIVER_ENROLLMENT_TOKEN: reuses the secret of MOSOO_OPERATOR_TOKEN; every credential needs its own secret",
    ],
  ])("refuses %s (one secret, two credential kinds), never echoing it", (_what, env, expected) => {
    expect(configError(env)).toBe(expected);
  });

  it("refuses a keys-file key whose secret is the operator token, naming MOSOO_API_KEYS_FILE", () => {
    const file = keysFile(JSON.stringify({ keys: [{ name: "ops-dash", secret: SECRET, scopes: ["metrics:read"] }] }));
    expect(configError({ MOSOO_API_KEYS_FILE: file, MOSOO_OPERATOR_TOKEN: SECRET })).toBe(
      "config.invalid: MOSOO_API_KEYS_FILE: key ops-dash reuses the secret of MOSOO_OPERATOR_TOKEN; every credential needs its own secret",
    );
    // distinct secrets are accepted
    expect(
      loadApiConfig({ MOSOO_API_KEYS_FILE: file, MOSOO_OPERATOR_TOKEN: `op-${SECRET}`, MOSOO_DRIVER_ENROLLMENT_TOKEN: `enr-${SECRET}` })
        .auth.apiKeys,
    ).toHaveLength(1);
  });

  // `readBearer` takes `\S+`: a credential with whitespace or a control character inside could never authenticate.
  it.each([
    ["MOSOO_OPERATOR_TOKEN", "a space", "0123456789 abcdef-op"],
    ["MOSOO_OPERATOR_TOKEN", "a tab", "0123456789\tabcdef-op"],
    ["MOSOO_OPERATOR_TOKEN", "a control character (DEL)", "0123456789\u007fabcdef-op"],
    ["MOSOO_DRIVER_ENROLLMENT_TOKEN", "a space", "0123456789 abcdef-enr"],
    ["MOSOO_DRIVER_ENROLLMENT_TOKEN", "a NUL-like control character", "0123456789\u0001abcdef-enr"],
    ["MOSOO_DRIVER_ENROLLMENT_TOKEN", "a no-break space", "0123456789\u00a0abcdef-enr"],
  ])("refuses %s with %s inside, naming the variable, never the secret", (name, _what, value) => {
    const message = configError({ [name]: value });
    expect(message).toBe(`config.invalid: ${name}: may not contain whitespace or control characters (a bearer credential is one token)`);
  });

  it("still ignores whitespace around a token (e.g. a trailing newline from a secrets file)", () => {
    const operators = loadApiConfig({ MOSOO_OPERATOR_TOKEN: `  op-${SECRET}\n` }).auth.operators;
    expect(operators.identify(`op-${SECRET}`)?.name).toBe("operator");
  });

  it.each([
    ["MOSOO_API_KEYS", "a space in a secret", { MOSOO_API_KEYS: "agent:0123456789 abcdef-key:runs:read" }],
    ["MOSOO_API_KEYS", "a control character in a secret", { MOSOO_API_KEYS: "agent:0123456789\u0007abcdef-key:runs:read" }],
    ["MOSOO_API_KEYS", "a duplicate scope", { MOSOO_API_KEYS: `agent:${SECRET}:runs:write+runs:write` }],
  ])("refuses %s with %s", (name, _what, env) => {
    const message = configError(env);
    expect(message).toMatch(new RegExp(`^config\\.invalid: ${name}: `));
    expect(message).not.toContain("abcdef-key");
    expect(message).not.toContain(SECRET);
  });

  it("refuses a keys-file key with a duplicate scope or a tab in its secret", () => {
    const dup = configError({
      MOSOO_API_KEYS_FILE: keysFile(JSON.stringify({ keys: [{ name: "a", secret: SECRET, scopes: ["runs:read", "runs:read"] }] })),
    });
    expect(dup).toMatch(/^config\.invalid: MOSOO_API_KEYS_FILE: .*duplicate scope runs:read/);
    const tab = configError({
      MOSOO_API_KEYS_FILE: keysFile(JSON.stringify({ keys: [{ name: "a", secret: "0123456789\tabcdef-key", scopes: ["runs:read"] }] })),
    });
    expect(tab).toMatch(/^config\.invalid: MOSOO_API_KEYS_FILE: /);
    expect(tab).not.toContain("abcdef-key");
  });

  it("refuses a short enrollment token without echoing it", () => {
    const message = configError({ MOSOO_DRIVER_ENROLLMENT_TOKEN: "too-short" });
    expect(message).toMatch(/^config\.invalid: MOSOO_DRIVER_ENROLLMENT_TOKEN: /);
    expect(message).not.toContain("too-short");
  });
});

describe("binding to a host other machines can reach", () => {
  it.each(["0.0.0.0", "::", "192.168.1.10", "example.org"])("refuses MOSOO_HOST=%s without API keys", (host) => {
    expect(configError({ MOSOO_HOST: host })).toBe(
      `config.invalid: MOSOO_HOST: ${host} is not a loopback address; set MOSOO_API_KEYS or MOSOO_API_KEYS_FILE before binding to it`,
    );
    expect(loadApiConfig({ MOSOO_HOST: host, MOSOO_API_KEYS: `agent:${SECRET}:runs:read` }).host).toBe(host);
  });

  it.each(["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"])("allows loopback %s without keys", (host) => {
    expect(isLoopbackHost(host)).toBe(true);
    expect(loadApiConfig({ MOSOO_HOST: host }).host).toBe(host);
  });

  it('the API process refuses MOSOO_API_KEYS=",," with one line and exit 2, as every other startup refusal', async () => {
    const apiDir = join(dirname(fileURLToPath(import.meta.url)), "..");
    const res = await promisify(execFile)(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: apiDir,
      env: { ...process.env, MOSOO_API_KEYS: ",,", MOSOO_API_KEYS_FILE: "" },
    }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(res).toEqual({
      code: 2,
      stderr: "config.invalid: MOSOO_API_KEYS: entry 1 is empty (a stray comma?); expected name:secret:scope+scope\n",
    });
  }, 60_000);

  it("the API process prints that one line and exits 2", async () => {
    const apiDir = join(dirname(fileURLToPath(import.meta.url)), "..");
    const res = await promisify(execFile)(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: apiDir,
      env: { ...process.env, MOSOO_HOST: "0.0.0.0", MOSOO_API_KEYS: "", MOSOO_API_KEYS_FILE: "" },
    }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(res).toEqual({
      code: 2,
      stderr:
        "config.invalid: MOSOO_HOST: 0.0.0.0 is not a loopback address; set MOSOO_API_KEYS or MOSOO_API_KEYS_FILE before binding to it\n",
    });
  }, 60_000);
});
