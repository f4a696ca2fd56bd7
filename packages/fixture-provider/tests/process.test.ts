import { spawnSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { fingerprintArguments, newUlid } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import { CreateIssueToolResultSchema, GetOperationAnswerSchema, IssueStore } from "../src/index.js";
import { PACKAGE_DIR, callCreateIssue, callGetOperation, connectHttp, firstText, resolveTsx, spawnMain, tempDbFile } from "./helpers.js";

const READY_LINE =
  /^\{"event":"ready","url":"http:\/\/127\.0\.0\.1:(\d+)\/mcp","controlUrl":"http:\/\/127\.0\.0\.1:\1\/control","pid":\d+\}$/;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("main.ts as a process", { timeout: 30_000 }, () => {
  it("serves MCP over stdio (tsx src/main.ts --stdio)", async () => {
    const dbFile = tempDbFile();
    const transport = new StdioClientTransport({
      command: resolveTsx(),
      args: ["src/main.ts", "--stdio", "--db", dbFile, "--log-level", "silent"],
      cwd: PACKAGE_DIR,
      stderr: "pipe",
    });
    const client = new Client({ name: "stdio-test", version: "0.0.0" });
    await client.connect(transport);
    const key = newUlid();
    const args = { title: "over stdio", body: "b" };
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name).sort()).toEqual(["closeIssue", "createIssue", "getOperation"]);
      const created = CreateIssueToolResultSchema.parse(await callCreateIssue(client, args, key));
      const replay = await callCreateIssue(client, args, key);
      expect(replay.structuredContent).toEqual(created.structuredContent);
      const answer = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
      if (!answer.found) throw new Error("expected found");
      expect(answer.requestFingerprint).toBe(fingerprintArguments(args));
      expect(answer.result).toEqual(created);
      expect(firstText(await callCreateIssue(client, args))).toMatch(/^idempotency_key_required/);
    } finally {
      await client.close();
    }
    const store = IssueStore.open(dbFile);
    try {
      expect(store.stats()).toMatchObject({ writes: { [key]: 1 }, createCalls: { [key]: 2 }, lookups: { [key]: 1 } });
    } finally {
      store.close();
    }
  });

  it("prints exactly the ready line on stdout and exits 0 on SIGTERM", async () => {
    const spawned = await spawnMain(["--db", tempDbFile(), "--log-level", "info"]);
    expect(spawned.readyLine).toMatch(READY_LINE);
    expect(spawned.ready.pid).toBeGreaterThan(0);
    const stats = await fetch(`${spawned.ready.controlUrl}/stats`);
    expect(await stats.json()).toEqual({ writes: {}, createCalls: {}, lookups: {}, fenced: [] });
    spawned.child.kill("SIGTERM");
    const exit = await spawned.exited;
    expect(exit.code).toBe(0);
    expect(isAlive(spawned.ready.pid)).toBe(false);
    // Logs went to stderr as pino JSON lines.
    expect(spawned.stderr()).toMatch(/"msg":"shutting down"/);
  });

  it("--exit-after-commit kills the process right after the commit; the write is in the database", async () => {
    const dbFile = tempDbFile();
    const spawned = await spawnMain(["--db", dbFile, "--exit-after-commit", "--log-level", "silent"]);
    expect(spawned.readyLine).toMatch(READY_LINE);
    const client = await connectHttp(spawned.ready.url);
    const key = newUlid();
    const args = { title: "crash after commit", body: "b" };
    await expect(callCreateIssue(client, args, key, { timeout: 10_000 })).rejects.toThrow();
    const exit = await spawned.exited;
    // Killed by SIGKILL: directly (signal) or as reported by the tsx wrapper (128 + 9).
    expect(exit.signal === "SIGKILL" || exit.code === 137).toBe(true);
    expect(isAlive(spawned.ready.pid)).toBe(false);
    await client.close().catch(() => undefined);

    const store = IssueStore.open(dbFile);
    try {
      expect(store.stats().writes).toEqual({ [key]: 1 });
      const answer = store.lookupOperation(key, { fenceOnMiss: false });
      if (!answer.found || answer.toolName !== "createIssue") throw new Error("expected the committed createIssue");
      expect(answer.requestFingerprint).toBe(fingerprintArguments(args));
      expect(answer.result.structuredContent.title).toBe("crash after commit");
    } finally {
      store.close();
    }
  });

  it.each([
    ["a non-numeric port", ["--port", "abc", "--db", "x.db"]],
    ["a missing --db", []],
    ["an unknown flag", ["--db", "x.db", "--frobnicate"]],
    ["a non-loopback host", ["--db", "x.db", "--host", "0.0.0.0"]],
  ])("refuses %s with one readable line and a non-zero exit", (_label, args) => {
    const run = spawnSync(resolveTsx(), ["src/main.ts", ...args], { cwd: PACKAGE_DIR, encoding: "utf8" });
    expect(run.status).not.toBe(0);
    expect(run.stdout).toBe("");
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^error: /);
  });

  it("--help describes every flag", () => {
    const run = spawnSync(resolveTsx(), ["src/main.ts", "--help"], { cwd: PACKAGE_DIR, encoding: "utf8" });
    expect(run.status).toBe(0);
    for (const flag of [
      "--port",
      "--host",
      "--db",
      "--stdio",
      "--fence-on-lookup-miss",
      "--delay-before-commit-ms",
      "--hold-response-after-commit",
      "--exit-after-commit",
      "--fail-before-commit",
    ]) {
      expect(run.stdout).toContain(flag);
    }
  });
});
