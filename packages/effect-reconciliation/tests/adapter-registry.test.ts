import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { AdapterDeclaration, ReconciliationAdapter, ReconciliationAdapterFactory } from "../src/index.ts";
import { ReconciliationError, adapterFactoryOf, createAdapterRegistry, type ReconciliationErrorCode } from "../src/host/index.ts";
import { makeDeclaration } from "./reconcile-fixtures.ts";

const OptionsSchema = z.strictObject({ baseUrl: z.url(), token: z.string().min(1) });

/** A factory that validates its options with zod, as adapter authors are asked to. */
function issuesFactory(declaration: AdapterDeclaration = makeDeclaration()): ReconciliationAdapterFactory & { built: unknown[] } {
  const built: unknown[] = [];
  return {
    declaration,
    built,
    create(options: unknown): ReconciliationAdapter {
      const parsed = OptionsSchema.parse(options);
      built.push(parsed);
      return { declaration, lookup: () => Promise.resolve({ outcome: "still_unknown", reasonCode: "not_implemented" }) };
    },
  };
}

function codeOf(fn: () => unknown): ReconciliationErrorCode | "no error" | "other error" {
  try {
    fn();
    return "no error";
  } catch (error) {
    return ReconciliationError.is(error) ? error.code : "other error";
  }
}

