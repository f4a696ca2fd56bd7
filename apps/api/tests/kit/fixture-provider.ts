/**
 * The test world bound (or not) to the real fixture provider, started in process over MCP HTTP
 * ({@link createFixtureProviderWorld}), and a simulated Driver that executes commands against it
 * ({@link executeNextCommand}).
 */
import { join } from "node:path";
import { expect } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { IDEMPOTENCY_KEY_META, toMcpExecuteCommandResult, type McpExecuteCommandResult } from "@mosoo/contracts";
import { fixtureIssueTrackerAdapterFactory } from "@mosoo/fixture-adapter";
import { startFixtureProvider, type FixtureProviderHandle } from "@mosoo/fixture-provider";
import { RECONCILIATION_OFF } from "../../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { createManualClock } from "./clock.js";
import type { ConnectedDriver } from "./driver.js";
import { createTempDir } from "./store.js";
import { createTestWorld, type ReconciliationSettings, type TestWorld } from "./world.js";

/** A {@link TestWorld} next to a running fixture provider, plus an MCP client acting as the Driver's tool caller. */
export interface FixtureProviderWorld extends TestWorld {
  provider: FixtureProviderHandle;
  /** Calls `createIssue` with the effect's key as a Driver would; the promise settles when (if) the provider answers. */
  callCreateIssue(idempotencyKey: string, args: { title: string; body: string }): Promise<unknown>;
  /** Calls any tool of the provider with `idempotencyKey` in `_meta`, as a Driver would. */
  callTool(name: string, idempotencyKey: string, args: Record<string, unknown>): Promise<CallToolResult>;
  /** Releases held calls, closes the clients, the provider and the store, removes the temp folder. */
  dispose(): Promise<void>;
}

/**
 * Starts the fixture provider (temp SQLite file, `fenceOnLookupMiss` default true, `faults` as
 * given) and an in-memory world whose clock starts at the wall clock's now, heartbeat TTL 10 000 ms,
 * lookup timeout 5 000 ms; `mode` `bound` binds server `tracker` to the fixture adapter,
 * `flag_off` binds it with reconciliation off, `no_binding` turns reconciliation on with no binding.
 */
export async function createFixtureProviderWorld(opts: {
  mode: "bound" | "flag_off" | "no_binding";
  fenceOnLookupMiss?: boolean;
  faults?: Parameters<typeof startFixtureProvider>[0]["faults"];
}): Promise<FixtureProviderWorld> {
  const temp = createTempDir("mosoo-fixture-");
  const provider = await startFixtureProvider({
    dbFile: join(temp.dir, "provider.db"),
    fenceOnLookupMiss: opts.fenceOnLookupMiss ?? true,
    ...(opts.faults ? { faults: opts.faults } : {}),
  });
  const adapter = fixtureIssueTrackerAdapterFactory.create({ url: provider.url });
  const settings: ReconciliationSettings = {
    ...RECONCILIATION_OFF,
    enabled: opts.mode !== "flag_off",
    bindings: opts.mode === "no_binding" ? new Map() : new Map([["tracker", adapter]]),
    lookupTimeoutMs: 5_000,
  };
  const world = createTestWorld({ clock: createManualClock(Date.now()), heartbeatTtlMs: 10_000, reconciliation: settings });
  const clients: Client[] = [];
  const callTool = async (name: string, idempotencyKey: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    const client = new Client({ name: "test-driver", version: "1.0.0" });
    clients.push(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(provider.url)));
    return (await client.callTool({ name, arguments: args, _meta: { [IDEMPOTENCY_KEY_META]: idempotencyKey } })) as CallToolResult;
  };
  return Object.assign(world, {
    provider,
    callCreateIssue: (idempotencyKey: string, args: { title: string; body: string }) => callTool("createIssue", idempotencyKey, args),
    callTool,
    async dispose() {
      provider.release();
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await provider.close();
      world.store.closeNow();
      temp.remove();
    },
  });
}

/** What a simulated Driver did with one delivered command. */
export interface ExecutedCommand {
  commandId: string;
  effectId: string;
  idempotencyKey: string;
  toolName: string;
  args: Record<string, unknown>;
  result: McpExecuteCommandResult;
}

/**
 * Plays the Driver for the next command of `driver` against the real fixture provider: deliver,
 * accept, claim (must be `execute`), call the tool with the effect's key. With `crashAfterCall`
 * it stops there (the provider committed, the ledger never heard: a Driver crash); otherwise it
 * completes the effect and sends the terminal update, in that order (both asserted `applied`).
 * @throws Error when nothing is delivered or the claim is not `execute`.
 */
export async function executeNextCommand(
  s: FixtureProviderWorld,
  driver: ConnectedDriver,
  opts: { crashAfterCall?: boolean } = {},
): Promise<ExecutedCommand> {
  const { runtime } = s;
  const env = await runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
  if (!env) throw new Error("no command was delivered");
  await runtime.commands.updateCommand(driver.instance, env.commandId, { connectionId: driver.connectionId, status: "accepted" });
  const claim = await runtime.ledger.claim(driver.instance, driver.connectionId, env.commandId);
  if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
  const args = JSON.parse(env.payload.argumentsJson) as Record<string, unknown>;
  const toolResult = await s.callTool(env.payload.toolName, claim.idempotencyKey, args);
  const result = toMcpExecuteCommandResult(toolResult as never, env.payload);
  const executed = {
    commandId: env.commandId,
    effectId: claim.effectId,
    idempotencyKey: claim.idempotencyKey,
    toolName: env.payload.toolName,
    args,
    result,
  };
  if (opts.crashAfterCall) return executed;
  const completed = await runtime.ledger.complete(driver.instance, claim.effectId, {
    connectionId: driver.connectionId,
    attempt: claim.attempt,
    result,
    receipt: toolResult._meta ?? null,
  });
  expect(completed.outcome).toBe("applied");
  expect(
    (
      await runtime.commands.updateCommand(driver.instance, env.commandId, {
        connectionId: driver.connectionId,
        status: "completed",
        result,
      })
    ).outcome,
  ).toBe("applied");
  return executed;
}
