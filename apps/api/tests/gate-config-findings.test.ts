/**
 * The attack battery's configuration findings (docs/DESIGN.md §10), through the API process itself:
 * a `__proto__` (or `constructor`, `prototype`) key in the bindings file, and a keys file or operator
 * credentials file that group or others may read, each end the start with one `config.invalid` line
 * on stderr and exit 2, before the store is created (no table, no file written).
 */
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const API_DIR = fileURLToPath(new URL("..", import.meta.url));
const SECRET = "test-config-secret-0123456789abcdef";
/** A bound for a hang of one tsx start on the shared 2-core machine (execFile kills it then), not a timing assertion. */
const START_TIMEOUT_MS = 150_000;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-gate-config-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Starts `src/main.ts` with `env`; resolves its exit code and stderr. */
function startApi(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return promisify(execFile)(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: API_DIR,
    env: { ...process.env, MOSOO_DB_FILE: join(dir, "api.db"), MOSOO_PORT: "0", ...env },
    timeout: START_TIMEOUT_MS,
  }).then(
    () => ({ code: 0, stderr: "" }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
}

/** Writes `content` as JSON to `name` in the test folder with `mode`. */
function file(name: string, content: string, mode: number): string {
  const path = join(dir, name);
  writeFileSync(path, content, { mode });
  chmodSync(path, mode); // the umask may have narrowed it
  return path;
}

describe("the API refuses at startup, one config.invalid line, exit 2, no store created", () => {
  it.each(["__proto__", "constructor", "prototype"])(
    'a "%s" key in the bindings file (JSON.parse keeps it; building the record would drop it silently)',
    async (key) => {
      const bindings = file(
        "bindings.json",
        `{"bindings": {"tracker": {"adapterId": "mcp-convention"}, "${key}": {"adapterId": "mcp-convention"}}}`,
        0o644,
      );
      const { code, stderr } = await startApi({ MOSOO_EFFECT_RECONCILIATION: "on", MOSOO_RECONCILIATION_BINDINGS_FILE: bindings });
      expect({ code, stderr }).toEqual({
        code: 2,
        stderr: `config.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: bindings.${key}: the key "${key}" is not allowed\n`,
      });
      expect(existsSync(join(dir, "api.db"))).toBe(false);
    },
    START_TIMEOUT_MS,
  );

  it.each([
    ["the keys file", "MOSOO_API_KEYS_FILE", JSON.stringify({ keys: [{ name: "agent", secret: SECRET, scopes: ["runs:read"] }] })],
    [
      "the operator credentials file",
      "MOSOO_OPERATOR_CREDENTIALS_FILE",
      JSON.stringify({ credentials: [{ name: "alice", token: SECRET, scopes: ["read"] }] }),
    ],
  ])(
    "%s readable by group or others (0640, 0644); the line never carries the secret",
    async (_what, variable, content) => {
      for (const mode of [0o640, 0o644]) {
        const path = file("credentials.json", content, mode);
        const { code, stderr } = await startApi({ [variable]: path });
        expect({ code, stderr }).toEqual({
          code: 2,
          stderr: `config.invalid: ${variable}: ${path} is readable by group or others (mode 0${mode.toString(8)}); chmod 600 it\n`,
        });
        expect(existsSync(join(dir, "api.db"))).toBe(false);
      }
    },
    2 * START_TIMEOUT_MS,
  );
});
