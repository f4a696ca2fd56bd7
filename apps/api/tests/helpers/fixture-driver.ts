import { toMcpExecuteCommandResult, type McpExecuteCommandResult } from "@mosoo/contracts";
import { expect } from "vitest";
import type { ConnectedDriver } from "./runtime-fixture.js";
import type { FixtureReconciliationSetup } from "./fixture-reconciliation.js";

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
 * completes the effect and sends the terminal update, in that order.
 */
export async function executeNextCommand(s: FixtureReconciliationSetup, driver: ConnectedDriver, opts: { crashAfterCall?: boolean } = {}): Promise<ExecutedCommand> {
  const { runtime } = s;
  const env = await runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
  if (!env) throw new Error("no command was delivered");
  runtime.commands.updateCommand(driver.instance, env.commandId, { connectionId: driver.connectionId, status: "accepted" });
  const claim = await runtime.ledger.claim(driver.instance, driver.connectionId, env.commandId);
  if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
  const args = JSON.parse(env.payload.argumentsJson) as Record<string, unknown>;
  const toolResult = await s.callTool(env.payload.toolName, claim.idempotencyKey, args);
  const result = toMcpExecuteCommandResult(toolResult as never, env.payload);
  const executed = { commandId: env.commandId, effectId: claim.effectId, idempotencyKey: claim.idempotencyKey, toolName: env.payload.toolName, args, result };
  if (opts.crashAfterCall) return executed;
  const completed = runtime.ledger.complete(driver.instance, claim.effectId, { connectionId: driver.connectionId, attempt: claim.attempt, result, receipt: toolResult._meta ?? null });
  expect(completed.outcome).toBe("applied");
  expect(runtime.commands.updateCommand(driver.instance, env.commandId, { connectionId: driver.connectionId, status: "completed", result }).outcome).toBe("applied");
  return executed;
}
