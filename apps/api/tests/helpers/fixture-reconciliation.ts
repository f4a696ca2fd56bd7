import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { IDEMPOTENCY_KEY_META } from "@mosoo/contracts";
import { startFixtureProvider, type FixtureProviderHandle } from "@mosoo/fixture-provider";
import { openStore } from "../../src/platform/db/database.js";
import { createRuntime } from "../../src/composition-root.js";
import { RECONCILIATION_OFF, type ReconciliationSettings } from "../../src/modules/reconciliation/application/reconciliation-settings.js";
import { fixtureIssueTrackerAdapterFactory } from "@mosoo/fixture-adapter";
import { ManualClock, type RuntimeFixture } from "./runtime-fixture.js";

/** A runtime bound (or not) to a real in-process fixture provider, plus an MCP client acting as the Driver's tool caller. */
export interface FixtureReconciliationSetup extends RuntimeFixture {
  provider: FixtureProviderHandle;
  /** Calls `createIssue` with the effect's key as a Driver would; the promise settles when (if) the provider answers. */
  callCreateIssue(idempotencyKey: string, args: { title: string; body: string }): Promise<unknown>;
  /** Calls any tool of the provider with `idempotencyKey` in `_meta`, as a Driver would. */
  callTool(name: string, idempotencyKey: string, args: Record<string, unknown>): Promise<CallToolResult>;
  dispose(): Promise<void>;
}

/**
 * Starts the fixture provider (temp SQLite file, `fenceOnLookupMiss` as given) and a runtime on an
 * in-memory store whose server `tracker` is bound to the fixture adapter when `mode` is `bound`.
 */
export async function setupFixtureReconciliation(opts: {
  mode: "bound" | "flag_off" | "no_binding";
  fenceOnLookupMiss?: boolean;
  faults?: Parameters<typeof startFixtureProvider>[0]["faults"];
}): Promise<FixtureReconciliationSetup> {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-fixture-"));
  const provider = await startFixtureProvider({ dbFile: join(dir, "provider.db"), fenceOnLookupMiss: opts.fenceOnLookupMiss ?? true, ...(opts.faults ? { faults: opts.faults } : {}) });
  const adapter = fixtureIssueTrackerAdapterFactory.create({ url: provider.url });
  const settings: ReconciliationSettings = {
    ...RECONCILIATION_OFF,
    enabled: opts.mode !== "flag_off",
    bindings: opts.mode === "no_binding" ? new Map() : new Map([["tracker", adapter]]),
    lookupTimeoutMs: 5_000,
  };
  const store = openStore(":memory:");
  const clock = new ManualClock(Date.now());
  const runtime = createRuntime({ db: store.db, logger: pino({ level: "silent" }), heartbeatTtlMs: 10_000, clock, reconciliation: settings });
  const clients: Client[] = [];
  const callTool = async (name: string, idempotencyKey: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    const client = new Client({ name: "test-driver", version: "1.0.0" });
    clients.push(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(provider.url)));
    return (await client.callTool({ name, arguments: args, _meta: { [IDEMPOTENCY_KEY_META]: idempotencyKey } })) as CallToolResult;
  };
  return {
    store,
    runtime,
    clock,
    provider,
    close: () => store.close(),
    callCreateIssue: (idempotencyKey, args) => callTool("createIssue", idempotencyKey, args),
    callTool,
    async dispose() {
      provider.release();
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await provider.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `check` every 20 ms until true. @throws Error after `timeoutMs` (ms). */
export async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
