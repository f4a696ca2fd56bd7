import { mkdtemp, readdir, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IDEMPOTENCY_KEY_META } from "@mosoo/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DriverOptions } from "../src/driver-config.contract.js";
import { DriverConfigError } from "../src/driver-config.loader.js";
import type { DriverLoop } from "../src/driver-loop.service.js";
import { DriverStateRepository } from "../src/driver-state.repository.js";
import { createDriver } from "../src/driver-runner.js";
import { error, FakeDriverApi } from "./helpers/fake-driver-api.js";
import { captureLogger } from "./helpers/log-capture.js";
import { mcpExecuteEnvelope } from "./helpers/recording-api.js";
import { startHttpMcpServer, ToolRecorder } from "./helpers/recording-mcp-server.js";

let api: FakeDriverApi;
let mcpServer: { url: string; close: () => Promise<void> };
let recorder: ToolRecorder;
let stateFile: string;

beforeEach(async () => {
  api = new FakeDriverApi();
  await api.start();
  recorder = new ToolRecorder();
  mcpServer = await startHttpMcpServer(recorder);
  stateFile = join(await mkdtemp(join(tmpdir(), "driver-loop-")), "var", "driver-state.json");
});
afterEach(async () => {
  await api.stop();
  await mcpServer.close();
});

