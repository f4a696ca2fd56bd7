import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DRIVER_API } from "@mosoo/contracts";
import { afterAll, describe, expect, it } from "vitest";
import { startDelayingProxy } from "../src/delaying-proxy.js";
import { pollUntil, enqueueCreateIssue, waitForProviderCount } from "../src/http-clients.js";
import type { ManagedProcess } from "../src/managed-process.js";
import { startApiProcess, startDriverProcess, startProviderProcess, writeMcpConfig } from "../src/stack.js";

// Late evidence on real processes (docs/DESIGN.md §3 rule 13 "a Driver that already holds the
// provider's real result throws it away when the effect was fenced meanwhile"). The provider commits
// the write and HOLDS its response; while Driver A's call is in flight, Driver B starts on the same
// state file (a second process of the same instance), so the API redelivers the command to B, whose
// claim finds the effect `executing` and fences it `unknown` (reconciliation off: nothing else can
// settle it). Only then is the held response released: A gets the provider's real result, the ledger
// refuses A's `complete` (fenced), and A reports it as late evidence. The API records `succeeded`,
// resolution `reported_late`, because key, tool and fingerprint match and the effect is still unknown.
// Every step waits for an event (a log line, a provider counter, a run view); no timer decides the
// order, and the API's heartbeat TTL (300 s) is far above the test, so no finalization can intervene.

const dirs: string[] = [];
const procs: ManagedProcess[] = [];
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill("SIGKILL")));
  await Promise.all(closers.map((close) => close()));
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** Generous bound (ms) of each wait: each step takes a second or two; nothing depends on how fast. */
const WAIT_MS = 45_000;

describe("real processes: late evidence after a redelivery fenced the effect while the call was in flight", () => {
  it("the Driver that holds the provider's real result reports it; the effect ends succeeded (reported_late), one provider write, nothing re-run", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-late-evidence-"));
    dirs.push(workDir);
    const provider = await startProviderProcess(join(workDir, "provider.db"), ["--hold-response-after-commit"]);
    procs.push(provider.proc);
    const api = await startApiProcess(join(workDir, "api.db"), {
      MOSOO_EFFECT_RECONCILIATION: "off",
      MOSOO_HEARTBEAT_TTL_MS: "300000",
      MOSOO_SWEEP_INTERVAL_MS: "250",
    });
    procs.push(api.proc);
    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url });
    const stateFile = join(workDir, "driver-state.json");
    const driverA = await startDriverProcess({
      apiUrl: api.url,
      stateFile,
      mcpConfigFile,
      name: "driver-a",
      enrollmentToken: api.credentials.enrollmentToken,
    });
    procs.push(driverA.proc);

    // 1. The provider committed the write; its response is held, so Driver A's call is in flight.
    const { runs, control, runId, call } = await enqueueCommittedWrite(api, provider, driverA.driverInstanceId);

    // 2. A second process of the same instance connects: the command is redelivered to it, and its
    //    claim fences the executing effect `unknown` (it never calls the provider).
    const driverB = await startDriverProcess({
      apiUrl: api.url,
      stateFile,
      mcpConfigFile,
      name: "driver-b",
      enrollmentToken: api.credentials.enrollmentToken,
    });
    procs.push(driverB.proc);
    expect(driverB.driverInstanceId).toBe(driverA.driverInstanceId);
    expect(driverB.connectionId).not.toBe(driverA.connectionId);
    const fenced = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.commands[0]?.terminalAtMs && v.effects[0]?.status === "unknown" ? v : undefined;
      },
      WAIT_MS,
      "the redelivered claim fences the effect and the command ends",
    );
    expect(fenced.commands[0]!.error).toMatchObject({ code: "external_effect.unknown", retryable: false });
    expect(driverB.proc.lines.some((l) => l.json?.["msg"] === "tool.called")).toBe(false);
    expect(driverA.proc.lines.some((l) => l.json?.["msg"] === "tool.returned")).toBe(false); // A still waits for the provider

    // 3. Only now does the provider answer A: A's complete is refused (fenced) and A reports the result as late evidence.
    await control.release();
    const reported = await driverA.proc.waitForLine((j) => j["msg"] === "effect.late_result_reported", WAIT_MS, "the late evidence report");
    expect(reported).toMatchObject({ outcome: "applied", effectStatus: "succeeded", attempt: 1 });
    const refusedComplete = driverA.proc.lines.find((l) => l.json?.["msg"] === "effect.completed")?.json;
    expect(refusedComplete).toMatchObject({ outcome: "rejected", effectStatus: "unknown" });

    // 4. The ledger: succeeded with the provider's real result, resolution reported_late; one write, one call.
    const view = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.effects[0]?.status === "succeeded" ? v : undefined;
      },
      WAIT_MS,
      "the effect settles",
    );
    const effect = view.effects[0]!;
    expect({ status: effect.status, resolution: effect.resolution, attemptCount: effect.attemptCount }).toEqual({
      status: "succeeded",
      resolution: "reported_late",
      attemptCount: 1,
    });
    expect(JSON.stringify(effect.result)).toContain("Disk full on db-1");
    expect(effect.reconciliations).toEqual([]); // no lookup: the Driver's evidence settled it
    const resolved = view.events.filter((e) => e.type === "effect.resolved");
    expect(resolved.map((e) => e.payload)).toEqual([
      expect.objectContaining({ effectId: call.effectId, resolution: "reported_late", effectStatus: "succeeded" }),
    ]);
    // The command had already ended (rule 14: unknown, not retryable); the evidence does not reopen it.
    expect(view.commands[0]!.error).toMatchObject({ code: "external_effect.unknown", retryable: false });
    const stats = await control.stats();
    expect(stats.writes[call.idempotencyKey]).toBe(1);
    expect(stats.createCalls[call.idempotencyKey]).toBe(1);
    // The API logged the late evidence it took.
    const apiLine = await api.proc.waitForLine((j) => j["msg"] === "effect.late_result", WAIT_MS, "the API's late-result log line");
    expect(apiLine).toMatchObject({ effectId: call.effectId, action: "settle", outcome: "applied", status: "succeeded" });
  }, 150_000);
});

