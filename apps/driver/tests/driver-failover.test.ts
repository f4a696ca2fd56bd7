import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DriverOptions } from "../src/driver-config.contract.js";
import type { DriverLoop } from "../src/driver-loop.service.js";
import { DriverStateRepository } from "../src/driver-state.repository.js";
import { createDriver } from "../src/driver-runner.js";
import { error, FakeDriverApi, FakeLedgerState, type FakeApiRequest } from "./helpers/fake-driver-api.js";
import { captureLogger } from "./helpers/log-capture.js";
import { mcpExecuteEnvelope } from "./helpers/recording-api.js";
import { startHttpMcpServer, ToolRecorder } from "./helpers/recording-mcp-server.js";

// Two API instances of one deployment (one shared "database": FakeLedgerState), the Driver given both
// URLs, a real MCP server over Streamable HTTP. Every kill is triggered by an event (a request reaching
// a fake, the provider holding a call), never by a timer.

let state: FakeLedgerState;
let api1: FakeDriverApi;
let api2: FakeDriverApi;
let mcpServer: { url: string; close: () => Promise<void> };
let recorder: ToolRecorder;
let stateFile: string;

beforeEach(async () => {
  state = new FakeLedgerState();
  api1 = new FakeDriverApi(state);
  api2 = new FakeDriverApi(state);
  await api1.start();
  await api2.start();
  recorder = new ToolRecorder();
  mcpServer = await startHttpMcpServer(recorder);
  stateFile = join(await mkdtemp(join(tmpdir(), "driver-failover-")), "driver-state.json");
});
afterEach(async () => {
  await api1.stop();
  await api2.stop();
  await mcpServer.close();
});

