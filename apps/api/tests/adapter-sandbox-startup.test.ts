/**
 * A sandboxed adapter process's CPU-time bound counts a call's CPU time from the child's ready line
 * (written before the adapter module is imported), not from the spawn: the start-up of Node and the
 * bundle is the host's cost. On a loaded machine that start-up alone could pass a tight bound, and a
 * well-behaved adapter's first call on a fresh process was then killed (`cpu_limit`). The child here
 * (fixtures/sandbox/startup-cost.child.mjs) spends CPU time, not wall time, so no case depends on timers.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { AdapterTerminationReason } from "@mosoo/effect-reconciliation/host";
import { afterEach, describe, expect, it } from "vitest";
import { SandboxProcess } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.process.js";

const CHILD = fileURLToPath(new URL("./fixtures/sandbox/startup-cost.child.mjs", import.meta.url));
const CPU_LIMIT_MS = 300;
const TASK = {
  op: "lookup",
  source: { module: "unused", export: "unused" },
  options: null,
  tools: undefined,
  request: {},
  timeoutMs: 1_000,
} as const;
const started: SandboxProcess[] = [];

function start(env: Record<string, string>): { child: SandboxProcess; idleDeaths: AdapterTerminationReason[] } {
  const idleDeaths: AdapterTerminationReason[] = [];
  const child = new SandboxProcess({
    bundleFile: CHILD,
    readable: [dirname(CHILD)],
    env,
    packageInfo: { name: null, version: null },
    heapMb: 64,
    rssLimitBytes: 512 * 1024 * 1024,
    cpuLimitMs: CPU_LIMIT_MS,
    onOutput: () => undefined,
    onIdleDeath: (reason) => idleDeaths.push(reason),
  });
  started.push(child);
  return { child, idleDeaths };
}

afterEach(() => {
  for (const child of started.splice(0)) child.kill();
});

describe("a sandboxed process's CPU-time bound (real child process)", { timeout: 60_000 }, () => {
  it("a start-up that uses twice the bound before the ready line does not count against the first call", async () => {
    const { child } = start({ STARTUP_CPU_MS: String(2 * CPU_LIMIT_MS) });
    await expect(child.call(TASK, AbortSignal.timeout(50_000))).resolves.toEqual({ kind: "answered", json: null, logs: [] });
    expect(child.dead).toBe(false);
  });

  it("CPU time after the ready line still counts: a call that uses twice the bound is killed (cpu_limit)", async () => {
    const { child } = start({ CALL_CPU_MS: String(2 * CPU_LIMIT_MS) });
    await expect(child.call(TASK, AbortSignal.timeout(50_000))).rejects.toMatchObject({ reason: "cpu_limit" });
    expect(child.dead).toBe(true);
  });

  it("CPU time used after the ready line while the host's event loop is busy still counts (the child's own reading is the start)", async () => {
    const { child } = start({ AFTER_READY_CPU_MS: String(2 * CPU_LIMIT_MS) });
    const call = child.call(TASK, AbortSignal.timeout(50_000));
    // the host busy for a while (a GC pause, a long synchronous query): the ready line waits in the pipe meanwhile
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      // spin: this event loop does not turn
    }
    await expect(call).rejects.toMatchObject({ reason: "cpu_limit" });
  });

  it("a ready line without the child's CPU time breaks the protocol: the process is killed (crashed)", async () => {
    const { child } = start({ READY_WITHOUT_CPU: "1" });
    await expect(child.call(TASK, AbortSignal.timeout(50_000))).rejects.toMatchObject({ reason: "crashed" });
    expect(child.dead).toBe(true);
  });

  it("a second ready line breaks the protocol: the process is killed (crashed)", async () => {
    const { child } = start({ READY_LINES: "2" });
    const call = child.call(TASK, AbortSignal.timeout(50_000));
    await expect(call).rejects.toMatchObject({ reason: "crashed" });
    expect(child.dead).toBe(true);
  });
});
