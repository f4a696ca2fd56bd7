// The Driver's result outbox: durable on disk, reported through an outage longer than the ordinary
// retry policy (fake clock), and delivered by a restarted Driver after a SIGKILL (real processes).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newUlid } from "@mosoo/contracts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DriverApiClient } from "../src/api-client.js";
import { ResultOutboxRepository, type PendingResult } from "../src/result-outbox.repository.js";
import { drainResultOutbox, HELD_RESULT_REPORT_CONCURRENCY, reportProviderResult } from "../src/result-report.service.js";
import { FakeDriverApi, error } from "./helpers/fake-driver-api.js";
import { captureLogger } from "./helpers/log-capture.js";
import { mcpExecuteEnvelope } from "./helpers/recording-api.js";
import { startHttpMcpServer, ToolRecorder } from "./helpers/recording-mcp-server.js";

const DRIVER_DIR = join(import.meta.dirname, "..");
/** Bound (ms) of the tests that start Driver processes: a bound for a hang on a loaded machine, not a timing assertion. */
const PROCESS_TEST_TIMEOUT_MS = 120_000;

function pendingResult(): PendingResult {
  return {
    effectId: newUlid(),
    commandId: newUlid(),
    connectionId: newUlid(),
    attempt: 1,
    idempotencyKey: newUlid(),
    toolName: "create_issue",
    requestFingerprint: "a".repeat(64),
    result: { serverId: "issues", toolName: "create_issue", requestId: "req-1", outputText: "created #7", isError: false },
    receipt: { issue: 7 },
    recordedAtMs: Date.now(),
  };
}

describe("ResultOutboxRepository", () => {
  it("holds a result durably (mode 0600, no temporary file), lists it, removes it; a stray file is named, not read as a result", async () => {
    const outbox = ResultOutboxRepository.besideStateFile(join(await mkdtemp(join(tmpdir(), "outbox-")), "var", "state.json"));
    const pending = pendingResult();
    await outbox.put(pending);
    const files = await readdir(outbox.dirPath);
    expect(files).toEqual([`${pending.effectId}-1.json`]);
    expect((await stat(join(outbox.dirPath, files[0]!))).mode & 0o777).toBe(0o600);
    await writeFile(join(outbox.dirPath, "junk.json"), "{not json");
    const listed = await outbox.list();
    expect(listed.pending).toEqual([pending]);
    expect(listed.unreadable).toEqual([{ file: join(outbox.dirPath, "junk.json"), reason: "not JSON" }]);
    await outbox.remove(pending);
    await outbox.remove(pending); // already gone: fine
    expect((await outbox.list()).pending).toEqual([]);
  });
});

describe("drainResultOutbox at a start", () => {
  it("reports every held result, at most HELD_RESULT_REPORT_CONCURRENCY at a time, and empties the outbox", async () => {
    const outbox = ResultOutboxRepository.besideStateFile(join(await mkdtemp(join(tmpdir(), "outbox-")), "state.json"));
    const held = Array.from({ length: 3 * HELD_RESULT_REPORT_CONCURRENCY }, () => pendingResult());
    for (const p of held) await outbox.put(p);
    let inFlight = 0;
    let maxInFlight = 0;
    const fetch = (async () => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight -= 1;
      return new Response(JSON.stringify({ outcome: "applied", status: "succeeded" }), {
        status: 200,
        headers: { "content-type": "application/json" },
      });
    }) as typeof globalThis.fetch;
    const api = new DriverApiClient({ apiUrls: ["http://127.0.0.1:2"], driverToken: "t".repeat(40), fetch });
    const { logger, lines } = captureLogger();
    expect(await drainResultOutbox({ api, outbox, logger })).toBe(held.length);
    expect(maxInFlight).toBeLessThanOrEqual(HELD_RESULT_REPORT_CONCURRENCY);
    expect(maxInFlight).toBeGreaterThan(1);
    expect((await outbox.list()).pending).toEqual([]);
    expect(lines.filter((l) => l["msg"] === "outbox.reported")).toHaveLength(held.length);
  });
});

