import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { NOOP_LOGGER, type AdapterHost } from "@mosoo/effect-reconciliation/host";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";
import { ConfigError, loadApiConfig } from "../src/config/api-config.js";
import { loadBindings, resolveReconciliationSettings } from "../src/config/reconciliation-bindings.js";

const BINDINGS_VAR = "MOSOO_RECONCILIATION_BINDINGS_FILE";
const FIXTURE_PACKAGE = { module: "@mosoo/fixture-adapter", export: "fixtureIssueTrackerAdapterFactory" };
const TRACKER_BINDING = { bindings: { tracker: { package: FIXTURE_PACKAGE, options: { url: "http://127.0.0.1:2/mcp" } } } };

/** Runs `fn`, expects a one-line ConfigError naming `variable`, returns its message. */
async function configError(fn: () => unknown, variable: string): Promise<string> {
  let caught: unknown;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  return checkConfigError(caught, variable);
}

/** Awaits `fn`, expects a one-line ConfigError naming `variable`, returns its message. */
async function asyncConfigError(fn: () => Promise<unknown>, variable: string): Promise<string> {
  let caught: unknown;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  return checkConfigError(caught, variable);
}

function checkConfigError(caught: unknown, variable: string): string {
  expect(caught).toBeInstanceOf(ConfigError);
  const err = caught as ConfigError;
  expect(err.code).toBe("config.invalid");
  expect(err.message.startsWith(`config.invalid: ${variable}:`)).toBe(true);
  expect(err.message).not.toContain("\n");
  return err.message;
}

describe("loadApiConfig: reconciliation variables", () => {
  it("defaults: the flag is off, no bindings file, bounded lookups", () => {
    expect(loadApiConfig({}).reconciliation).toEqual({
      enabled: false,
      bindingsFile: undefined,
      lookupTimeoutMs: 5_000,
      concurrency: 4,
      backoff: { initialMs: 1_000, maxMs: 300_000, factor: 2 },
      maxLookups: 8,
      groupCommit: { maxBatch: 64, windowMs: 2 },
      adapterHeapMb: 64,
      adapterCpuMs: 2_000,
      adapterLoadTimeoutMs: 15_000,
    });
  });

  it("reads every variable; an empty string counts as unset", () => {
    const c = loadApiConfig({
      MOSOO_EFFECT_RECONCILIATION: "on",
      [BINDINGS_VAR]: "/etc/mosoo/bindings.json",
      MOSOO_LOOKUP_TIMEOUT_MS: "750",
      MOSOO_RECONCILIATION_CONCURRENCY: "2",
      MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "500",
      MOSOO_LOOKUP_BACKOFF_MAX_MS: "500",
      MOSOO_LOOKUP_BACKOFF_FACTOR: "1.5",
      MOSOO_MAX_LOOKUPS: "",
      MOSOO_ADAPTER_HEAP_MB: "96",
      MOSOO_ADAPTER_CPU_MS: "700",
      MOSOO_GROUP_COMMIT_MAX: "1",
      MOSOO_GROUP_COMMIT_WINDOW_MS: "0",
      MOSOO_ADAPTER_LOAD_TIMEOUT_MS: "4000",
    });
    expect(c.reconciliation).toEqual({
      enabled: true,
      bindingsFile: "/etc/mosoo/bindings.json",
      lookupTimeoutMs: 750,
      concurrency: 2,
      backoff: { initialMs: 500, maxMs: 500, factor: 1.5 },
      maxLookups: 8,
      groupCommit: { maxBatch: 1, windowMs: 0 },
      adapterHeapMb: 96,
      adapterCpuMs: 700,
      adapterLoadTimeoutMs: 4_000,
    });
    expect(loadApiConfig({ MOSOO_EFFECT_RECONCILIATION: "off" }).reconciliation.enabled).toBe(false);
  });

  it.each([
    ["MOSOO_EFFECT_RECONCILIATION", "maybe"],
    ["MOSOO_EFFECT_RECONCILIATION", "true"],
    ["MOSOO_LOOKUP_TIMEOUT_MS", "abc"],
    ["MOSOO_LOOKUP_TIMEOUT_MS", "50"],
    ["MOSOO_LOOKUP_TIMEOUT_MS", "1000.5"],
    ["MOSOO_RECONCILIATION_CONCURRENCY", "0"],
    ["MOSOO_LOOKUP_BACKOFF_INITIAL_MS", "-1"],
    ["MOSOO_LOOKUP_BACKOFF_MAX_MS", "soon"],
    ["MOSOO_LOOKUP_BACKOFF_FACTOR", "0.5"],
    ["MOSOO_MAX_LOOKUPS", "0"],
    ["MOSOO_GROUP_COMMIT_MAX", "0"],
    ["MOSOO_GROUP_COMMIT_MAX", "1025"],
    ["MOSOO_GROUP_COMMIT_WINDOW_MS", "-1"],
    ["MOSOO_GROUP_COMMIT_WINDOW_MS", "1.5"],
    ["MOSOO_MAX_LOOKUPS", "1001"],
    ["MOSOO_ADAPTER_HEAP_MB", "8"],
    ["MOSOO_ADAPTER_HEAP_MB", "lots"],
    ["MOSOO_ADAPTER_LOAD_TIMEOUT_MS", "999"],
    ["MOSOO_ADAPTER_LOAD_TIMEOUT_MS", "120001"],
  ])("stops on %s=%s with one line naming the variable", async (name, value) => {
    const message = await configError(() => loadApiConfig({ [name]: value }), name);
    expect(message).toContain(JSON.stringify(value));
  });

  it("refuses a backoff cap below the first delay, naming MOSOO_LOOKUP_BACKOFF_MAX_MS", async () => {
    await configError(
      () => loadApiConfig({ MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "5000", MOSOO_LOOKUP_BACKOFF_MAX_MS: "4999" }),
      "MOSOO_LOOKUP_BACKOFF_MAX_MS",
    );
  });
});

