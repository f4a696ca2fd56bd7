import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";
import { afterAll, describe, expect, it } from "vitest";
import { pollUntil, ProviderControlClient, RunApiClient } from "../src/http-clients.js";
import type { ManagedProcess } from "../src/managed-process.js";
import { startApiInstances, startApiProcess, startDriverProcess, startProviderProcess, writeMcpConfig } from "../src/stack.js";
import { entryPoints } from "../src/workspace-paths.js";

// The real API process on a real PostgreSQL server (docs/DESIGN.md §11, MOSOO_DATABASE_URL): the
// throwaway server of @mosoo/test-postgres, a fresh database per file. A run is served end to end
// (enqueue -> the Driver executes -> succeeded), and the operator CLI reads the same database with
// --database-url. Every wait polls an observable state with a generous bound; no timer decides an order.

const dirs: string[] = [];
const procs: ManagedProcess[] = [];
let database: TestDatabase | undefined;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill("SIGKILL")));
  await database?.drop();
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
}, 120_000);

/** Generous bound (ms) of each wait: a step takes a second or two; nothing depends on how fast. */
const WAIT_MS = 60_000;

async function effectsCli(args: string[], env: Record<string, string> = {}) {
  const e = entryPoints();
  return execa(e.node, [...e.nodeArgs, "src/effects.main.ts", ...args], { cwd: e.api.cwd, env, reject: false });
}

describe("real processes on a real PostgreSQL store", () => {
  it("serves a run end to end on MOSOO_DATABASE_URL, and `effects --database-url` lists its effect", async () => {
    const db = (database ??= await useTestDatabase("e2e_pg_store"));
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-pg-"));
    dirs.push(workDir);
    const provider = await startProviderProcess(join(workDir, "provider.db"));
    procs.push(provider.proc);
    const api = await startApiProcess({ databaseUrl: db.url, poolSize: 4 }, { MOSOO_EFFECT_RECONCILIATION: "on" });
    procs.push(api.proc);
    expect(api.proc.lines.find((l) => l.json?.["msg"] === "api.listening")?.json).toMatchObject({ store: "postgres" });
    expect(api.proc.lines.some((l) => l.raw.includes(new URL(db.url).password || "\u0000"))).toBe(false);
    const mcpConfigFile = writeMcpConfig(workDir, { tracker: provider.url });
    const driver = await startDriverProcess({
      apiUrl: api.url,
      stateFile: join(workDir, "driver.json"),
      mcpConfigFile,
      name: "pg-driver",
      enrollmentToken: api.credentials.enrollmentToken,
    });
    procs.push(driver.proc);
    const runs = new RunApiClient(api.url, api.credentials.apiKey);
    const { runId } = await runs.createRun(driver.driverInstanceId);
    const call = await runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: { title: "on postgres", body: "e2e" },
    });
    const view = await pollUntil(
      async () => {
        const v = await runs.getRun(runId);
        return v.effects[0]?.status === "succeeded" && v.commands[0]?.terminalAtMs ? v : undefined;
      },
      WAIT_MS,
      "the effect succeeds",
    );
    expect(view.effects.map((e) => [e.id, e.status, e.attemptCount])).toEqual([[call.effectId, "succeeded", 1]]);
    const stats = await new ProviderControlClient(provider.controlUrl).stats();
    expect(stats.writes).toEqual({ [call.idempotencyKey]: 1 }); // one provider write
    expect(view.effects[0]!.result).toMatchObject({ outputText: expect.stringMatching(/^Created issue #/) });

    const listed = await effectsCli(["--database-url", db.url, "--json", "list", "--status", "succeeded"], {
      MOSOO_EFFECT_RECONCILIATION: "on",
    });
    expect(listed.stderr).toBe("");
    expect(listed.exitCode).toBe(0);
    expect(listed.stdout).toContain(call.effectId);
    // the same through MOSOO_DATABASE_URL
    const viaEnv = await effectsCli(["--json", "show", call.effectId], {
      MOSOO_DATABASE_URL: db.url,
      MOSOO_EFFECT_RECONCILIATION: "on",
    });
    expect(viaEnv.exitCode).toBe(0);
    expect(viaEnv.stdout).toContain('"succeeded"');
  }, 300_000);

  it("refuses an unreachable database URL in one line, exit 2, never echoing the password", async () => {
    const cli = await effectsCli(["--database-url", "postgres://mosoo:pw-hunter2@127.0.0.1:1/mosoo", "list"]);
    expect(cli.exitCode).toBe(2);
    expect(cli.stderr.trim().split("\n")).toHaveLength(1);
    expect(cli.stderr).toMatch(/config\.invalid: --database-url \(or MOSOO_DATABASE_URL\): cannot open the PostgreSQL store/);
    expect(cli.stderr).not.toContain("hunter2");
    const e = entryPoints();
    const apiRun = await execa(e.node, [...e.nodeArgs, e.api.main], {
      cwd: e.api.cwd,
      env: { MOSOO_DATABASE_URL: "postgres://mosoo:pw-hunter2@127.0.0.1:1/mosoo", MOSOO_PORT: "0" },
      reject: false,
    });
    expect(apiRun.exitCode).toBe(2);
    expect(apiRun.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^config\.invalid: MOSOO_DATABASE_URL: cannot open the PostgreSQL store: /),
    ]);
    expect(apiRun.stderr).not.toContain("hunter2");
  }, 120_000);

  it("two API processes on one database serve the same Driver, which is given both URLs", async () => {
    const db = (database ??= await useTestDatabase("e2e_pg_store"));
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-pg2-"));
    dirs.push(workDir);
    const provider = await startProviderProcess(join(workDir, "provider.db"));
    procs.push(provider.proc);
    const apis = await startApiInstances({ databaseUrl: db.url, poolSize: 3 }, 2);
    procs.push(...apis.map((a) => a.proc));
    const credentials = apis[0]!.credentials;
    const driver = await startDriverProcess({
      apiUrl: apis.map((a) => a.url),
      stateFile: join(workDir, "driver.json"),
      mcpConfigFile: writeMcpConfig(workDir, { tracker: provider.url }),
      name: "pg-driver-2",
      enrollmentToken: credentials.enrollmentToken,
    });
    procs.push(driver.proc);
    // the run is created on the second instance; the Driver polls the first: one database, one ledger
    const runs = new RunApiClient(apis[1]!.url, credentials.apiKey);
    const { runId } = await runs.createRun(driver.driverInstanceId);
    const call = await runs.enqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: { title: "two instances", body: "e2e" },
    });
    const view = await pollUntil(
      async () => {
        const v = await new RunApiClient(apis[0]!.url, credentials.apiKey).getRun(runId);
        return v.effects[0]?.status === "succeeded" ? v : undefined;
      },
      WAIT_MS,
      "the effect succeeds",
    );
    expect(view.effects[0]!.attemptCount).toBe(1);
    const stats = await new ProviderControlClient(provider.controlUrl).stats();
    expect(stats.writes).toEqual({ [call.idempotencyKey]: 1 }); // one provider write
    expect(view.effects[0]!.result).toMatchObject({ outputText: expect.stringMatching(/^Created issue #/) });
  }, 300_000);
});
