// A PostgreSQL server killed and restarted while the Driver reports a result the provider has just
// committed, with reconciliation OFF (the default): the Driver holds the result in its outbox and
// reports it until the API can store it, so the effect ends `succeeded` from the provider's own
// answer and the provider wrote once. Real processes (API, Driver, fixture provider) on a throwaway
// server of this file's own (it is killed). Every step waits for an observable state; no timer decides an order.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPostgres, type RunningPostgres } from "@mosoo/test-postgres";
import { afterAll, describe, expect, it } from "vitest";
import { pollUntil, ProviderControlClient, RunApiClient } from "../src/http-clients.js";
import type { ManagedProcess } from "../src/managed-process.js";
import { startApiProcess, startDriverProcess, startProviderProcess, writeMcpConfig } from "../src/stack.js";

/** Generous bound (ms) of each wait: a step takes a second or two; nothing depends on how fast. */
const WAIT_MS = 120_000;

const dirs: string[] = [];
const procs: ManagedProcess[] = [];
let server: RunningPostgres | undefined;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill("SIGKILL")));
  await server?.stop();
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
}, 120_000);

/** The last output lines of a process, for a failure's message. */
const tail = (p: ManagedProcess) =>
  p.lines
    .slice(-25)
    .map((l) => l.raw.slice(0, 400))
    .join("\n");

describe("a PostgreSQL server killed while the Driver reports a committed result", () => {
  it("the effect ends succeeded with the provider's result, reconciliation off, one provider write", async () => {
    server = await startPostgres({ fsync: true }); // durable: an immediate shutdown keeps every commit
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-outage-"));
    dirs.push(workDir);
    const provider = await startProviderProcess(join(workDir, "provider.db"), ["--hold-response-after-commit"]);
    procs.push(provider.proc);
    // a heartbeat TTL far above the outage: this test is about the result, not about liveness
    const api = await startApiProcess(
      { databaseUrl: server.url, poolSize: 4 },
      { MOSOO_HEARTBEAT_TTL_MS: "600000", MOSOO_DATABASE_QUERY_TIMEOUT_MS: "2000" },
    );
    procs.push(api.proc);
    const stateFile = join(workDir, "driver.json");
    const driver = await startDriverProcess({
      apiUrl: api.url,
      stateFile,
      mcpConfigFile: writeMcpConfig(workDir, { tracker: provider.url }),
      name: "outage-driver",
      enrollmentToken: api.credentials.enrollmentToken,
    });
    procs.push(driver.proc);
    const runs = new RunApiClient(api.url, api.credentials.apiKey);
    const control = new ProviderControlClient(provider.controlUrl);
    const { runId } = await runs.createRun(driver.driverInstanceId);
    const call = await runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: { title: "through an outage", body: "e2e" },
    });

    // The provider committed the write and holds its answer.
    await pollUntil(
      async () => ((await control.stats()).writes[call.idempotencyKey] === 1 ? true : undefined),
      WAIT_MS,
      "the provider commits",
    );
    // The database goes away; then the provider answers the Driver.
    await server.crash();
    await control.release();
    // The Driver holds the result durably and is reporting it to an API whose store is down.
    const outboxDir = `${stateFile}.outbox`;
    await pollUntil(
      async () => (existsSync(outboxDir) && readdirSync(outboxDir).length > 0 ? true : undefined),
      WAIT_MS,
      "the result in the Driver's outbox",
    );
    await driver.proc.waitForLine(
      (j) => j["msg"] === "api.retry" && (j["route"] === "effectComplete" || j["route"] === "effectLateResult"),
      WAIT_MS,
      "a retried result report",
    );
    const readyDuring = await fetch(`${api.url}/ready`);
    expect(readyDuring.status).toBe(503);

    await server.restart();
    const view = await pollUntil(
      async () => {
        try {
          const v = await runs.getRun(runId);
          return v.effects[0]?.status === "succeeded" && v.commands[0]?.terminalAtMs ? v : undefined;
        } catch {
          return undefined; // the API's pool is reconnecting
        }
      },
      WAIT_MS,
      "the effect succeeds",
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\nAPI:\n${tail(api.proc)}\nDriver:\n${tail(driver.proc)}`);
    });
    const effect = view.effects[0]!;
    expect(effect.id).toBe(call.effectId);
    expect(effect.status).toBe("succeeded");
    expect(["provider_result", "reported_late"]).toContain(effect.resolution);
    expect(effect.result).toMatchObject({ outputText: expect.stringMatching(/^Created issue #/) });
    expect(effect.reconciliations).toEqual([]); // reconciliation is off: the provider's own answer settled it
    expect((await control.stats()).writes).toEqual({ [call.idempotencyKey]: 1 }); // one provider write
    await pollUntil(async () => (readdirSync(outboxDir).length === 0 ? true : undefined), WAIT_MS, "the outbox emptied");
    expect(driver.proc.lines.some((l) => l.json?.["msg"] === "effect.result_report_given_up")).toBe(false);
  }, 600_000);
});
