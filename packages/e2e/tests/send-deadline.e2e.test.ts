import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DRIVER_API } from "@mosoo/contracts";
import { afterAll, describe, expect, it } from "vitest";
import { startDelayingProxy, type DelayingProxy } from "../src/delaying-proxy.js";
import { pollUntil, enqueueCreateIssue } from "../src/http-clients.js";
import type { ManagedProcess } from "../src/managed-process.js";
import {
  FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE,
  startApiProcess,
  startDriverProcess,
  startProviderProcess,
  writeMcpConfig,
} from "../src/stack.js";

// on real processes (docs/DESIGN.md §3 rule 12): a provider WITHOUT a fence, an adapter
// declaring keyFencing {max_in_flight, 2000 ms}, reconciliation on, and a proxy between Driver and API
// that holds the claim's answer 20 s and, once the API has answered the claim, delays heartbeats past
// the heartbeat TTL, so the API finalizes the Driver and fences the effect while the claim's answer is
// held. Before the fix: the sweep confirmed not_executed at ~+3.6 s and the Driver sent tools/call at
// +12 s, so the provider committed a write the ledger called not_executed. Now the Driver never
// sends after its send-by deadline (15 s here, measured from when it sent the claim request), and the
// API's window is claim + deadline + maxInFlight.
// Load-proof (the machine is 2 cores, shared): heartbeats pass undelayed until the API has answered the
// claim (a gate on an event, not a timer), so no heartbeat expiry can finalize the Driver before its claim
// lands, whatever the load; and the TTL (9 s, beats every 3 s) leaves room for a starved event loop. The
// test asserts END STATES only: whichever of the sweep and the Driver's report settles the effect, it
// ends not_executed with 0 provider writes, and is never not_executed with a write.

const dirs: string[] = [];
const procs: ManagedProcess[] = [];
let proxy: DelayingProxy | undefined;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill("SIGKILL")));
  await proxy?.close();
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

const SEND_DEADLINE_MS = 15_000;
const CLAIM_ANSWER_HOLD_MS = 20_000;
/** Heartbeat TTL (ms) of the API: the Driver beats every TTL/3 = 3 s, so a Driver starved up to ~6 s stays alive; expiry after the claim (~+9 s) comes before the window closes (+17 s). */
const HEARTBEAT_TTL_MS = 9_000;
/** Heartbeats after the claim was answered are forwarded this late (ms): more than one TTL, so they cannot keep the Driver alive. */
const HEARTBEAT_DELAY_MS = 30_000;
/** Generous bound (ms) of each wait: the outcome arrives in ~21 s on a quiet machine; nothing depends on how fast. */
const WAIT_MS = 180_000;

describe("real processes: a claim answer held past the send-by deadline", () => {
  it("the Driver never sends tools/call after the deadline; the effect ends not_executed with 0 provider writes", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-send-deadline-"));
    dirs.push(workDir);
    const provider = await startProviderProcess(join(workDir, "provider.db")); // no --fence-on-lookup-miss: no fence
    procs.push(provider.proc);
    const bindingsFile = join(workDir, "bindings.json");
    writeFileSync(
      bindingsFile,
      JSON.stringify({ bindings: { tracker: { package: FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE, options: { url: provider.url } } } }),
    );
    const api = await startApiProcess(join(workDir, "api.db"), {
      MOSOO_EFFECT_RECONCILIATION: "on",
      MOSOO_RECONCILIATION_BINDINGS_FILE: bindingsFile,
      MOSOO_HEARTBEAT_TTL_MS: String(HEARTBEAT_TTL_MS),
      MOSOO_SWEEP_INTERVAL_MS: "250",
      MOSOO_SEND_DEADLINE_MS: String(SEND_DEADLINE_MS),
    });
    procs.push(api.proc);
    proxy = await startDelayingProxy(api.url, [
      { method: "POST", path: DRIVER_API.effectClaim.path, holdAnswerMs: CLAIM_ANSWER_HOLD_MS },
      { method: "POST", path: DRIVER_API.heartbeat.path, delayRequestMs: HEARTBEAT_DELAY_MS, after: DRIVER_API.effectClaim.path },
    ]);
    const driver = await startDriverProcess({
      apiUrl: proxy.url,
      stateFile: join(workDir, "driver-state.json"),
      mcpConfigFile: writeMcpConfig(workDir, { tracker: provider.url }),
      name: "slow-link",
      enrollmentToken: api.credentials.enrollmentToken,
    });
    procs.push(driver.proc);

    const { runs, control, runId, call } = await enqueueCreateIssue(api, provider, driver.driverInstanceId);

    // 1. The held claim answer reaches the Driver, which then decides (send or not): wait for that decision.
    const decision = await driver.proc.waitForLine(
      (j) => j["msg"] === "effect.send_deadline_missed" || j["msg"] === "tool.called",
      WAIT_MS,
      "the Driver's send decision",
    );
    expect(decision["msg"]).toBe("effect.send_deadline_missed");
    expect(Number(decision["elapsedMs"])).toBeGreaterThanOrEqual(CLAIM_ANSWER_HOLD_MS);
    // 2. The effect settles (by the sweep's lookup after claim + deadline + maxInFlight, or by the Driver's report).
    const effect = await pollUntil(
      async () => {
        const e = (await runs.getRun(runId)).effects.find((x) => x.id === call.effectId);
        return e && (e.status === "not_executed" || e.status === "succeeded") ? e : undefined;
      },
      WAIT_MS,
      "the effect settles",
    );
    // 3. End state: nothing reached the provider, and the ledger says so.
    const stats = await control.stats();
    expect(stats.createCalls[call.idempotencyKey] ?? 0).toBe(0);
    expect(stats.writes[call.idempotencyKey] ?? 0).toBe(0);
    expect(effect.status).toBe("not_executed");
    expect(["reconciled", "deadline_missed"]).toContain(effect.resolution);
    expect(driver.proc.lines.some((l) => l.json?.["msg"] === "tool.called")).toBe(false);
    // The window the API applied covers deadline + maxInFlight: any in_flight_window refusal came before it closed.
    const view = await runs.getRun(runId);
    const mine = view.effects.find((x) => x.id === call.effectId)!;
    expect(mine.reconciliations.filter((r) => r.outcome === "confirmed_not_executed").length).toBeLessThanOrEqual(1);
    // The proxy really held the claim's answer.
    const claimSeen = proxy.seen.find((s) => s.path === DRIVER_API.effectClaim.path);
    expect(claimSeen && claimSeen.answeredAtMs - claimSeen.forwardedAtMs).toBeGreaterThanOrEqual(CLAIM_ANSWER_HOLD_MS);
  }, 600_000);
});