async function driver(overrides: Partial<DriverOptions> = {}): Promise<{ loop: DriverLoop; lines: Record<string, unknown>[] }> {
  const { logger, lines } = captureLogger();
  const options: DriverOptions = {
    apiUrls: [api1.url, api2.url],
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

/** Polls `condition` every 10 ms; the bound is for a hang, not a timing assertion. */
async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const connectionOf = (r: FakeApiRequest | undefined) =>
  (r?.body as { connectionId?: string } | undefined)?.connectionId ?? r?.query["connectionId"];
const failovers = (lines: Record<string, unknown>[]) => lines.filter((l) => l["msg"] === "api.failover");

describe("DriverLoop with two API instances", () => {
  type Kill = "provider_holds_the_call" | "complete_before_apply" | "complete_after_apply";
  it.each<Kill>(["provider_holds_the_call", "complete_before_apply", "complete_after_apply"])(
    "the first instance dies mid-command (%s): the same complete goes to the second, the provider wrote once, the command completes on the same connection",
    async (kill) => {
      state.heartbeatTtlMs = 60; // a heartbeat every 20 ms
      if (kill === "provider_holds_the_call") recorder.hold = () => api1.stop(); // after it answered the claim
      if (kill === "complete_before_apply") api1.killOn("effectComplete", "before_apply");
      if (kill === "complete_after_apply") api1.killOn("effectComplete", "after_apply");
      const { loop, lines } = await driver();
      const envelope = mcpExecuteEnvelope();
      state.queue.push(envelope);

      const running = loop.run();
      await until(() => api2.requestsOf("commandUpdate").length === 1);
      const beatsSoFar = api2.requestsOf("heartbeat").length;
      await until(() => api2.requestsOf("heartbeat").length >= beatsSoFar + 2); // heartbeats moved too
      loop.stop("SIGTERM");
      expect(await running).toMatchObject({ kind: "stopped", exitCode: 0 });

      const claim = state.claims.get(envelope.commandId);
      if (claim?.kind !== "execute") throw new Error("expected an execute claim");
      const connectionId = connectionOf(api1.requestsOf("effectClaim")[0]);
      expect(api1.requestsOf("effectClaim")).toHaveLength(1);
      expect(api2.requestsOf("effectClaim")).toHaveLength(0);
      expect(recorder.calls).toHaveLength(1); // the provider call is never repeated by the fail-over
      expect(api1.requestsOf("effectComplete")).toHaveLength(kill === "provider_holds_the_call" ? 0 : 1);
      const completes = api2.requestsOf("effectComplete");
      expect(completes).toHaveLength(1);
      expect(completes[0]?.path).toBe(`/v1/drivers/effects/${claim.effectId}/complete`);
      expect(completes[0]?.body).toMatchObject({ connectionId, attempt: claim.attempt });
      expect([...state.completedEffects]).toEqual([claim.effectId]);
      expect(api2.requestsOf("commandUpdate").map((r) => r.body)).toEqual([expect.objectContaining({ connectionId, status: "completed" })]);
      // Same instance, token and connection: no register, no connect on the second instance.
      expect([...api1.requests, ...api2.requests].filter((r) => r.route === "register")).toHaveLength(1);
      expect(api2.requestsOf("connect")).toHaveLength(0);
      expect(api2.requestsOf("heartbeat").every((r) => connectionOf(r) === connectionId)).toBe(true);
      expect(failovers(lines)).toEqual([expect.objectContaining({ fromUrl: api1.url, toUrl: api2.url })]);
    },
  );

  it("a poll refused by a dead instance is re-issued on the next URL with the same connection", async () => {
    api1.killOn("nextCommand", "after_answer"); // answers the first poll, then dies
    const { loop, lines } = await driver();
    const running = loop.run();
    await until(() => api2.requestsOf("nextCommand").length > 0);
    const connectionId = state.currentConnectionId;
    state.queue.push(mcpExecuteEnvelope());
    await until(() => api2.requestsOf("commandUpdate").length === 2);
    loop.stop("SIGTERM");
    await running;

    expect(connectionOf(api2.requestsOf("nextCommand")[0])).toBe(connectionId);
    expect(api2.requestsOf("connect")).toHaveLength(0);
    expect(api2.requestsOf("commandUpdate").map((r) => connectionOf(r))).toEqual([connectionId, connectionId]);
    expect(recorder.calls).toHaveLength(1);
    expect(lines.some((l) => l["msg"] === "poll.answer_may_be_lost")).toBe(false);
    expect(failovers(lines)).toEqual([expect.objectContaining({ route: "nextCommand", fromUrl: api1.url, toUrl: api2.url })]);
  });

  it("a long-poll cut by the instance's death (its answer may be lost) is not resent blind: the Driver reconnects on the next URL, as the same instance", async () => {
    const { loop, lines } = await driver({ pollWaitMs: 30_000 });
    const running = loop.run();
    await until(() => api1.requestsOf("nextCommand").length === 1); // in flight: nothing queued, 30 s wait
    const firstConnection = state.currentConnectionId;
    await api1.stop();
    await until(() => api2.requestsOf("nextCommand").length > 0);
    state.queue.push(mcpExecuteEnvelope());
    await until(() => api2.requestsOf("commandUpdate").length === 2);
    loop.stop("SIGTERM");
    expect(await running).toMatchObject({ kind: "stopped", exitCode: 0 });

    expect(api2.requestsOf("register")).toHaveLength(0);
    expect(api2.requestsOf("connect")).toHaveLength(1);
    expect(api2.requestsOf("connect")[0]?.authorization).toBe(api1.requestsOf("connect")[0]?.authorization);
    expect(state.currentConnectionId).not.toBe(firstConnection);
    expect(api2.requestsOf("nextCommand").every((r) => connectionOf(r) === state.currentConnectionId)).toBe(true);
    expect(recorder.calls).toHaveLength(1);
    expect(lines.find((l) => l["msg"] === "poll.answer_may_be_lost")).toMatchObject({ connectionId: firstConnection, apiUrl: api1.url });
  });

  it("a long-poll answered 503 store.commit_unknown (its delivery may have committed) is not resent on that connection: the Driver reconnects", async () => {
    const { loop, lines } = await driver({ pollWaitMs: 50 });
    api1.failNext("nextCommand", error(503, "store.commit_unknown", "the database connection was lost during COMMIT"));
    const running = loop.run();
    await until(() => lines.some((l) => l["msg"] === "poll.answer_may_be_lost"));
    const firstConnection = connectionOf(api1.requestsOf("nextCommand")[0]);
    await until(() => api1.requestsOf("connect").length + api2.requestsOf("connect").length >= 2);
    state.queue.push(mcpExecuteEnvelope());
    await until(
      () => recorder.calls.length === 1 && [...api1.requestsOf("commandUpdate"), ...api2.requestsOf("commandUpdate")].length === 2,
    );
    loop.stop("SIGTERM");
    expect(await running).toMatchObject({ kind: "stopped", exitCode: 0 });

    const polls = [...api1.requestsOf("nextCommand"), ...api2.requestsOf("nextCommand")];
    expect(polls.filter((r) => connectionOf(r) === firstConnection)).toHaveLength(1); // the 503'd poll only: never resent
    expect(state.currentConnectionId).not.toBe(firstConnection);
    expect(lines.find((l) => l["msg"] === "poll.answer_may_be_lost")).toMatchObject({
      connectionId: firstConnection,
      errorCode: "store.commit_unknown",
    });
  });

  it("a heartbeat refused as superseded while its own reconnect is in flight does not stop the Driver", async () => {
    state.heartbeatTtlMs = 60; // a heartbeat every 20 ms
    const { loop, lines } = await driver({ pollWaitMs: 30_000 });
    // A reconnect: the first poll's answer is lost with the instance (api1 dies mid-poll).
    let connects = 0;
    const supersededBeatSeen = () =>
      lines.some((l) => l["msg"] === "heartbeat.failed" && l["errorCode"] === "driver.connection_superseded");
    api2.beforeAnswer = async (route) => {
      if (route !== "connect" || ++connects > 1) return;
      // The API has superseded the old connection: its next heartbeat is refused before this answer leaves.
      api2.failNext("heartbeat", error(409, "driver.connection_superseded", "a newer connection exists"));
      await until(supersededBeatSeen);
    };
    const running = loop.run();
    await until(() => api1.requestsOf("nextCommand").length === 1 && api1.requestsOf("heartbeat").length > 0);
    await api1.stop();
    await until(() => api2.requestsOf("nextCommand").length > 0);
    const beats = api2.requestsOf("heartbeat").length;
    await until(() => api2.requestsOf("heartbeat").length >= beats + 2); // the new connection's heartbeats
    loop.stop("SIGTERM");
    expect(await running).toMatchObject({ kind: "stopped", exitCode: 0 });
    expect(supersededBeatSeen()).toBe(true);
    expect(lines.some((l) => l["msg"] === "driver.connection_lost")).toBe(false);
    expect(connectionOf(api2.requestsOf("heartbeat").at(-1))).toBe(state.currentConnectionId);
  });

  it("accepts a state file written against any of its URLs, and refuses one of another deployment", async () => {
    const seeded = api1.seedInstance();
    await new DriverStateRepository(stateFile).save({ apiUrl: `${api2.url}/`, ...seeded });
    const { loop } = await driver();
    const running = loop.run();
    await until(() => api1.requestsOf("nextCommand").length > 0);
    loop.stop("SIGINT");
    await running;
    expect(api1.requestsOf("register")).toHaveLength(0);

    await new DriverStateRepository(stateFile).save({ apiUrl: "http://127.0.0.1:1", ...seeded });
    const other = await driver();
    await expect(other.loop.run()).rejects.toThrow(/belongs to http:\/\/127\.0\.0\.1:1, not to any of /);
  });

  it("a registration that failed over records the URL it registered with in the state file, not the first URL", async () => {
    await api1.stop(); // connection refused: the register provably never left, so it goes to the second URL
    const { loop } = await driver();
    const running = loop.run();
    await until(() => api2.requestsOf("nextCommand").length > 0);
    loop.stop("SIGINT");
    await running;
    expect(api2.requestsOf("register")).toHaveLength(1);
    expect(await new DriverStateRepository(stateFile).load()).toMatchObject({ apiUrl: api2.url });
  });

  it("every URL dead mid-run: poll.failed lines with backoff, and when one instance is back the Driver goes on as the same instance", async () => {
    const { loop, lines } = await driver({ pollWaitMs: 30_000 });
    const running = loop.run();
    await until(() => api1.requestsOf("nextCommand").length === 1);
    const port2 = Number(new URL(api2.url).port);
    await api2.stop();
    await api1.stop(); // the poll in flight is cut: the Driver must reconnect, and nothing answers
    await until(() => lines.filter((l) => l["msg"] === "poll.failed").length >= 2);
    await api2.start(port2);
    await until(() => api2.requestsOf("nextCommand").length > 0);
    state.queue.push(mcpExecuteEnvelope());
    await until(() => api2.requestsOf("commandUpdate").length === 2);
    loop.stop("SIGTERM");
    expect(await running).toMatchObject({ kind: "stopped", exitCode: 0 });
    expect([...api1.requests, ...api2.requests].filter((r) => r.route === "register")).toHaveLength(1);
    expect(api2.requestsOf("connect")).toHaveLength(1);
    expect(recorder.calls).toHaveLength(1);
    const failed = lines.filter((l) => l["msg"] === "poll.failed");
    expect(failed[0]).toMatchObject({ errorCode: "api.unreachable" });
    expect(String(failed[0]?.["err"])).toMatch(/^POST connect failed on 2 API URLs: /);
  });

  it("every URL dead at startup: the bounded retries run on each URL, then one startup_failed line naming both, exit 1", async () => {
    const seeded = api1.seedInstance();
    await new DriverStateRepository(stateFile).save({ apiUrl: api1.url, ...seeded });
    await api1.stop();
    await api2.stop();
    const { loop, lines } = await driver();
    const reason = await loop.run();
    expect(reason).toMatchObject({ kind: "startup_failed", exitCode: 1, code: "api.unreachable" });
    const failed = lines.filter((l) => l["msg"] === "driver.startup_failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]?.["err"]).toContain(`failed on 2 API URLs: ${api1.url}: `);
    expect(failed[0]?.["err"]).toContain(`; ${api2.url}: `);
    expect(lines.filter((l) => l["msg"] === "api.retry")).toHaveLength(1); // retries: 1 → 2 rounds
  });
});
