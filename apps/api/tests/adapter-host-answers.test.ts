/**
 * What the isolated adapter host records when an adapter's answer or its worker goes wrong
 * (docs/DESIGN.md §4 "Adapters are untrusted code", §5), through the REAL host
 * (sandboxed child processes, heap, memory and CPU limits) and the real runtime (CrashLab, a real SQLite store):
 * - an answer over the worker's size bound, or not JSON, is `invalid_adapter_output` and the
 *   reconciliation record's error names the bound (or why it is not JSON), not a schema message
 *   about a value that was never copied back; the bound applies to what is serialised (after
 *   `toJSON()` and getters), not to the object graph first handed back;
 * - an adapter that allocates past the heap limit is `adapter_crashed` (`out_of_memory`), not
 *   `lookup_timeout`: the lookup bound here (20 s) is far above the time the worker takes to die
 *   (~1–3 s), so nothing depends on which of the two fires first.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_RECEIPT_BYTES, MAX_RESULT_BYTES, NOOP_LOGGER, type AdapterHost } from "@mosoo/effect-reconciliation/host";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";
import { CrashLab } from "./helpers/crash-lab.js";

const MISBEHAVING = fileURLToPath(new URL("./fixtures/adapters/misbehaving.adapter.ts", import.meta.url));
/** The lookup bound of these cases (ms, real time): far above a worker's cold start and death on a busy machine. */
const LOOKUP_TIMEOUT_MS = 20_000;
/** The worker's answer bound (characters): a result, a receipt and 64 Ki of slack (adapter-sandbox.tasks.ts). */
const ANSWER_BOUND = MAX_RESULT_BYTES + MAX_RECEIPT_BYTES + 64 * 1024;

describe("the isolated host's refusals, as recorded on the effect", { timeout: 120_000 }, () => {
  let host: AdapterHost;
  const terminations: string[] = [];
  beforeAll(() => {
    host = createIsolatedAdapterHost({
      heapMb: 32,
      cpuLimitMs: 10_000,
      maxProcesses: 1,
      bindTimeoutMs: 60_000,
      logger: NOOP_LOGGER,
      onTermination: (id, reason) => terminations.push(`${id}:${reason}`),
    });
  });
  afterAll(() => host.close());

  async function lookUpOnce(
    exportName: string,
  ): Promise<{ status: string; records: Array<{ outcome: string; reason_code: string | null; error: string | null }> }> {
    const { adapter } = await host.bind({ module: MISBEHAVING, export: exportName }, undefined);
    const lab = new CrashLab("lookup_only", "ok", { adapter, lookupTimeoutMs: LOOKUP_TIMEOUT_MS });
    try {
      await lab.setup();
      const effectId = await lab.toUnknownEffect();
      await lab.runtime.reconciler.reconcile(effectId, "sweep");
      const { status } = lab.sqlite.prepare("SELECT status FROM external_tool_effects WHERE id = ?").get(effectId) as {
        status: string;
      };
      const records = lab.sqlite
        .prepare("SELECT outcome, reason_code, error FROM effect_reconciliations WHERE effect_id = ? ORDER BY id")
        .all(effectId) as Array<{ outcome: string; reason_code: string | null; error: string | null }>;
      return { status, records };
    } finally {
      await lab.dispose();
    }
  }

  it("an answer over the size bound: invalid_adapter_output, and the record names the bound (not a schema message)", async () => {
    const { status, records } = await lookUpOnce("hugeAnswerAdapterFactory");
    expect(status).toBe("unknown");
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ outcome: "still_unknown", reason_code: "invalid_adapter_output" });
    expect(records[0]!.error).toContain(`the answer is larger than the ${ANSWER_BOUND}-character bound on an adapter answer`);
    expect(records[0]!.error).not.toMatch(/expected|Invalid input|notJson/);
  });

  it("a getter small when first read, 40 M characters when read again: serialised once, what crosses is what was measured", async () => {
    const { status, records } = await lookUpOnce("getterHugeAdapterFactory");
    expect(status).toBe("unknown");
    expect(records).toHaveLength(1);
    // the one read (the serialisation itself) answered provider_lagging; no second read, no 40 M copy
    expect(records[0]).toMatchObject({ outcome: "still_unknown", reason_code: "provider_lagging" });
  });

  it("a small object whose toJSON() answers 40 M characters: the bound applies to what is serialised (invalid_adapter_output naming it)", async () => {
    const { status, records } = await lookUpOnce("toJsonHugeAdapterFactory");
    expect(status).toBe("unknown");
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ outcome: "still_unknown", reason_code: "invalid_adapter_output" });
    expect(records[0]!.error).toContain(`the answer is larger than the ${ANSWER_BOUND}-character bound on an adapter answer`);
  });

  it("an answer JSON cannot carry (a BigInt): invalid_adapter_output, and the record says it is not JSON", async () => {
    const { status, records } = await lookUpOnce("bigintAnswerAdapterFactory");
    expect(status).toBe("unknown");
    expect(records[0]).toMatchObject({ outcome: "still_unknown", reason_code: "invalid_adapter_output" });
    expect(records[0]!.error).toMatch(/the answer is not JSON: TypeError: .*BigInt/);
  });

  it("allocating past the heap limit: adapter_crashed (out_of_memory), the worker counted as out_of_memory, never lookup_timeout", async () => {
    const before = terminations.length;
    const { status, records } = await lookUpOnce("heapHogAdapterFactory");
    expect(status).toBe("unknown");
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ outcome: "still_unknown", reason_code: "adapter_crashed" });
    expect(records[0]!.error).toMatch(/^out_of_memory: /);
    expect(terminations.slice(before)).toEqual(["heap-hog:out_of_memory"]);
  });
});