describe("reportProviderResult through an API outage (fake clock)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A fetch that cannot connect until the fake clock reaches `upAtMs`, then answers `complete` as the API does. */
  function outageFetch(upAtMs: number): { fetch: typeof fetch; attempts: () => number } {
    let attempts = 0;
    const impl = async (): Promise<Response> => {
      attempts += 1;
      if (Date.now() < upAtMs)
        throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
      return new Response(JSON.stringify({ outcome: "applied", status: "succeeded" }), {
        status: 200,
        headers: { "content-type": "application/json" },
      });
    };
    return { fetch: impl as typeof fetch, attempts: () => attempts };
  }

  it("an API away for 150 s (far past the old 5-attempt policy): the result is still delivered and its entry removed", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date", "performance"] });
    const outbox = ResultOutboxRepository.besideStateFile(join(await mkdtemp(join(tmpdir(), "outbox-")), "state.json"));
    const pending = pendingResult();
    await outbox.put(pending);
    const { fetch, attempts } = outageFetch(Date.now() + 150_000);
    const api = new DriverApiClient({ apiUrls: ["http://127.0.0.1:2"], driverToken: "t".repeat(40), fetch });
    const { logger, lines } = captureLogger();
    const reporting = reportProviderResult(pending, { api, outbox, logger, budgetMs: 180_000 });
    await vi.advanceTimersByTimeAsync(170_000);
    const outcome = await reporting;
    expect(outcome).toEqual({ kind: "answered", via: "complete", answer: { outcome: "applied", status: "succeeded" } });
    expect(attempts()).toBeGreaterThan(5);
    expect((await outbox.list()).pending).toEqual([]);
    expect(lines.some((l) => l["msg"] === "effect.result_report_given_up")).toBe(false);
  });

  it("an API away past the budget: it throws api.unreachable, one error line names the effect, and the entry is kept for the next start", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date", "performance"] });
    const outbox = ResultOutboxRepository.besideStateFile(join(await mkdtemp(join(tmpdir(), "outbox-")), "state.json"));
    const pending = pendingResult();
    await outbox.put(pending);
    const { fetch } = outageFetch(Number.POSITIVE_INFINITY);
    const api = new DriverApiClient({ apiUrls: ["http://127.0.0.1:2"], driverToken: "t".repeat(40), fetch });
    const { logger, lines } = captureLogger();
    const reporting = reportProviderResult(pending, { api, outbox, logger, budgetMs: 120_000 });
    const settled = reporting.then(
      () => null,
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(130_000);
    expect(await settled).toMatchObject({ code: "api.unreachable" });
    expect(lines.filter((l) => l["msg"] === "effect.result_report_given_up")).toEqual([
      expect.objectContaining({
        effectId: pending.effectId,
        commandId: pending.commandId,
        budgetMs: 120_000,
        errorCode: "api.unreachable",
      }),
    ]);
    expect((await outbox.list()).pending).toEqual([pending]);
  });
});

/** Starts `node --import tsx src/main.ts` (one real Driver process); `lines` collects its JSON log lines. */
function startDriver(args: string[]): { child: ChildProcess; lines: Record<string, unknown>[]; exited: Promise<number | null> } {
  const { MOSOO_API_URLS: _urls, MOSOO_API_URL: _url, ...env } = process.env;
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
    cwd: DRIVER_DIR,
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
  const lines: Record<string, unknown>[] = [];
  let buffer = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    const parts = buffer.split("\n");
    buffer = parts.pop() ?? "";
    for (const part of parts) if (part.trim()) lines.push(JSON.parse(part) as Record<string, unknown>);
  });
  child.stderr?.resume();
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, lines, exited };
}

async function until(condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a Driver killed while it reports a provider's result", () => {
  it(
    "SIGKILL after the result was held and sent, API refusing: the restarted Driver reports it from its outbox before it connects",
    async () => {
      const api = new FakeDriverApi();
      await api.start();
      const recorder = new ToolRecorder();
      const mcp = await startHttpMcpServer(recorder);
      const dir = await mkdtemp(join(tmpdir(), "driver-outbox-"));
      const stateFile = join(dir, "state.json");
      const mcpConfig = join(dir, "mcp.json");
      await writeFile(mcpConfig, JSON.stringify({ servers: { issues: { type: "http", url: mcp.url } } }));
      const args = ["--api-url", api.url, "--mcp-config", mcpConfig, "--state-file", stateFile, "--log-level", "debug"];
      try {
        const envelope = mcpExecuteEnvelope();
        api.queue.push(envelope);
        const first = startDriver(args);
        // The API cannot store it (a database outage): the first report is refused, and the Driver is
        // SIGKILLed while it holds the result (it was written to the outbox before this request left).
        let killed = false;
        api.beforeAnswer = async (route) => {
          if (route !== "effectComplete") return;
          api.failNext("effectComplete", error(503, "store.busy", "busy"));
          if (!killed) {
            killed = true;
            first.child.kill("SIGKILL");
            await first.exited;
          }
        };
        await first.exited;
        api.beforeAnswer = null;
        expect(killed).toBe(true);
        expect(recorder.calls).toHaveLength(1);
        const claim = api.claims.get(envelope.commandId);
        if (claim?.kind !== "execute") throw new Error("expected an execute claim");
        const attemptConnection = api.requestsOf("effectClaim")[0]?.body as { connectionId: string };
        expect(await readdir(`${stateFile}.outbox`)).toEqual([`${claim.effectId}-1.json`]);
        expect(api.state.completedEffects.has(claim.effectId)).toBe(false);

        const connectsBefore = api.requestsOf("connect").length;
        const second = startDriver(args);
        await until(() => second.lines.some((l) => l["msg"] === "driver.connected"));
        second.child.kill("SIGTERM");
        expect(await second.exited).toBe(0);

        expect(api.state.completedEffects.has(claim.effectId)).toBe(true);
        const reports = api.requestsOf("effectComplete");
        expect(reports.at(-1)?.body).toMatchObject({ connectionId: attemptConnection.connectionId, attempt: 1 });
        // reported before the new connection was made
        const reportIndex = api.requests.lastIndexOf(reports.at(-1)!);
        const connectIndex = api.requests.indexOf(api.requestsOf("connect")[connectsBefore]!);
        expect(reportIndex).toBeLessThan(connectIndex);
        expect(second.lines.find((l) => l["msg"] === "outbox.reported")).toMatchObject({
          effectId: claim.effectId,
          effectStatus: "succeeded",
        });
        expect(await readdir(`${stateFile}.outbox`)).toEqual([]);
        expect(recorder.calls).toHaveLength(1); // never sent to the provider again
      } finally {
        await api.stop();
        await mcp.close();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
