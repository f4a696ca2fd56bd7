import { spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeDriverApi } from "./helpers/fake-driver-api.js";

const DRIVER_DIR = join(import.meta.dirname, "..");

/**
 * Bound (ms) of each test that starts the CLI (tsx src/main.ts): ~1–2 s on a quiet machine, 12–20 s at a
 * load average of 15–20 on the shared 2-core machine, so 3x+ headroom. A bound for a hang, not a timing assertion.
 */
const CLI_TIMEOUT_MS = 90_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Spawns `node --import tsx src/main.ts` from apps/driver (one process); `onStdout` may act on the output
 * (e.g. send a signal). Not the `tsx` binary: it runs the script in a child and, on SIGTERM, gives that
 * child 30 ms to acknowledge the relayed signal over IPC before it SIGKILLs it and exits 143, a timer race
 * a starved child loses on a loaded machine (seen: exit 143 instead of 0 at a load average of 18).
 */
function runCli(
  args: string[],
  onStdout?: (text: string, kill: (signal: NodeJS.Signals) => void) => void,
  env: Record<string, string> = {},
): Promise<Run> {
  // The API URL variables of the caller's shell must not leak into a test (they are a source of URLs).
  const { MOSOO_API_URLS: _urls, MOSOO_API_URL: _url, ...inherited } = process.env;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
      cwd: DRIVER_DIR,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...inherited, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      onStdout?.(stdout, (signal) => child.kill(signal));
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driver-cli-"));
});