async function driver(overrides: Partial<DriverOptions> = {}): Promise<{ loop: DriverLoop; lines: Record<string, unknown>[] }> {
  const { logger, lines } = captureLogger();
  const options: DriverOptions = {
    apiUrls: [api.url],
    name: "driver-test",
    stateFile,
    mcpConfigFile: "(inline)",
    toolTimeoutMs: 5_000,
    pollWaitMs: 50,
    logLevel: "debug",
    finalizeOnExit: false,
    ...overrides,
  };
  const loop = await createDriver(options, logger, {
    mcpConfig: { servers: { issues: { type: "http", url: mcpServer.url } } },
    apiRetry: { retries: 1, minTimeoutMs: 1, maxTimeoutMs: 5 },
    backoffMs: { min: 5, max: 20 },
  });
  return { loop, lines };
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("DriverLoop", () => {
  it("registers, saves the state (0600), connects and runs a command end to end over HTTP", async () => {
    const { loop, lines } = await driver();
    const envelope = mcpExecuteEnvelope();
    api.queue.push(envelope);
    const running = loop.run();
    await until(() => api.requestsOf("commandUpdate").length === 2);
    loop.stop("SIGTERM");
    const reason = await running;

    expect(reason).toMatchObject({ kind: "stopped", exitCode: 0, finalized: false });
    const state = await new DriverStateRepository(stateFile).load();
    expect(state?.apiUrl).toBe(api.url);
    expect((await stat(stateFile)).mode & 0o777).toBe(0o600);
    expect(api.requestsOf("register")).toHaveLength(1);

    const claim = api.claims.get(envelope.commandId);
    if (claim?.kind !== "execute") throw new Error("expected an execute claim");
    expect(recorder.calls).toHaveLength(1);
    expect(recorder.calls[0]?.meta?.[IDEMPOTENCY_KEY_META]).toBe(claim.idempotencyKey);
    const order = api.requests.map((r) => r.route).filter((r) => !["nextCommand", "heartbeat"].includes(r));
    expect(order).toEqual(["register", "connect", "self", "commandUpdate", "effectClaim", "effectComplete", "commandUpdate"]);
    expect(api.requestsOf("commandUpdate").map((r) => (r.body as { status: string }).status)).toEqual(["accepted", "completed"]);
    expect(api.requestsOf("finalize")).toHaveLength(0);

    const connected = lines.find((l) => l["msg"] === "driver.connected");
    expect(connected).toMatchObject({
      connectionId: api.currentConnectionId,
      pendingCommandCount: 1,
      driverInstanceId: state?.driverInstanceId,
    });
    expect(lines.find((l) => l["msg"] === "command.terminal")).toMatchObject({
      commandId: envelope.commandId,
      effectId: claim.effectId,
      driverInstanceId: state?.driverInstanceId,
    });
  });

  it("logs driver.fenced_effects at startup when the API says effects of this instance are executing or unknown", async () => {
    api.selfEffects = { executing: 1, unknown: 2 };
    const { loop, lines } = await driver();
    const running = loop.run();
    await until(() => lines.some((l) => l["msg"] === "driver.fenced_effects"));
    loop.stop("SIGTERM");
    await running;
    expect(lines.find((l) => l["msg"] === "driver.fenced_effects")).toMatchObject({ executing: 1, unknown: 2, pendingCommandCount: 0 });
  });

  it("says nothing of fenced effects when there are none, and goes on when the API cannot answer self", async () => {
    api.failNext("self", error(503, "store.busy", "busy"), error(503, "store.busy", "busy")); // the client retries a 5xx once here
    const { loop, lines } = await driver();
    const running = loop.run();
    await until(() => api.requestsOf("nextCommand").length > 0);
    loop.stop("SIGTERM");
    expect(await running).toMatchObject({ kind: "stopped", exitCode: 0 });
    expect(lines.some((l) => l["msg"] === "driver.fenced_effects")).toBe(false);
    expect(lines.some((l) => l["msg"] === "driver.self_unavailable")).toBe(true);
  });

  it("reconnects with an existing state file without registering again", async () => {
    const seeded = api.seedInstance();
    await new DriverStateRepository(stateFile).save({ apiUrl: api.url, ...seeded });
    const { loop } = await driver();
    const running = loop.run();
    await until(() => api.requestsOf("nextCommand").length > 0);
    loop.stop("SIGINT");
    await running;
    expect(api.requestsOf("register")).toHaveLength(0);
    expect(api.requestsOf("connect")[0]?.authorization).toBe(`Bearer ${seeded.driverToken}`);
  });

  it("refuses a state file of another API (config.invalid) before any request", async () => {
    const seeded = api.seedInstance();
    await new DriverStateRepository(stateFile).save({ apiUrl: "http://127.0.0.1:1", ...seeded });
    const { loop } = await driver();
    await expect(loop.run()).rejects.toBeInstanceOf(DriverConfigError);
    expect(api.requests).toHaveLength(0);
  });

  it("stops with exit code 1 and without finalizing when a heartbeat says the connection is superseded", async () => {
    api.heartbeatTtlMs = 60; // heartbeat every 20 ms
    const { loop, lines } = await driver({ finalizeOnExit: true });
    const running = loop.run();
    await until(() => api.requestsOf("heartbeat").length > 0);
    api.failNext("heartbeat", error(409, "driver.connection_superseded", "a newer connection exists"));
    const reason = await running;
    expect(reason).toMatchObject({ kind: "connection_lost", status: 409, code: "driver.connection_superseded", exitCode: 1 });
    expect(api.requestsOf("finalize")).toHaveLength(0);
    expect(lines.filter((l) => l["msg"] === "driver.connection_lost")).toHaveLength(1);
    expect(await new DriverStateRepository(stateFile).load()).not.toBeNull();
  });

  it("stops with exit code 1 when the API finalized the instance mid-run (409 driver.finalized), instead of retrying forever", async () => {
    api.heartbeatTtlMs = 60;
    const { loop } = await driver();
    const running = loop.run();
    await until(() => api.requestsOf("heartbeat").length > 0);
    api.failNext("heartbeat", error(409, "driver.finalized", "Driver instance was finalized; register again"));
    const reason = await running;
    expect(reason).toMatchObject({ kind: "connection_lost", status: 409, code: "driver.finalized", exitCode: 1 });
  });

  it("registers a new instance when the saved one was finalized (409 driver.finalized on connect)", async () => {
    const seeded = api.seedInstance();
    await new DriverStateRepository(stateFile).save({ apiUrl: api.url, ...seeded });
    api.failNext("connect", error(409, "driver.finalized", "Driver instance was finalized; register again"));
    const { loop, lines } = await driver();
    const running = loop.run();
    await until(() => api.requestsOf("nextCommand").length > 0);
    loop.stop("SIGINT");
    await running;
    expect(api.requestsOf("register")).toHaveLength(1);
    const saved = await new DriverStateRepository(stateFile).load();
    expect(saved?.driverInstanceId).not.toBe(seeded.driverInstanceId);
    expect(lines.some((l) => l["msg"] === "driver.instance_finalized_registering_new")).toBe(true);
  });

  it("stops with exit code 1 on a 401 from the poll", async () => {
    const { loop } = await driver();
    const running = loop.run();
    await until(() => api.requestsOf("nextCommand").length > 0);
    api.tokens.clear(); // token revoked
    const reason = await running;
    expect(reason).toMatchObject({ kind: "connection_lost", status: 401, exitCode: 1 });
  });

  it("with finalizeOnExit, a graceful stop finalizes and deletes the state file", async () => {
    const { loop } = await driver({ finalizeOnExit: true });
    const running = loop.run();
    await until(() => api.requestsOf("nextCommand").length > 0);
    const connectionId = api.currentConnectionId;
    loop.stop("SIGTERM");
    expect(await running).toMatchObject({ kind: "stopped", finalized: true, exitCode: 0 });
    expect(api.requestsOf("finalize").map((r) => r.body)).toEqual([{ connectionId }]);
    expect(await new DriverStateRepository(stateFile).load()).toBeNull();
  });

  it("keeps reporting a provider's result through API failures: it is stored, the command completes, no reconnect", async () => {
    const { loop, lines } = await driver();
    const envelope = mcpExecuteEnvelope();
    api.queue.push(envelope);
    // More failures in a row than the ordinary retry policy of these tests allows (1 retry).
    api.failNext("effectComplete", ...Array.from({ length: 4 }, () => error(503, "store.busy", "busy")));
    const running = loop.run();
    await until(() => api.requestsOf("commandUpdate").length === 2);
    loop.stop("SIGTERM");
    await running;
    const claim = api.claims.get(envelope.commandId);
    if (claim?.kind !== "execute") throw new Error("expected an execute claim");
    expect(recorder.calls).toHaveLength(1);
    expect(api.requestsOf("effectComplete")).toHaveLength(5);
    expect(api.state.completedEffects.has(claim.effectId)).toBe(true);
    expect(api.requestsOf("commandUpdate").at(-1)?.body).toMatchObject({ status: "completed" });
    expect(api.requestsOf("connect")).toHaveLength(1);
    expect(lines.some((l) => l["msg"] === "command.handling_failed")).toBe(false);
    expect(await readdir(`${stateFile}.outbox`)).toEqual([]); // taken: the outbox entry is gone
  });

  it("past the result-report budget: one error line naming the effect, the entry kept for the next start, and the redelivered command fenced, never executed twice", async () => {
    const { loop, lines } = await driver({ resultReportBudgetMs: 1_000 });
    const envelope = mcpExecuteEnvelope();
    api.queue.push(envelope);
    api.beforeAnswer = async (route) => {
      if (route === "effectComplete") api.failNext("effectComplete", error(503, "store.busy", "busy")); // refused every time
    };
    const running = loop.run();
    await until(() => api.requestsOf("connect").length === 2);
    api.beforeAnswer = null;
    const claim = api.claims.get(envelope.commandId);
    if (!claim) throw new Error("expected a claim");
    const givenUp = lines.filter((l) => l["msg"] === "effect.result_report_given_up");
    expect(givenUp).toHaveLength(1);
    expect(givenUp[0]).toMatchObject({ level: 50, effectId: claim.effectId, budgetMs: 1_000, errorCode: "store.busy" });
    expect(lines.some((l) => l["msg"] === "command.handling_failed" && l["commandId"] === envelope.commandId)).toBe(true);
    expect(await readdir(`${stateFile}.outbox`)).toEqual([`${claim.effectId}-1.json`]);
    // The API redelivers it on the new connection; its ledger now fences the executing effect.
    api.claims.set(envelope.commandId, { kind: "unknown", effectId: claim.effectId });
    api.queue.push({ ...envelope, status: "accepted", redelivery: true });
    await until(() => api.requestsOf("commandUpdate").length === 2);
    loop.stop("SIGTERM");
    await running;
    expect(recorder.calls).toHaveLength(1);
    expect(api.requestsOf("commandUpdate").at(-1)?.body).toMatchObject({
      status: "failed",
      error: { code: "external_effect.unknown", details: { effectId: claim.effectId } },
      connectionId: api.currentConnectionId,
    });
  });
  it("a finalizing stop keeps the state file beside the held result, so the next start reports it with the identity that made the attempt", async () => {
    const { loop } = await driver({ resultReportBudgetMs: 1_000, finalizeOnExit: true });
    const envelope = mcpExecuteEnvelope();
    api.queue.push(envelope);
    api.beforeAnswer = async (route) => {
      if (route === "effectComplete") api.failNext("effectComplete", error(503, "store.busy", "busy"));
    };
    const running = loop.run();
    await until(() => api.requestsOf("connect").length === 2);
    api.beforeAnswer = null;
    loop.stop("SIGTERM");
    expect(await running).toMatchObject({ kind: "stopped", finalized: true });
    const held = await readdir(`${stateFile}.outbox`);
    const state = await new DriverStateRepository(stateFile).load();
    // the held result can only ever be reported with the identity that made the attempt
    expect(held).toHaveLength(1);
    expect(state).not.toBeNull();
  });

  it("reports startup_failed (exit 1) when the API is unreachable", async () => {
    await api.stop();
    const { loop, lines } = await driver();
    const reason = await loop.run();
    expect(reason).toMatchObject({ kind: "startup_failed", exitCode: 1, code: "api.unreachable" });
    expect(lines.some((l) => l["msg"] === "driver.startup_failed")).toBe(true);
  });
});
