import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { IdempotencyConventionSchema } from "@mosoo/effect-reconciliation";
import { conventionAdapterFactory, instantiateBinding, listMcpTools, loadAdapterModule } from "@mosoo/effect-reconciliation/host";
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
    const advertised = Object.fromEntries(
      tools.map((t) => [t.name, (t._meta as Record<string, unknown> | undefined)?.[IDEMPOTENCY_CONVENTION_META]]),
    );
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
    expect(adapter.declaration).toEqual({
      id: "mcp-convention",
      version: "1.0.0",
      tools: ["createIssue", "closeIssue"],
      retentionWindowMs: 2_592_000_000,
      keyFencing: { kind: "lookup_fences_key" },
    });
    const report = await judgeAdapter({
      name: "mcp-convention",
      provider: fixtureKitProvider(handle, "fixture provider (advertising)"),
      createAdapter: () => adapter,
    });
    expect(report.cases.filter((c) => c.status === "failed")).toEqual([]);
  }, 120_000);

  it("without a fence the advertisement says max_in_flight, and the adapter declares it", async () => {
    const handle = await start({ fenceOnLookupMiss: false, advertiseIdempotency: true });
    const adapter = await conventionAdapterFactory.discover({ url: handle.url }, { signal: AbortSignal.timeout(5_000) });
    expect(adapter.declaration.keyFencing).toEqual({ kind: "max_in_flight", maxInFlightMs: 605_000 });
  });

  it("a provider that advertises nothing cannot be bound: discovery rejects, the binding is refused", async () => {
    const handle = await start({ fenceOnLookupMiss: true });
    await expect(conventionAdapterFactory.discover({ url: handle.url }, { signal: AbortSignal.timeout(5_000) })).rejects.toThrow(
      /advertises/,
    );
    const loaded = await loadAdapterModule(
      { module: "@mosoo/effect-reconciliation/host", export: "conventionAdapterFactory" },
      import.meta.filename,
    );
    await expect(instantiateBinding(loaded, { url: handle.url }, undefined, AbortSignal.timeout(5_000))).rejects.toMatchObject({
      code: "adapter.invalid_options",
    });
  });

  it("loads as a built-in source, narrows to the binding's tools, and records a declaration hash", async () => {
    const handle = await start({ fenceOnLookupMiss: true, advertiseIdempotency: true });
    const loaded = await loadAdapterModule(
      { module: "@mosoo/effect-reconciliation/host", export: "conventionAdapterFactory" },
      import.meta.filename,
    );
    const bound = await instantiateBinding(loaded, { url: handle.url }, ["createIssue"], AbortSignal.timeout(5_000));
    expect(bound.coverage).toEqual({ covered: ["createIssue"], notCovered: ["closeIssue"] });
    expect(bound.provenance).toMatchObject({
      packageName: "@mosoo/effect-reconciliation",
      declarationHash: expect.stringMatching(/^sha256:/),
    });
  });
});

/**
 * An HTTP front for `target` that resets the first `resets` connections it gets (as a server
 * closing a pooled keep-alive socket would look to the client: `fetch failed`) and forwards the rest.
 */
async function resettingFront(target: string, resets: number): Promise<{ url: string; server: Server; resetsLeft: () => number }> {
  let left = resets;
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    if (left > 0) {
      left -= 1;
      req.socket.destroy();
      return;
    }
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}${upstream.pathname}`, server, resetsLeft: () => left };
}

describe("MCP lookups survive a reset connection (reads are retried on network errors only)", () => {
  it("tools/list whose first connection is reset still answers (one retry)", async () => {
    const handle = await start({ fenceOnLookupMiss: true, advertiseIdempotency: true });
    const front = await resettingFront(handle.url, 1);
    try {
      const tools = await listMcpTools(front.url, AbortSignal.timeout(10_000));
      expect(front.resetsLeft()).toBe(0);
      expect(tools.map((t) => t.name).sort()).toEqual(["closeIssue", "createIssue", "getOperation"]);
    } finally {
      await new Promise((resolve) => front.server.close(resolve));
    }
  });
});