describe("mosoo-driver CLI: bad input", () => {
  it(
    "exits 2 with one line on stderr when no API URL is given (no --api-url, MOSOO_API_URLS or MOSOO_API_URL)",
    async () => {
      const run = await runCli(["--mcp-config", "x.json"]);
      expect(run.code).toBe(2);
      expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(/^mosoo-driver: config\.invalid: no API URL: give --api-url <url> \(repeatable\) or set MOSOO_API_URLS/);
      expect(run.stderr).not.toMatch(/\bat .*\.ts:\d+/); // no stack trace
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "names a misspelt option without the value typed with it (a token there is never printed)",
    async () => {
      const run = await runCli([
        "--enrollment-tokn=SECRET-hunter2-0123456789",
        "--api-url",
        "http://127.0.0.1:5999",
        "--mcp-config",
        "x.json",
      ]);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe("mosoo-driver: error: unknown option '--enrollment-tokn'\n");
      expect(run.stderr).not.toContain("hunter2");
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "exits 2 with one line naming the entry when MOSOO_API_URLS is a bad list",
    async () => {
      const run = await runCli(["--mcp-config", "x.json"], undefined, { MOSOO_API_URLS: "http://127.0.0.1:1,,http://127.0.0.1:2" });
      expect(run.code).toBe(2);
      expect(run.stderr).toBe("mosoo-driver: config.invalid: MOSOO_API_URLS: entry 2 is empty (a stray comma?)\n");
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "exits 2 with one line when the MCP config is invalid",
    async () => {
      const config = join(dir, "mcp.json");
      await writeFile(config, JSON.stringify({ servers: { issues: { type: "http", url: "not a url" } } }));
      const run = await runCli(["--api-url", "http://127.0.0.1:1", "--mcp-config", config]);
      expect(run.code).toBe(2);
      expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(/^mosoo-driver: config\.invalid: .*servers\.issues\.url/);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "exits 2 on a non-numeric --tool-timeout-ms",
    async () => {
      const run = await runCli(["--api-url", "http://127.0.0.1:1", "--mcp-config", "x.json", "--tool-timeout-ms", "soon"]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/--tool-timeout-ms/);
      expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "--help explains every flag with its default and shows an example",
    async () => {
      const run = await runCli(["--help"]);
      expect(run.code).toBe(0);
      for (const flag of [
        "--api-url",
        "--name",
        "--state-file",
        "--mcp-config",
        "--tool-timeout-ms",
        "--log-level",
        "--finalize-on-exit",
        "--api-retry-budget-ms",
        "--api-retry-max-delay-ms",
        "--result-report-budget-ms",
      ]) {
        expect(run.stdout).toContain(flag);
      }
      const flat = run.stdout.replace(/\s+/g, " "); // commander wraps the descriptions to the terminal width
      expect(flat).toContain('default: "./var/driver-state.json"');
      expect(flat).toContain("default: 60000");
      expect(flat).toContain("least 1000 (default: 180000)");
      expect(run.stdout).toMatch(/Example:\n\s+mosoo-driver --api-url/);
      expect(run.stdout).toContain("MOSOO_API_URLS");
      expect(run.stdout).toMatch(/sticky until\s+failure/);
    },
    CLI_TIMEOUT_MS,
  );
});

describe("mosoo-driver CLI: running", () => {
  let api: FakeDriverApi;
  beforeEach(async () => {
    api = new FakeDriverApi();
    await api.start();
  });
  afterEach(async () => {
    await api.stop();
  });

  it(
    "connects, logs driver.connected as JSON, and on SIGTERM stops with exit 0 without finalizing",
    async () => {
      const config = join(dir, "mcp.json");
      await writeFile(config, JSON.stringify({ servers: {} }));
      let signalled = false;
      const run = await runCli(["--api-url", api.url, "--mcp-config", config, "--state-file", join(dir, "state.json")], (text, kill) => {
        if (!signalled && text.includes('"driver.connected"')) {
          signalled = true;
          kill("SIGTERM");
        }
      });
      expect(run.code).toBe(0);
      const messages = run.stdout
        .trim()
        .split("\n")
        .map((line) => (JSON.parse(line) as { msg: string }).msg);
      expect(messages).toEqual(expect.arrayContaining(["driver.registered", "driver.connected", "driver.stopping", "driver.stopped"]));
      expect(api.requestsOf("finalize")).toHaveLength(0);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "takes its URLs from MOSOO_API_URLS: a dead first URL, registers and connects on the second, logs api.failover",
    async () => {
      const config = join(dir, "mcp.json");
      await writeFile(config, JSON.stringify({ servers: {} }));
      const dead = new FakeDriverApi();
      const deadUrl = await dead.start();
      await dead.stop();
      let signalled = false;
      const run = await runCli(
        ["--mcp-config", config, "--state-file", join(dir, "state.json")],
        (text, kill) => {
          if (!signalled && text.includes('"driver.connected"')) {
            signalled = true;
            kill("SIGTERM");
          }
        },
        { MOSOO_API_URLS: `${deadUrl},${api.url}` },
      );
      expect(run.code).toBe(0);
      const lines = run.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.find((l) => l["msg"] === "api.failover")).toMatchObject({ route: "register", fromUrl: deadUrl, toUrl: api.url });
      expect(api.requestsOf("register")).toHaveLength(1);
      expect(api.requestsOf("connect")).toHaveLength(1);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "with --finalize-on-exit, SIGTERM finalizes",
    async () => {
      const config = join(dir, "mcp.json");
      await writeFile(config, JSON.stringify({ servers: {} }));
      let signalled = false;
      const run = await runCli(
        ["--api-url", api.url, "--mcp-config", config, "--state-file", join(dir, "state.json"), "--finalize-on-exit"],
        (text, kill) => {
          if (!signalled && text.includes('"driver.connected"')) {
            signalled = true;
            kill("SIGTERM");
          }
        },
      );
      expect(run.code).toBe(0);
      expect(api.requestsOf("finalize")).toHaveLength(1);
      expect(run.stdout).toContain('"driver.finalized"');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "exits 1 when the API refuses the stored token (401)",
    async () => {
      const config = join(dir, "mcp.json");
      await writeFile(config, JSON.stringify({ servers: {} }));
      const state = join(dir, "state.json");
      const driverInstanceId = "01JAAAAAAAAAAAAAAAAAAAAAAA";
      await writeFile(
        state,
        JSON.stringify({ apiUrl: api.url, driverInstanceId, driverToken: `mdt_${driverInstanceId}_${"x".repeat(40)}` }),
      );
      const run = await runCli(["--api-url", api.url, "--mcp-config", config, "--state-file", state]);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain('"driver.connection_lost"');
    },
    CLI_TIMEOUT_MS,
  );
});
