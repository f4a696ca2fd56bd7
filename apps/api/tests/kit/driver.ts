/**
 * A connected Driver in the test world, and the Driver's side of the protocol as plain calls on
 * the runtime: register + connect, reconnect (a restarted Driver process), enqueue a write on a
 * run, receive + accept + claim a command.
 */
import { expect } from "vitest";
import type { EffectClaim } from "@mosoo/contracts";
import type { DriverInstanceRow } from "../../src/modules/drivers/infrastructure/driver-instance.repository.js";
import type { ManualClock } from "./clock.js";
import type { Runtime } from "./world.js";

/** The server tests bind a reconciliation adapter to, and the write tool it serves. */
export const BOUND_SERVER = "tracker";
export const WRITE_TOOL = "createIssue";

/** A registered and connected Driver instance as the services see it: its row, its token and its connection id. */
export interface ConnectedDriver {
  instance: DriverInstanceRow;
  token: string;
  connectionId: string;
}

/** Registers (with an enrollment credential) and connects a Driver instance named `name`. */
export async function connectDriver(runtime: Runtime, name = "driver-a"): Promise<ConnectedDriver> {
  const { driverToken } = await runtime.drivers.register({ name }, { kind: "enrollment" });
  const instance = await runtime.drivers.authenticate(driverToken);
  const { connectionId } = await runtime.drivers.connect(instance);
  return { instance: await runtime.drivers.authenticate(driverToken), token: driverToken, connectionId };
}

/** Reconnects the same instance (a restarted Driver process): a new connection id. */
export async function reconnectDriver(runtime: Runtime, driver: ConnectedDriver): Promise<ConnectedDriver> {
  const instance = await runtime.drivers.authenticate(driver.token);
  const { connectionId } = await runtime.drivers.connect(instance);
  return { instance: await runtime.drivers.authenticate(driver.token), token: driver.token, connectionId };
}

/** Creates a run on `driver` and enqueues one `createIssue` tool call on server `tracker` (request id `req-1`). */
export async function enqueueCreateIssue(runtime: Runtime, driver: ConnectedDriver, title = "Disk full on db-1") {
  const { runId, sessionId } = await runtime.runs.createRun({ driverInstanceId: driver.instance.id });
  const call = await runtime.runs.enqueueToolCall(runId, {
    serverId: "tracker",
    toolName: "createIssue",
    arguments: { title, body: "seen at 03:12" },
    requestId: "req-1",
  });
  return { runId, sessionId, ...call };
}

/** A provider result as a Driver would report it for {@link enqueueCreateIssue}'s call. */
export function issueResult(title = "Disk full on db-1") {
  return { outputText: `Created issue #1: ${title}`, requestId: "req-1", serverId: "tracker", toolName: "createIssue" };
}

/** Arguments of the write (the effect's fingerprint is over these). */
export function issueArgs(title = "Disk full on db-1"): Record<string, unknown> {
  return { title, body: "seen at 03:12", labels: ["ops"] };
}

/** A tool call that reached `execute`: the Driver may call the provider now. */
export interface DispatchedCall {
  driver: ConnectedDriver;
  runId: string;
  sessionId: string;
  commandId: string;
  effectId: string;
  idempotencyKey: string;
  args: Record<string, unknown>;
  dispatchedAtMs: number;
}

/** Delivers the next command on `driver`'s connection, accepts it (unless it already was) and claims its effect. @throws Error when nothing is delivered. */
export async function deliverAcceptClaim(runtime: Runtime, driver: ConnectedDriver): Promise<{ commandId: string; claim: EffectClaim }> {
  const env = await runtime.commands.nextCommand(driver.instance, driver.connectionId, 0);
  if (!env) throw new Error("no command was delivered");
  if (env.status !== "accepted") {
    expect(
      (await runtime.commands.updateCommand(driver.instance, env.commandId, { connectionId: driver.connectionId, status: "accepted" }))
        .outcome,
    ).toBe("applied");
  }
  return { commandId: env.commandId, claim: await runtime.ledger.claim(driver.instance, driver.connectionId, env.commandId) };
}

/**
 * As production: a Driver registers and connects (or `opts.driver`), a run enqueues one write
 * (`serverId`/`toolName`, default the bound `tracker`/`createIssue`), the Driver receives it,
 * accepts it and claims `execute` (attempt 1, asserted, with `sendWithinMs` default 10 000 ms);
 * `requestId` is passed to the enqueue when given.
 * Nothing has reached the provider yet: use `commitAtProvider` for that.
 */
export async function dispatchWrite(
  fx: { runtime: Runtime; clock: ManualClock },
  opts: {
    serverId?: string;
    toolName?: string;
    args?: Record<string, unknown>;
    driver?: ConnectedDriver;
    sendWithinMs?: number;
    requestId?: string;
  } = {},
): Promise<DispatchedCall> {
  const { runtime } = fx;
  const driver = opts.driver ?? (await connectDriver(runtime));
  const args = opts.args ?? issueArgs();
  const { runId, sessionId } = await runtime.runs.createRun({ driverInstanceId: driver.instance.id });
  const call = await runtime.runs.enqueueToolCall(runId, {
    serverId: opts.serverId ?? BOUND_SERVER,
    toolName: opts.toolName ?? WRITE_TOOL,
    arguments: args,
    ...(opts.requestId === undefined ? {} : { requestId: opts.requestId }),
  });
  const { claim } = await deliverAcceptClaim(runtime, driver);
  expect(claim).toEqual({
    kind: "execute",
    effectId: call.effectId,
    attempt: 1,
    idempotencyKey: call.idempotencyKey,
    sendWithinMs: opts.sendWithinMs ?? 10_000,
  });
  return {
    driver,
    runId,
    sessionId,
    commandId: call.commandId,
    effectId: call.effectId,
    idempotencyKey: call.idempotencyKey,
    args,
    dispatchedAtMs: fx.clock.now(),
  };
}

/**
 * {@link dispatchWrite}, then the Driver's report that the attempt's fate is unknown (`markUnknown`,
 * attempt 1, reason `transport closed`): the effect is `unknown`, ready for a lease and a lookup.
 */
export async function dispatchUnknownWrite(fx: { runtime: Runtime; clock: ManualClock }): Promise<DispatchedCall> {
  const call = await dispatchWrite(fx);
  await fx.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
    connectionId: call.driver.connectionId,
    attempt: 1,
    reason: "transport closed",
  });
  return call;
}

/** Driver loss for good: explicit finalization repair (fences, reconciles eligible effects, settles commands). */
export function finalizeDriver(fx: { runtime: Runtime }, call: DispatchedCall) {
  return fx.runtime.repair.finalize(call.driver.instance.id, "driver_request");
}

/** The same Driver instance restarts (new connection); the command is redelivered (asserted) and claimed again. */
export async function redeliverAndClaim(fx: { runtime: Runtime }, call: DispatchedCall): Promise<EffectClaim> {
  const restarted = await reconnectDriver(fx.runtime, call.driver);
  const { commandId, claim } = await deliverAcceptClaim(fx.runtime, restarted);
  expect(commandId).toBe(call.commandId);
  return claim;
}