// Each bind starts a worker thread (tsx included): seconds on a busy 2-core machine.
// timeout: a hang bound; these cases take up to ~22 s at a load average of 15–20 on the shared 2-core machine.
describe("bindings file (adapters bound through the real isolated worker host)", { timeout: 120_000 }, () => {
  let dir: string;
  let host: AdapterHost;
  beforeAll(() => {
    host = createIsolatedAdapterHost({ heapMb: 64, cpuLimitMs: 10_000, maxProcesses: 1, bindTimeoutMs: 60_000, logger: NOOP_LOGGER });
  });
  afterAll(() => host.close());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-bindings-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function file(content: unknown): string {
    const path = join(dir, `bindings-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
    return path;
  }
  /** An adapter module at an absolute path (a bindings `package.module` may be one). */
  function moduleFile(source: string): string {
    const path = join(dir, `adapter-${Math.random().toString(36).slice(2)}.mjs`);
    writeFileSync(path, source);
    return path;
  }
  const configWith = (bindingsFile: string | undefined, enabled = "on") =>
    loadApiConfig({
      MOSOO_EFFECT_RECONCILIATION: enabled,
      ...(bindingsFile ? { [BINDINGS_VAR]: bindingsFile } : {}),
      MOSOO_LOOKUP_TIMEOUT_MS: "300",
    });

  it("a package binding loads @mosoo/fixture-adapter from the API's dependencies (in the worker), with its provenance", async () => {
    const bindings = await loadBindings(file(TRACKER_BINDING), host);
    expect([...bindings.keys()]).toEqual(["tracker"]);
    const info = bindings.get("tracker")!;
    expect(info.adapter.declaration).toMatchObject({
      id: "fixture-issue-tracker",
      tools: ["createIssue", "closeIssue"],
      compensations: { createIssue: { toolName: "closeIssue" } },
      keyFencing: { kind: "lookup_fences_key" },
    });
    expect(typeof info.adapter.lookup).toBe("function");
    expect(info.provenance).toMatchObject({ source: FIXTURE_PACKAGE, packageName: "@mosoo/fixture-adapter", packageVersion: "1.1.0" });
    expect(info.provenance.declarationHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(info.coverage).toEqual({ covered: ["createIssue", "closeIssue"], notCovered: [] });
  });

  it("tools narrows a binding: only the named tools are covered, compensations across the cut are dropped", async () => {
    const bindings = await loadBindings(
      file({ bindings: { tracker: { ...TRACKER_BINDING.bindings.tracker, tools: ["createIssue"] } } }),
      host,
    );
    const info = bindings.get("tracker")!;
    expect(info.adapter.declaration.tools).toEqual(["createIssue"]);
    expect(info.adapter.declaration.compensations).toBeUndefined();
    expect(info.coverage).toEqual({ covered: ["createIssue"], notCovered: ["closeIssue"] });
  });

  it("resolveReconciliationSettings: settings from the config, bindings resolved; a built-in id maps to its source", async () => {
    const builtIns = { "fixture-issue-tracker": FIXTURE_PACKAGE };
    const settings = await resolveReconciliationSettings(
      configWith(file({ bindings: { tracker: { adapterId: "fixture-issue-tracker", options: { url: "http://127.0.0.1:2/mcp" } } } })),
      host,
      { builtIns },
    );
    expect(settings).toMatchObject({
      enabled: true,
      lookupTimeoutMs: 300,
      concurrency: 4,
      maxLookups: 8,
      backoff: { initialMs: 1_000, maxMs: 300_000, factor: 2 },
    });
    expect(settings.leaseMs).toBeGreaterThanOrEqual(2 * settings.lookupTimeoutMs); // the lookup and its retention canary
    expect(settings.bindings.get("tracker")!.declaration.id).toBe("fixture-issue-tracker");
    expect(Object.isFrozen(settings.bindings.get("tracker")!.declaration)).toBe(true);
    expect(settings.boundAdapters!.get("tracker")!.provenance).toMatchObject({
      source: FIXTURE_PACKAGE,
      packageName: "@mosoo/fixture-adapter",
    });
  });

  it("a binding's package may be a module path relative to the bindings file", async () => {
    const fixture = new URL("./fixtures/adapters/misbehaving.adapter.ts", import.meta.url).pathname;
    const bindings = await loadBindings(
      file({ bindings: { tracker: { package: { module: fixture, export: "mutatesInputAdapterFactory" } } } }),
      host,
    );
    expect(bindings.get("tracker")!.adapter.declaration.id).toBe("mutates-input");
    expect(bindings.get("tracker")!.provenance.packageName).toBe("@mosoo/api");
  });

  it("without a bindings file: no bindings; with the flag off the file is still validated", async () => {
    expect((await resolveReconciliationSettings(configWith(undefined), host)).bindings.size).toBe(0);
    await asyncConfigError(
      () => resolveReconciliationSettings(configWith(file({ bindings: { tracker: { adapterId: "nope" } } }), "off"), host),
      BINDINGS_VAR,
    );
  });

  it.each<[string, unknown, RegExp]>([
    [
      "unknown adapter id",
      { bindings: { tracker: { adapterId: "github-issues", options: {} } } },
      /bindings\.tracker: adapter\.unknown_id/,
    ],
    [
      "unknown package",
      { bindings: { tracker: { package: { module: "@acme/not-installed-adapter", export: "factory" } } } },
      /bindings\.tracker: adapter\.package_not_found: .*@acme\/not-installed-adapter/,
    ],
    [
      "export missing",
      { bindings: { tracker: { package: { module: "@mosoo/fixture-adapter", export: "noSuchFactory" } } } },
      /bindings\.tracker: adapter\.export_missing: .*noSuchFactory/,
    ],
    [
      "export not a factory",
      { bindings: { tracker: { package: { module: "@mosoo/fixture-adapter", export: "FixtureIssueTrackerOptionsSchema" } } } },
      /adapter\.export_missing/,
    ],
    [
      "tool not declared",
      { bindings: { tracker: { ...TRACKER_BINDING.bindings.tracker, tools: ["createIssue", "deleteIssue"] } } },
      /bindings\.tracker: binding\.tool_not_declared: tool "deleteIssue" is not declared by adapter "fixture-issue-tracker"/,
    ],
    [
      "a tool listed twice",
      { bindings: { tracker: { ...TRACKER_BINDING.bindings.tracker, tools: ["createIssue", "closeIssue", "createIssue"] } } },
      /: bindings\.tracker\.tools: tool "createIssue" is listed twice; name each tool once$/,
    ],
    [
      "both adapterId and package",
      { bindings: { tracker: { adapterId: "mcp-convention", package: FIXTURE_PACKAGE } } },
      /exactly one of adapterId/,
    ],
    [
      "bad options (not a url)",
      { bindings: { tracker: { package: FIXTURE_PACKAGE, options: { url: "not a url" } } } },
      /bindings\.tracker: adapter\.invalid_options/,
    ],
    ["missing options", { bindings: { tracker: { package: FIXTURE_PACKAGE } } }, /adapter\.invalid_options/],
    [
      "unknown option key",
      { bindings: { tracker: { package: FIXTURE_PACKAGE, options: { url: "http://127.0.0.1:2/mcp", token: "x" } } } },
      /adapter\.invalid_options/,
    ],
    [
      "convention provider unreachable",
      { bindings: { tracker: { adapterId: "mcp-convention", options: { url: "http://127.0.0.1:2/mcp" } } } },
      /bindings\.tracker: adapter\.invalid_options: adapter "mcp-convention" could not discover/,
    ],
    ["bad JSON", "{ bindings: ", /cannot read JSON/],
    ["unknown top-level key", { ...TRACKER_BINDING, retries: 3 }, /retries/],
    ["unknown key in a binding", { bindings: { tracker: { package: FIXTURE_PACKAGE, opts: {} } } }, /opts/],
    [
      "an env name the runtime reads (NODE_OPTIONS could lift the sandbox's limits)",
      { bindings: { tracker: { package: FIXTURE_PACKAGE, env: { NODE_OPTIONS: "--allow-fs-write=*" } } } },
      /bindings\.tracker\.env\.NODE_OPTIONS: .*reserved/,
    ],
    [
      "a lower-case env name",
      { bindings: { tracker: { package: FIXTURE_PACKAGE, env: { token: "x" } } } },
      /bindings\.tracker\.env\.token: /,
    ],
    [
      "more than 32 env names",
      {
        bindings: { tracker: { package: FIXTURE_PACKAGE, env: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`V${i}`, "x"])) } },
      },
      /at most 32 env names/,
    ],
    [
      "bad server id",
      { bindings: { "no spaces": { package: FIXTURE_PACKAGE, options: { url: "http://127.0.0.1:2/mcp" } } } },
      /bindings\.no spaces: /,
    ],
    ["no bindings object", { tracker: { package: FIXTURE_PACKAGE } }, /: bindings: /],
    ["the old field name source", { bindings: { tracker: { source: FIXTURE_PACKAGE } } }, /source/],
    [
      "a package module that does not exist",
      { bindings: { tracker: { package: { module: "/nonexistent/adapter.ts", export: "f" } } } },
      /bindings\.tracker: adapter\.package_not_found/,
    ],
    [
      "a package module that is a device",
      { bindings: { tracker: { package: { module: "/dev/zero", export: "f" } } } },
      /bindings\.tracker: adapter\.package_not_found: .*not a regular file/,
    ],
  ])("%s → ConfigError naming the variable, one line", async (_name, content, detail) => {
    const path = file(content);
    expect(await asyncConfigError(() => loadBindings(path, host), BINDINGS_VAR)).toMatch(detail);
    expect(await asyncConfigError(() => resolveReconciliationSettings(configWith(path), host), BINDINGS_VAR)).toMatch(detail);
  });

  it("a package whose declaration is invalid → adapter.invalid_declaration, one line", async () => {
    const mod = moduleFile(
      `export const factory = { declaration: { id: "Bad Id", version: "1", tools: [], retentionWindowMs: -1, keyFencing: { kind: "maybe" } }, create() { return {}; } };\n`,
    );
    const message = await asyncConfigError(
      () => loadBindings(file({ bindings: { tracker: { package: { module: mod, export: "factory" } } } }), host),
      BINDINGS_VAR,
    );
    expect(message).toMatch(/bindings\.tracker: adapter\.invalid_declaration: /);
  });

  it("a package module that throws while loading → adapter.load_failed, one line", async () => {
    const mod = moduleFile(`throw new Error("boom at import");\n`);
    expect(
      await asyncConfigError(
        () => loadBindings(file({ bindings: { tracker: { package: { module: mod, export: "factory" } } } }), host),
        BINDINGS_VAR,
      ),
    ).toMatch(/adapter\.load_failed: .*boom at import/);
  });

  it("a missing file → ConfigError naming the variable, one line", async () => {
    const message = await asyncConfigError(() => loadBindings(join(dir, "absent.json"), host), BINDINGS_VAR);
    expect(message).toContain("absent.json");
  });
});

/**
 * Bound (ms) of one API start that must end on exit 2: ~2 s on a quiet machine, 30–45 s on the shared
 * 2-core machine at a load average of 15–20 (tsx transpiles src/main.ts), so 3x headroom. A bound for a
 * hang (execFile kills the process then, and the exit code is null), not a timing assertion.
 */
const START_TIMEOUT_MS = 150_000;

describe("the API process refuses a bad binding at startup with one config.invalid line (exit 2)", () => {
  const API_DIR = fileURLToPath(new URL("..", import.meta.url));
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-bindings-proc-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const start = (bindings: unknown) => {
    const bindingsFile = join(dir, "bindings.json");
    writeFileSync(bindingsFile, JSON.stringify({ bindings: { tracker: bindings } }));
    return promisify(execFile)(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: API_DIR,
      env: {
        ...process.env,
        MOSOO_DB_FILE: join(dir, "api.db"),
        MOSOO_PORT: "0",
        MOSOO_EFFECT_RECONCILIATION: "on",
        [BINDINGS_VAR]: bindingsFile,
      },
      timeout: START_TIMEOUT_MS,
    }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
  };

  it.each([
    [
      "a module whose import never finishes (top-level await on a promise that never settles)",
      "await new Promise(() => {});\nexport const factory = {};\n",
    ],
    [
      "a factory whose create() spins synchronously",
      "const declaration = { id: 'hangs', version: '1.0.0', tools: ['createIssue'], retentionWindowMs: 1000, keyFencing: { kind: 'lookup_fences_key' } };\nexport const factory = { declaration, create() { for (;;) {} } };\n",
    ],
  ])(
    "%s: refused within MOSOO_ADAPTER_LOAD_TIMEOUT_MS with one line naming the adapter and the bound, exit 2 (it took ~33 s and said 'The task has been aborted')",
    async (_name, source) => {
      const mod = join(dir, "hangs.mjs");
      writeFileSync(mod, source);
      const bindingsFile = join(dir, "bindings.json");
      writeFileSync(bindingsFile, JSON.stringify({ bindings: { tracker: { package: { module: mod, export: "factory" } } } }));
      const { code: exit, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", "src/main.ts"], {
        cwd: API_DIR,
        env: {
          ...process.env,
          MOSOO_DB_FILE: join(dir, "api.db"),
          MOSOO_PORT: "0",
          MOSOO_EFFECT_RECONCILIATION: "on",
          [BINDINGS_VAR]: bindingsFile,
          MOSOO_ADAPTER_LOAD_TIMEOUT_MS: "3000",
        },
        timeout: 60_000,
      }).then(
        () => ({ code: 0, stderr: "" }),
        (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
      );
      expect(exit).toBe(2);
      expect(stderr).toBe(
        `config.invalid: ${BINDINGS_VAR}: bindings.tracker: adapter.load_failed: adapter ${mod}#factory did not load and build within 3000 ms (MOSOO_ADAPTER_LOAD_TIMEOUT_MS): its module import or create() hangs; the process was killed\n`,
      );
    },
    70_000,
  );

  it.each<[string, () => unknown, RegExp]>([
    ["unknown package", () => ({ package: { module: "@acme/not-installed-adapter", export: "factory" } }), /adapter\.package_not_found/],
    [
      "export missing",
      () => ({ package: { ...FIXTURE_PACKAGE, export: "noSuchFactory" }, options: { url: "http://127.0.0.1:2/mcp" } }),
      /adapter\.export_missing/,
    ],
    [
      "declaration invalid",
      () => {
        const mod = join(dir, "bad.mjs");
        writeFileSync(
          mod,
          `export const factory = { declaration: { id: "x", version: "1.0.0", tools: ["a"], retentionWindowMs: 0, keyFencing: { kind: "lookup_fences_key" } }, create() { return {}; } };\n`,
        );
        return { package: { module: mod, export: "factory" } };
      },
      /adapter\.invalid_declaration/,
    ],
    [
      "tool not declared",
      () => ({ package: FIXTURE_PACKAGE, options: { url: "http://127.0.0.1:2/mcp" }, tools: ["deleteIssue"] }),
      /binding\.tool_not_declared/,
    ],
  ])(
    "%s",
    async (_name, binding, code) => {
      const { code: exit, stderr } = await start(binding());
      expect(exit, `the API did not exit within ${START_TIMEOUT_MS} ms (killed)`).not.toBeNull();
      expect(exit).toBe(2);
      const lines = stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^config\\.invalid: ${BINDINGS_VAR}: bindings\\.tracker: `));
      expect(lines[0]).toMatch(code);
    },
    START_TIMEOUT_MS + 30_000,
  );
});
