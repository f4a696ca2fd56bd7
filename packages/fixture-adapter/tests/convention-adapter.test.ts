import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { IdempotencyConventionSchema, instantiateBinding, loadAdapterModule } from "@mosoo/effect-reconciliation";
import { conventionAdapterFactory, listMcpTools } from "@mosoo/effect-reconciliation/mcp";
import { judgeAdapter } from "@mosoo/effect-reconciliation/testing";
import { IDEMPOTENCY_CONVENTION_META, startFixtureProvider, type FixtureProviderHandle } from "@mosoo/fixture-provider";
import { fixtureKitProvider } from "./fixture-kit-provider.js";

// The zero-code convention: the fixture provider advertises it in tools/list, and the built-in
// generic adapter (no provider-specific code) reconciles it with the same checks.
const started: Array<{ handle: FixtureProviderHandle; dir: string }> = [];
async function start(options: Omit<Parameters<typeof startFixtureProvider>[0], "dbFile">): Promise<FixtureProviderHandle> {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-convention-"));
  const handle = await startFixtureProvider({ dbFile: join(dir, "provider.db"), ...options });
  started.push({ handle, dir });
  return handle;
}
afterEach(async () => {
  for (const { handle, dir } of started.splice(0)) {
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("the idempotency convention", () => {
  it("the fixture provider advertises a valid convention on both write tools, none on the lookup tool", async () => {
    const handle = await start({ fenceOnLookupMiss: true, advertiseIdempotency: true });
    const tools = await listMcpTools(handle.url, AbortSignal.timeout(5_000));
    const advertised = Object.fromEntries(tools.map((t) => [t.name, (t._meta as Record<string, unknown> | undefined)?.[IDEMPOTENCY_CONVENTION_META]]));
    expect(Object.keys(advertised).sort()).toEqual(["closeIssue", "createIssue", "getOperation"]);
    expect(advertised["getOperation"]).toBeUndefined();
    expect(IdempotencyConventionSchema.parse(advertised["createIssue"])).toEqual({
      version: 1,
      lookupTool: "getOperation",
      lookupKeyArgument: "idempotencyKey",
      retentionMs: 2_592_000_000,
      fencing: { kind: "lookup_fences_key" },
      keyPlacement: { in: "meta", name: "io.mosoo/idempotency-key" },
    });
  });

  it("the generic adapter discovers the declaration from tools/list and passes the kit on the real provider", async () => {
    const handle = await start({ fenceOnLookupMiss: true, advertiseIdempotency: true });
    const adapter = await conventionAdapterFactory.discover({ url: handle.url }, { signal: AbortSignal.timeout(5_000) });
    expect(adapter.declaration).toEqual({ id: "mcp-convention", version: "1.0.0", tools: ["createIssue", "closeIssue"], retentionWindowMs: 2_592_000_000, keyFencing: { kind: "lookup_fences_key" } });
    const report = await judgeAdapter({ name: "mcp-convention", provider: fixtureKitProvider(handle, "fixture provider (advertising)"), createAdapter: () => adapter });
    expect(report.cases.filter((c) => c.status === "failed")).toEqual([]);
  }, 120_000);

  it("without a fence the advertisement says max_in_flight, and the adapter declares it", async () => {
    const handle = await start({ fenceOnLookupMiss: false, advertiseIdempotency: true });
    const adapter = await conventionAdapterFactory.discover({ url: handle.url }, { signal: AbortSignal.timeout(5_000) });
    expect(adapter.declaration.keyFencing).toEqual({ kind: "max_in_flight", maxInFlightMs: 605_000 });
  });

  it("a provider that advertises nothing cannot be bound: discovery rejects, the binding is refused", async () => {
    const handle = await start({ fenceOnLookupMiss: true });
    await expect(conventionAdapterFactory.discover({ url: handle.url }, { signal: AbortSignal.timeout(5_000) })).rejects.toThrow(/advertises/);
    const loaded = await loadAdapterModule({ module: "@mosoo/effect-reconciliation/mcp", export: "conventionAdapterFactory" }, import.meta.filename);
    await expect(instantiateBinding(loaded, { url: handle.url }, undefined, AbortSignal.timeout(5_000))).rejects.toMatchObject({ code: "adapter.invalid_options" });
  });

  it("loads as a built-in source, narrows to the binding's tools, and records a declaration hash", async () => {
    const handle = await start({ fenceOnLookupMiss: true, advertiseIdempotency: true });
    const loaded = await loadAdapterModule({ module: "@mosoo/effect-reconciliation/mcp", export: "conventionAdapterFactory" }, import.meta.filename);
    const bound = await instantiateBinding(loaded, { url: handle.url }, ["createIssue"], AbortSignal.timeout(5_000));
    expect(bound.coverage).toEqual({ covered: ["createIssue"], notCovered: ["closeIssue"] });
    expect(bound.provenance).toMatchObject({ packageName: "@mosoo/effect-reconciliation", declarationHash: expect.stringMatching(/^sha256:/) });
  });
});
