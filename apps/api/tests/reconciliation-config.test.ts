import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ReconciliationError, type ReconciliationAdapterFactory } from "@mosoo/effect-reconciliation";
import { createBuiltInAdapterRegistry } from "../src/adapters/reconciliation/builtin-adapters.js";
import { ConfigError, loadApiConfig } from "../src/config/api-config.js";
import { loadBindings, resolveReconciliationSettings } from "../src/config/reconciliation-bindings.js";

const BINDINGS_VAR = "MOSOO_RECONCILIATION_BINDINGS_FILE";
const TRACKER_BINDING = { bindings: { tracker: { adapterId: "fixture-issue-tracker", options: { url: "http://127.0.0.1:1/mcp" } } } };

/** Runs `fn`, expects a one-line ConfigError naming `variable`, returns its message. */
function configError(fn: () => unknown, variable: string): string {
  let caught: unknown;
  try {
    fn();
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
    });
    expect(c.reconciliation).toEqual({
      enabled: true,
      bindingsFile: "/etc/mosoo/bindings.json",
      lookupTimeoutMs: 750,
      concurrency: 2,
      backoff: { initialMs: 500, maxMs: 500, factor: 1.5 },
      maxLookups: 8,
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
  ])("stops on %s=%s with one line naming the variable", (name, value) => {
    const message = configError(() => loadApiConfig({ [name]: value }), name);
    expect(message).toContain(JSON.stringify(value));
  });

  it("refuses a backoff cap below the first delay, naming MOSOO_LOOKUP_BACKOFF_MAX_MS", () => {
    configError(() => loadApiConfig({ MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "5000", MOSOO_LOOKUP_BACKOFF_MAX_MS: "4999" }), "MOSOO_LOOKUP_BACKOFF_MAX_MS");
  });
});

describe("bindings file", () => {
  let dir: string;
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

  it("a valid file binds tracker to the built-in fixture-issue-tracker adapter", () => {
    const bindings = loadBindings(file(TRACKER_BINDING), createBuiltInAdapterRegistry());
    expect([...bindings.keys()]).toEqual(["tracker"]);
    expect(bindings.get("tracker")!.declaration).toMatchObject({ id: "fixture-issue-tracker", tools: ["createIssue", "closeIssue"], compensations: { createIssue: { toolName: "closeIssue" } }, keyFencing: { kind: "lookup_fences_key" } });
    expect(typeof bindings.get("tracker")!.lookup).toBe("function");
  });

  it("resolveReconciliationSettings: settings from the config, bindings resolved, the registry closed", () => {
    const registry = createBuiltInAdapterRegistry();
    const settings = resolveReconciliationSettings(configWith(file(TRACKER_BINDING)), registry);
    expect(settings).toMatchObject({ enabled: true, lookupTimeoutMs: 300, concurrency: 4, maxLookups: 8, backoff: { initialMs: 1_000, maxMs: 300_000, factor: 2 } });
    expect(settings.leaseMs).toBeGreaterThan(settings.lookupTimeoutMs);
    expect(settings.bindings.get("tracker")!.declaration.id).toBe("fixture-issue-tracker");
    expect(registry.isClosed).toBe(true);
    const again: ReconciliationAdapterFactory = { declaration: { ...registry.list()[0]!, id: "another-adapter" }, create: () => settings.bindings.get("tracker")! };
    let err: unknown;
    try {
      registry.register(again);
    } catch (e) {
      err = e;
    }
    expect(ReconciliationError.is(err, "registry.closed")).toBe(true);
    expect(registry.list().map((d) => d.id)).toEqual(["fixture-issue-tracker", "fixture-issue-tracker-max-in-flight"]);
  });

  it("without a bindings file: no bindings; with the flag off the file is still validated", () => {
    const registry = createBuiltInAdapterRegistry();
    expect(resolveReconciliationSettings(configWith(undefined), registry).bindings.size).toBe(0);
    expect(registry.isClosed).toBe(true);
    configError(() => resolveReconciliationSettings(configWith(file({ bindings: { tracker: { adapterId: "nope" } } }), "off"), createBuiltInAdapterRegistry()), BINDINGS_VAR);
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
  ])("%s → ConfigError naming the variable, one line", (_name, content, detail) => {
    const path = file(content);
    expect(configError(() => loadBindings(path, createBuiltInAdapterRegistry()), BINDINGS_VAR)).toMatch(detail);
    expect(configError(() => resolveReconciliationSettings(configWith(path), createBuiltInAdapterRegistry()), BINDINGS_VAR)).toMatch(detail);
  });

  it("a missing file → ConfigError naming the variable, one line", () => {
    const message = configError(() => loadBindings(join(dir, "absent.json"), createBuiltInAdapterRegistry()), BINDINGS_VAR);
    expect(message).toContain("absent.json");
  });
});
