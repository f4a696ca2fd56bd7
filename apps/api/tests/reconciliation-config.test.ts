import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AdapterHost } from "@mosoo/effect-reconciliation";
import { NOOP_LOGGER } from "@mosoo/effect-reconciliation";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/isolated-adapter-host.js";
import { ConfigError, loadApiConfig } from "../src/config/api-config.js";
import { loadBindings, resolveReconciliationSettings } from "../src/config/reconciliation-bindings.js";

const BINDINGS_VAR = "MOSOO_RECONCILIATION_BINDINGS_FILE";
const TRACKER_BINDING = { bindings: { tracker: { adapterId: "fixture-issue-tracker", options: { url: "http://127.0.0.1:1/mcp" } } } };

/** Runs `fn`, expects a one-line ConfigError naming `variable`, returns its message. */
async function configError(fn: () => unknown, variable: string): Promise<string> {
  let caught: unknown;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
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
      adapterHeapMb: 64,
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
    });
    expect(c.reconciliation).toEqual({
      enabled: true,
      bindingsFile: "/etc/mosoo/bindings.json",
      lookupTimeoutMs: 750,
      concurrency: 2,
      backoff: { initialMs: 500, maxMs: 500, factor: 1.5 },
      maxLookups: 8,
      adapterHeapMb: 96,
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
    ["MOSOO_MAX_LOOKUPS", "1001"],
    ["MOSOO_ADAPTER_HEAP_MB", "8"],
    ["MOSOO_ADAPTER_HEAP_MB", "lots"],
  ])("stops on %s=%s with one line naming the variable", async (name, value) => {
    const message = await configError(() => loadApiConfig({ [name]: value }), name);
    expect(message).toContain(JSON.stringify(value));
  });

  it("refuses a backoff cap below the first delay, naming MOSOO_LOOKUP_BACKOFF_MAX_MS", async () => {
    await configError(() => loadApiConfig({ MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "5000", MOSOO_LOOKUP_BACKOFF_MAX_MS: "4999" }), "MOSOO_LOOKUP_BACKOFF_MAX_MS");
  });
});

// Each bind starts a worker thread (tsx included): seconds on a busy 2-core machine.
describe("bindings file (adapters bound through the real isolated worker host)", { timeout: 60_000 }, () => {
  let dir: string;
  let host: AdapterHost;
  beforeAll(() => {
    host = createIsolatedAdapterHost({ heapMb: 64, maxThreads: 1, bindTimeoutMs: 60_000, logger: NOOP_LOGGER });
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
  const configWith = (bindingsFile: string | undefined, enabled = "on") =>
    loadApiConfig({ MOSOO_EFFECT_RECONCILIATION: enabled, ...(bindingsFile ? { [BINDINGS_VAR]: bindingsFile } : {}), MOSOO_LOOKUP_TIMEOUT_MS: "300" });

  it("a valid file binds tracker to the built-in fixture-issue-tracker adapter", async () => {
    const bindings = await loadBindings(file(TRACKER_BINDING), host);
    expect([...bindings.keys()]).toEqual(["tracker"]);
    expect(bindings.get("tracker")!.declaration).toMatchObject({ id: "fixture-issue-tracker", tools: ["createIssue", "closeIssue"], compensations: { createIssue: { toolName: "closeIssue" } }, keyFencing: { kind: "lookup_fences_key" } });
    expect(typeof bindings.get("tracker")!.lookup).toBe("function");
  });

  it("resolveReconciliationSettings: settings from the config, bindings resolved", async () => {
    const settings = await resolveReconciliationSettings(configWith(file(TRACKER_BINDING)), host);
    expect(settings).toMatchObject({ enabled: true, lookupTimeoutMs: 300, concurrency: 4, maxLookups: 8, backoff: { initialMs: 1_000, maxMs: 300_000, factor: 2 } });
    expect(settings.leaseMs).toBeGreaterThan(settings.lookupTimeoutMs);
    expect(settings.bindings.get("tracker")!.declaration.id).toBe("fixture-issue-tracker");
    expect(Object.isFrozen(settings.bindings.get("tracker")!.declaration)).toBe(true);
  });

  it("a binding may name an adapter source {module, export}, relative to the bindings file", async () => {
    const fixture = new URL("./fixtures/adapters/misbehaving.adapter.ts", import.meta.url).pathname;
    const bindings = await loadBindings(file({ bindings: { tracker: { source: { module: fixture, export: "mutatesInputAdapterFactory" } } } }), host);
    expect(bindings.get("tracker")!.declaration.id).toBe("mutates-input");
  });

  it("without a bindings file: no bindings; with the flag off the file is still validated", async () => {
    expect((await resolveReconciliationSettings(configWith(undefined), host)).bindings.size).toBe(0);
    await configError(() => resolveReconciliationSettings(configWith(file({ bindings: { tracker: { adapterId: "nope" } } }), "off"), host), BINDINGS_VAR);
  });

  it.each<[string, unknown, RegExp]>([
    ["unknown adapter id", { bindings: { tracker: { adapterId: "github-issues", options: {} } } }, /bindings\.tracker: adapter\.unknown_id/],
    ["bad options (not a url)", { bindings: { tracker: { adapterId: "fixture-issue-tracker", options: { url: "not a url" } } } }, /bindings\.tracker: adapter\.invalid_options/],
    ["missing options", { bindings: { tracker: { adapterId: "fixture-issue-tracker" } } }, /adapter\.invalid_options/],
    ["unknown option key", { bindings: { tracker: { adapterId: "fixture-issue-tracker", options: { url: "http://127.0.0.1:1/mcp", token: "x" } } } }, /adapter\.invalid_options/],
    ["bad JSON", "{ bindings: ", /cannot read JSON/],
    ["unknown top-level key", { ...TRACKER_BINDING, retries: 3 }, /retries/],
    ["unknown key in a binding", { bindings: { tracker: { adapterId: "fixture-issue-tracker", opts: {} } } }, /opts/],
    ["bad server id", { bindings: { "no spaces": { adapterId: "fixture-issue-tracker", options: { url: "http://127.0.0.1:1/mcp" } } } }, /bindings\.no spaces: /],
    ["no bindings object", { tracker: { adapterId: "fixture-issue-tracker" } }, /: bindings: /],
    ["both adapterId and source", { bindings: { tracker: { adapterId: "fixture-issue-tracker", source: { module: "/x.ts", export: "f" } } } }, /exactly one of adapterId/],
    ["a source module that does not exist", { bindings: { tracker: { source: { module: "/nonexistent/adapter.ts", export: "f" } } } }, /bindings\.tracker: adapter\.load_failed/],
  ])("%s → ConfigError naming the variable, one line", async (_name, content, detail) => {
    const path = file(content);
    expect(await configError(() => loadBindings(path, host), BINDINGS_VAR)).toMatch(detail);
    expect(await configError(() => resolveReconciliationSettings(configWith(path), host), BINDINGS_VAR)).toMatch(detail);
  });

  it("a missing file → ConfigError naming the variable, one line", async () => {
    const message = await configError(() => loadBindings(join(dir, "absent.json"), host), BINDINGS_VAR);
    expect(message).toContain("absent.json");
  });
});