describe("real processes: late evidence after the instance was finalized while the call was in flight (lease loss)", () => {
  it("the heartbeat expires, finalization repair fences the effect, and the Driver's real result still settles it succeeded (reported_late)", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-late-evidence-lease-"));
    dirs.push(workDir);
    const provider = await startProviderProcess(join(workDir, "provider.db"), ["--hold-response-after-commit"]);
    procs.push(provider.proc);
    const api = await startApiProcess(join(workDir, "api.db"), {
      MOSOO_EFFECT_RECONCILIATION: "off",
      MOSOO_HEARTBEAT_TTL_MS: "2000",
      MOSOO_SWEEP_INTERVAL_MS: "250",
    });
    procs.push(api.proc);
    // Heartbeats pass until the write is in flight; from then on they are held, so the TTL expires (an event, not a race).
    let holdHeartbeats = false;
    let releaseHeld = (): void => {};
    const held = new Promise<void>((resolve) => (releaseHeld = resolve));
    const proxy = await startDelayingProxy(api.url, [
      { method: "POST", path: DRIVER_API.heartbeat.path, gate: () => (holdHeartbeats ? held : Promise.resolve()) },
    ]);
    closers.push(async () => {
      releaseHeld();
      await proxy.close();
    });
    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url });
    const driver = await startDriverProcess({
      apiUrl: proxy.url,
      stateFile: join(workDir, "driver-state.json"),
      mcpConfigFile,
      name: "driver-a",
      enrollmentToken: api.credentials.enrollmentToken,
    });
    procs.push(driver.proc);

    const { runs, control, runId, call } = await enqueueCommittedWrite(api, provider, driver.driverInstanceId);

    // 1. The write is in flight (response held); now the heartbeats stop reaching the API: the sweep finalizes the instance.
    holdHeartbeats = true;
    const fenced = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.run.status !== "active" && v.effects[0]?.status === "unknown" ? v : undefined;
      },
      WAIT_MS,
      "finalization repair fences the effect and ends the run",
    );
    expect(fenced.commands[0]!.error).toMatchObject({ code: "external_effect.unknown", retryable: false });
    expect(fenced.run.error).toMatchObject({ code: "external_effect.unknown", retryable: false });

    // 2. The provider answers: the finalized instance's Driver reports what it really got.
    await control.release();
    const reported = await driver.proc.waitForLine((j) => j["msg"] === "effect.late_result_reported", WAIT_MS, "the late evidence report");
    expect(reported).toMatchObject({ outcome: "applied", effectStatus: "succeeded", attempt: 1 });
    const view = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.effects[0]?.status === "succeeded" ? v : undefined;
      },
      WAIT_MS,
      "the effect settles",
    );
    expect({ status: view.effects[0]!.status, resolution: view.effects[0]!.resolution }).toEqual({
      status: "succeeded",
      resolution: "reported_late",
    });
    expect(JSON.stringify(view.effects[0]!.result)).toContain("Disk full on db-1");
    const stats = await control.stats();
    expect(stats.writes[call.idempotencyKey]).toBe(1);
    expect(stats.createCalls[call.idempotencyKey]).toBe(1);
    // Its other requests stay refused: the Driver ends (connection lost) after the report, the API stays up.
    const exited = await driver.proc.exited;
    expect(exited.code).toBe(1);
    expect((await fetch(`${api.url}/health`)).status).toBe(200);
  }, 150_000);
});

/**
 * Starts a run for `driverInstanceId`, enqueues one `createIssue` write on server `tracker`, and
 * waits (up to WAIT_MS) until the provider has committed it under its idempotency key: its response
 * is held by the provider, so the Driver's call is in flight. Returns the clients and the call.
 */
async function enqueueCommittedWrite(
  api: { url: string; credentials: { apiKey: string } },
  provider: { controlUrl: string },
  driverInstanceId: string,
) {
  const queued = await enqueueCreateIssue(api, provider, driverInstanceId);
  await waitForProviderCount(queued.control, "writes", queued.call.idempotencyKey, WAIT_MS, "the provider commits");
  return queued;
}
