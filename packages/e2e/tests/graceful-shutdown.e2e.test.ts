// SIGTERM to a real API process during a burst of enqueues: it drains (new requests refused 503
// `api.shutting_down`, in-flight ones finished), closes the store and exits 0; restarted on the same
// ledger, every enqueue that was answered 2xx has its command and its effect, and nothing is half
// written (every command has its effect and every effect its command). The burst's moment of the
// SIGTERM is chosen by an observable count of answered enqueues, never by a timer.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pollUntil, RunApiClient } from "../src/http-clients.js";
import type { ManagedProcess } from "../src/managed-process.js";
import { newStackCredentials, startApiProcess } from "../src/stack.js";

const dirs: string[] = [];
const procs: ManagedProcess[] = [];
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill("SIGKILL")));
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
}, 120_000);

/** Parallel senders of the burst. */
const SENDERS = 8;

describe("SIGTERM to the API during a burst of enqueues", () => {
  it("drains, exits 0, and loses nothing that was answered 2xx", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-drain-"));
    dirs.push(workDir);
    const dbFile = join(workDir, "ledger.db");
    const credentials = newStackCredentials();
    const api = await startApiProcess(dbFile, { MOSOO_SHUTDOWN_GRACE_MS: "10000" }, credentials);
    procs.push(api.proc);
    // a registered, connected Driver to own the run (no Driver process: the commands stay queued)
    const registered = (await (
      await fetch(`${api.url}/v1/drivers/register`, {
        method: "POST",
        headers: { authorization: `Bearer ${credentials.enrollmentToken}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "drain-driver" }),
      })
    ).json()) as { driverInstanceId: string; driverToken: string };
    const connected = await fetch(`${api.url}/v1/drivers/connect`, {
      method: "POST",
      headers: { authorization: `Bearer ${registered.driverToken}` },
    });
    expect(connected.status).toBe(200);
    const runs = new RunApiClient(api.url, credentials.apiKey);
    const { runId } = await runs.createRun(registered.driverInstanceId);

    const acknowledged: Array<{ commandId: string; effectId: string }> = [];
    const refusals: Record<string, number> = {};
    let stop = false;
    const sender = async (n: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const res = await fetch(`${api.url}/v1/runs/${runId}/tool-calls`, {
            method: "POST",
            headers: { authorization: `Bearer ${credentials.apiKey}`, "content-type": "application/json" },
            body: JSON.stringify({ serverId: "tracker", toolName: "createIssue", arguments: { title: `burst ${n}-${i}` } }),
          });
          const body = (await res.json()) as { commandId?: string; effectId?: string; error?: { code: string } };
          if (res.ok) acknowledged.push({ commandId: body.commandId!, effectId: body.effectId! });
          else refusals[`${res.status} ${body.error?.code}`] = (refusals[`${res.status} ${body.error?.code}`] ?? 0) + 1;
        } catch {
          refusals["connection"] = (refusals["connection"] ?? 0) + 1;
          if (api.proc.lines.some((l) => l.json?.["msg"] === "api.stopped")) return;
        }
      }
    };
    const burst = Promise.all(Array.from({ length: SENDERS }, (_, n) => sender(n)));
    await pollUntil(async () => (acknowledged.length >= 50 ? true : undefined), 120_000, "50 answered enqueues");
    await api.proc.kill("SIGTERM"); // mid-burst: the senders keep sending
    const exit = await api.proc.exited;
    stop = true;
    await burst;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(api.proc.lines.some((l) => l.json?.["msg"] === "api.stopped")).toBe(true);
    // whatever was refused was refused cleanly (503 api.shutting_down) or met a closed connection; never a 5xx of another kind
    for (const kind of Object.keys(refusals)) expect(kind).toMatch(/^(503 api\.shutting_down|connection)$/);

    const again = await startApiProcess(dbFile, {}, credentials, "api-restarted");
    procs.push(again.proc);
    const view = await new RunApiClient(again.url, credentials.apiKey).getRun(runId);
    const commandIds = new Set(view.commands.map((c) => c.id));
    const effectIds = new Set(view.effects.map((e) => e.id));
    for (const a of acknowledged) {
      expect(commandIds.has(a.commandId)).toBe(true);
      expect(effectIds.has(a.effectId)).toBe(true);
    }
    // none half-written: as many commands as effects, each effect still an intent, each command queued
    expect(view.effects).toHaveLength(view.commands.length);
    expect(new Set(view.commands.map((c) => c.status))).toEqual(new Set(["queued"]));
    expect(view.commands.length).toBeGreaterThanOrEqual(acknowledged.length);
    process.stdout.write(
      `graceful-shutdown: ${acknowledged.length} enqueues answered 2xx, ${view.commands.length} in the ledger, refusals ${JSON.stringify(refusals)}\n`,
    );
  }, 600_000);
});