describe("createAdapterRegistry", () => {
  it("registers a factory, lists and resolves it, and instantiates it with valid options", async () => {
    const registry = createAdapterRegistry();
    const factory = issuesFactory();
    const declaration = registry.register(factory);
    expect(declaration).toEqual(factory.declaration);
    expect(Object.isFrozen(declaration)).toBe(true);
    expect(registry.list().map((d) => d.id)).toEqual(["issues-adapter"]);
    expect(registry.resolve("issues-adapter").declaration).toEqual(factory.declaration);
    const adapter = registry.instantiate("issues-adapter", { baseUrl: "https://issues.example", token: "t" });
    expect(factory.built).toEqual([{ baseUrl: "https://issues.example", token: "t" }]);
    expect(adapter.declaration.id).toBe("issues-adapter");
    await expect(adapter.lookup({} as never, {} as never)).resolves.toEqual({ outcome: "still_unknown", reasonCode: "not_implemented" });
  });

  it("refuses a duplicate id with adapter.duplicate_id and keeps the first", () => {
    const registry = createAdapterRegistry();
    const first = issuesFactory(makeDeclaration({ version: "1.0.0" }));
    registry.register(first);
    expect(codeOf(() => registry.register(issuesFactory(makeDeclaration({ version: "2.0.0" }))))).toBe("adapter.duplicate_id");
    expect(registry.resolve("issues-adapter").declaration.version).toBe("1.0.0");
  });

  it.each<[string, unknown]>([
    ["a bad id", makeDeclaration({ id: "Issues Adapter" })],
    ["a non-semver version", makeDeclaration({ version: "v1" })],
    ["no tools", makeDeclaration({ tools: [] })],
    ["a repeated tool", makeDeclaration({ tools: ["a", "a"] })],
    ["a zero retention window", makeDeclaration({ retentionWindowMs: 0 })],
    ["a fractional retention window", makeDeclaration({ retentionWindowMs: 1.5 })],
    ["max_in_flight without maxInFlightMs", makeDeclaration({ keyFencing: { kind: "max_in_flight" } as never })],
    ["an unknown fencing kind", makeDeclaration({ keyFencing: { kind: "trust_me" } as never })],
    ["an unknown key", { ...makeDeclaration(), optionsSchema: {} }],
    [
      "a compensation without a description",
      makeDeclaration({
        tools: ["create_issue", "close_issue"],
        compensations: { create_issue: { toolName: "close_issue", description: "" } },
      }),
    ],
    [
      "a compensating tool it cannot look up",
      makeDeclaration({ compensations: { create_issue: { toolName: "close_issue", description: "Close it." } } }),
    ],
    [
      "a tool that compensates itself",
      makeDeclaration({ compensations: { create_issue: { toolName: "create_issue", description: "Undo." } } }),
    ],
    ["no declaration at all", undefined],
  ])("refuses a declaration with %s: adapter.invalid_declaration, nothing registered", (_label, declaration) => {
    const registry = createAdapterRegistry();
    expect(codeOf(() => registry.register({ declaration: declaration as AdapterDeclaration, create: () => ({}) as never }))).toBe(
      "adapter.invalid_declaration",
    );
    expect(registry.list()).toEqual([]);
  });

  it("accepts a declared compensation whose tool it can look up, and requires planCompensation on the built adapter", async () => {
    const registry = createAdapterRegistry();
    const declaration = makeDeclaration({
      tools: ["create_issue", "close_issue"],
      compensations: { create_issue: { toolName: "close_issue", description: "Close the created issue." } },
    });
    expect(registry.register(issuesFactory(declaration)).compensations).toEqual(declaration.compensations);
    // issuesFactory builds an adapter without planCompensation: refused at instantiate time
    expect(codeOf(() => registry.instantiate("issues-adapter", { baseUrl: "https://x.example", token: "t" }))).toBe(
      "adapter.invalid_declaration",
    );

    const withPlan = createAdapterRegistry();
    withPlan.register({
      declaration,
      create: () => ({
        declaration,
        lookup: () => Promise.resolve(null),
        planCompensation: () => Promise.resolve({ arguments: { issueId: "1" } }),
      }),
    });
    const adapter = withPlan.instantiate("issues-adapter");
    await expect(adapter.planCompensation!({} as never, {} as never)).resolves.toEqual({ arguments: { issueId: "1" } });
  });

  it("is closed for registration after close() (registry.closed), yet still resolves and instantiates", () => {
    const registry = createAdapterRegistry();
    registry.register(issuesFactory());
    expect(registry.isClosed).toBe(false);
    registry.close();
    registry.close();
    expect(registry.isClosed).toBe(true);
    expect(codeOf(() => registry.register(issuesFactory(makeDeclaration({ id: "late-adapter" }))))).toBe("registry.closed");
    expect(registry.list().map((d) => d.id)).toEqual(["issues-adapter"]);
    expect(codeOf(() => registry.instantiate("issues-adapter", { baseUrl: "https://x.example", token: "t" }))).toBe("no error");
  });

  it("resolve / instantiate of an unknown id throws adapter.unknown_id naming it", () => {
    const registry = createAdapterRegistry();
    expect(codeOf(() => registry.resolve("nope"))).toBe("adapter.unknown_id");
    try {
      registry.instantiate("nope", {});
      expect.unreachable();
    } catch (error) {
      expect(ReconciliationError.is(error, "adapter.unknown_id")).toBe(true);
      expect((error as ReconciliationError).details).toEqual({ adapterId: "nope" });
    }
  });

  it("bad options throw adapter.invalid_options carrying the zod message", () => {
    const registry = createAdapterRegistry();
    registry.register(issuesFactory());
    try {
      registry.instantiate("issues-adapter", { baseUrl: "not a url" });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ReconciliationError);
      const e = error as ReconciliationError;
      expect(e.code).toBe("adapter.invalid_options");
      expect(e.message).toContain("baseUrl");
      expect(e.message).toContain("token");
      expect(e.message).not.toMatch(/\n/);
      expect(e.cause).toBeInstanceOf(z.ZodError);
      expect(e.details).toEqual({ adapterId: "issues-adapter" });
    }
  });

  it("a factory that throws something else is also adapter.invalid_options", () => {
    const registry = createAdapterRegistry();
    registry.register({
      declaration: makeDeclaration(),
      create: () => {
        throw new Error("missing credentials file");
      },
    });
    expect(codeOf(() => registry.instantiate("issues-adapter", {}))).toBe("adapter.invalid_options");
  });

  it.each<[string, unknown]>([
    ["nothing", undefined],
    ["no lookup function", { declaration: makeDeclaration() }],
    ["another id", { declaration: makeDeclaration({ id: "other" }), lookup: () => Promise.resolve(null) }],
    ["another version", { declaration: makeDeclaration({ version: "9.9.9" }), lookup: () => Promise.resolve(null) }],
    ["an extra tool", { declaration: makeDeclaration({ tools: ["create_issue", "delete_repo"] }), lookup: () => Promise.resolve(null) }],
    ["an invalid declaration", { declaration: makeDeclaration({ retentionWindowMs: -1 }), lookup: () => Promise.resolve(null) }],
  ])("a factory that builds %s is refused with adapter.invalid_declaration", (_label, built) => {
    const registry = createAdapterRegistry();
    registry.register({ declaration: makeDeclaration(), create: () => built as ReconciliationAdapter });
    expect(codeOf(() => registry.instantiate("issues-adapter"))).toBe("adapter.invalid_declaration");
  });

  it("a built adapter may narrow what the factory declared (options-dependent tools or windows)", () => {
    const registry = createAdapterRegistry();
    const wide = makeDeclaration({ tools: ["create_issue", "close_issue"] });
    const narrow = makeDeclaration({ tools: ["close_issue"], retentionWindowMs: 1000 });
    registry.register({ declaration: wide, create: () => ({ declaration: narrow, lookup: () => Promise.resolve(null) }) });
    expect(registry.instantiate("issues-adapter").declaration).toEqual(narrow);
  });

  it("the instantiated adapter's declaration is a frozen copy: mutating the source changes nothing", () => {
    const registry = createAdapterRegistry();
    const declaration = makeDeclaration();
    registry.register(adapterFactoryOf({ declaration, lookup: () => Promise.resolve(null) }));
    const adapter = registry.instantiate("issues-adapter");
    declaration.tools.push("delete_repo");
    expect(adapter.declaration.tools).toEqual(["create_issue"]);
    expect(Object.isFrozen(adapter.declaration.tools)).toBe(true);
  });

  it("adapterFactoryOf refuses options it does not take", () => {
    const registry = createAdapterRegistry();
    registry.register(adapterFactoryOf({ declaration: makeDeclaration(), lookup: () => Promise.resolve(null) }));
    expect(codeOf(() => registry.instantiate("issues-adapter", {}))).toBe("no error");
    expect(codeOf(() => registry.instantiate("issues-adapter", { region: "eu" }))).toBe("adapter.invalid_options");
  });
});

describe("ReconciliationError", () => {
  it("has a stable name, code and details, and a brand check across copies", () => {
    const error = new ReconciliationError("registry.closed", "closed", { details: { at: "boot" } });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("ReconciliationError");
    expect(ReconciliationError.is(error)).toBe(true);
    expect(ReconciliationError.is(error, "registry.closed")).toBe(true);
    expect(ReconciliationError.is(error, "adapter.unknown_id")).toBe(false);
    expect(ReconciliationError.is(new Error("x"))).toBe(false);
    expect(ReconciliationError.is({ code: "registry.closed" })).toBe(false);
    expect(error.details).toEqual({ at: "boot" });
  });
});
