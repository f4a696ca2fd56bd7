// A finalizing stop keeps the state file while a result is still held in the outbox: only that identity can report it.
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DriverOptions } from "../src/driver-config.contract.js";
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

describe("a held result and --finalize-on-exit", () => {
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
});
