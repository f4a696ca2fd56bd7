/**
 * The guard in the adapter's sandboxed process (docs/DESIGN.md §4 "The sandbox is the operating
 * system's"): the permission model refuses child processes and workers, but not signals, so the guard
 * (adapter-sandbox.guard.ts) refuses those routes, and the others it lists, before any adapter code loads.
 * Each case runs a hostile adapter (tests/fixtures/adapters/misbehaving.adapter.ts, routes found by a
 * hostile review) through the REAL isolated host: the call rejects with the guard's error (which the
 * runtime records as `adapter_error`, or `invalid_adapter_output` when the refusal happens in the
 * answer's `toJSON()`), and this process — the API's stand-in — is still running afterwards.
 */
import { fileURLToPath } from "node:url";
import type { AdapterTerminationReason } from "@mosoo/effect-reconciliation/host";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SAMPLE_LOOKUP_REQUEST as REQUEST } from "./helpers/sample-lookup-request.js";
import { AdapterAnswerRefusedError, NOOP_LOGGER, type AdapterHost } from "@mosoo/effect-reconciliation/host";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";

const MISBEHAVING = fileURLToPath(new URL("./fixtures/adapters/misbehaving.adapter.ts", import.meta.url));
/** The lookup bound of these cases (ms, real time): far above a process's cold start on a busy machine. */
const LOOKUP_TIMEOUT_MS = 20_000;

const REFUSED = [
  {
    name: "process._kill(process.pid, 9)",
    exportName: "underscoreKillAdapterFactory",
    error: /process\._kill is not available to adapter code/,
  },
  {
    name: "process._debugProcess(parent pid): the API's inspector",
    exportName: "debugParentAdapterFactory",
    error: /process\._debugProcess is not available to adapter code/,
  },
  {
    name: "trace_events.createTracing (a log file written by native code)",
    exportName: "traceEventsAdapterFactory",
    error: /trace_events\.createTracing is not available to adapter code/,
  },
  {
    name: "os.setPriority(parent pid)",
    exportName: "setPriorityAdapterFactory",
    error: /os\.setPriority is not available to adapter code/,
  },
  {
    name: "a nested Worker that SIGKILLs the process",
    exportName: "nestedWorkerAdapterFactory",
    error: /worker_threads\.Worker is not available to adapter code/,
  },
  {
    name: "child_process.spawnSync('kill', ['-9', pid])",
    exportName: "spawnsKillAdapterFactory",
    error: /child_process\.spawnSync is not available to adapter code/,
  },
  {
    name: "new ChildProcess().spawn(...)",
    exportName: "childProcessClassAdapterFactory",
    error: /child_process\.ChildProcess is not available to adapter code/,
  },
  {
    name: "process.binding('spawn_sync')",
    exportName: "bindingSpawnAdapterFactory",
    error: /process\.binding is not available to adapter code/,
  },
  {
    name: "module.register of hooks that SIGKILL",
    exportName: "registersHooksAdapterFactory",
    error: /module\.register is not available to adapter code/,
  },
  {
    name: "an inspector session on the main thread",
    exportName: "inspectorAdapterFactory",
    error: /inspector\.Session is not available to adapter code/,
  },
] as const;

describe("the sandboxed process's guard (real sandbox)", { timeout: 180_000 }, () => {
  let host: AdapterHost;
  beforeAll(() => {
    host = createIsolatedAdapterHost({ heapMb: 32, cpuLimitMs: 10_000, maxProcesses: 1, bindTimeoutMs: 60_000, logger: NOOP_LOGGER });
  });
  afterAll(() => host.close());

  it.each(REFUSED)("$name: the call rejects with the guard's error; the process lives", async ({ exportName, error }) => {
    const { adapter } = await host.bind({ module: MISBEHAVING, export: exportName }, undefined);
    const outcome = adapter.lookup(REQUEST, { signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS), logger: NOOP_LOGGER });
    await expect(outcome).rejects.toThrow(error);
    // still here: a SIGKILL to this process would have ended the test run; one more turn of the loop to be sure
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(process.exitCode ?? 0).toBe(0);
  });

  it("toJSON() calling process._kill during the worker's JSON copy: the answer is refused (not JSON), the process lives", async () => {
    const { adapter } = await host.bind({ module: MISBEHAVING, export: "toJsonKillAdapterFactory" }, undefined);
    const outcome = adapter.lookup(REQUEST, { signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS), logger: NOOP_LOGGER });
    await expect(outcome).rejects.toBeInstanceOf(AdapterAnswerRefusedError);
    await expect(outcome).rejects.toThrow(/the answer is not JSON: .*process\._kill is not available to adapter code/);
  });

  it("a well-behaved adapter in the same guarded worker still answers (the deny-list breaks nothing it needs)", async () => {
    // its getter is read once, by the serialisation: a plain still_unknown answer crosses
    const { adapter } = await host.bind({ module: MISBEHAVING, export: "getterHugeAdapterFactory" }, undefined);
    await expect(adapter.lookup(REQUEST, { signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS), logger: NOOP_LOGGER })).resolves.toEqual({
      outcome: "still_unknown",
      reasonCode: "provider_lagging",
    });
  });
});

describe("the sandbox's bounds hold while the process is idle (real sandbox)", { timeout: 180_000 }, () => {
  it.each([
    ["growsAfterAnswerAdapterFactory", "out_of_memory"],
    ["spinsAfterAnswerAdapterFactory", "cpu_limit"],
  ] as const)("%s: answers, then is killed while idle (%s), and the next call gets a fresh process", async (exportName, reason) => {
    let killed: (reason: AdapterTerminationReason) => void = () => undefined;
    const termination = new Promise<AdapterTerminationReason>((resolve) => (killed = resolve));
    const host = createIsolatedAdapterHost({
      heapMb: 32,
      cpuLimitMs: 300,
      maxProcesses: 1,
      bindTimeoutMs: 60_000,
      logger: NOOP_LOGGER,
      onTermination: (_adapterId, why) => killed(why),
    });
    try {
      const { adapter } = await host.bind({ module: MISBEHAVING, export: exportName }, undefined);
      const first = await adapter.lookup(REQUEST, { signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS), logger: NOOP_LOGGER });
      expect(first).toMatchObject({ outcome: "still_unknown" });
      expect(await termination).toBe(reason);
      await expect(adapter.lookup(REQUEST, { signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS), logger: NOOP_LOGGER })).resolves.toMatchObject(
        {
          outcome: "still_unknown",
        },
      );
    } finally {
      await host.close();
    }
  });
});
