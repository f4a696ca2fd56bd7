import { newUlid } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import type { AdapterDeclaration, ReconciliationAdapter } from "../src/index.ts";
import {
  CONFORMANCE_CASES,
  createConformanceCases,
  createProviderDouble,
  createProviderDoubleAdapter,
  runAdapterConformance,
  type AdapterConformanceOptions,
  type ConformanceCaseName,
  type ConformanceProvider,
  type ProviderDouble,
  type ProviderDoubleOptions,
} from "../src/testing/index.ts";
import { ARGS } from "./reconcile-fixtures.ts";

/** The conformance provider over a double: what a real provider's sandbox offers an adapter author. */
function doubleProvider(double: ProviderDouble): ConformanceProvider {
  return {
    async commitWrite(key, args) {
      const written = await double.commit(key, args);
      if (written.status !== "committed") throw new Error(`write refused: ${written.status}`);
      return { result: written.result };
    },
    async tryWriteAfterLookup(key, args) {
      const written = await double.commit(key, args);
      return written.status === "committed" && !written.replayed ? "committed" : "refused";
    },
  };
}

function suiteFor(
  name: string,
  doubleOptions: ProviderDoubleOptions = {},
  declarationOverrides: Partial<AdapterDeclaration> = {},
): AdapterConformanceOptions & { double: ProviderDouble } {
  const double = createProviderDouble(doubleOptions);
  return {
    name,
    double,
    createAdapter: () => createProviderDoubleAdapter(double, declarationOverrides),
    provider: doubleProvider(double),
    toolName: double.toolName,
    sampleArguments: ARGS,
    abortGraceMs: 500,
  };
}

// The reference adapter passes the suite, with a fence and with a maximum in-flight time.
runAdapterConformance(suiteFor("provider double (lookup fences the key)"));
runAdapterConformance(suiteFor("provider double (max in-flight 50 ms)", { keyFencing: { kind: "max_in_flight", maxInFlightMs: 50 } }));
const asyncSuite = suiteFor("provider double (async factory, one documented skip)");
runAdapterConformance({
  ...asyncSuite,
  createAdapter: async () => createProviderDoubleAdapter(asyncSuite.double),
  skip: [{ case: "answers_echo_tool_and_key", reason: "exercised by the suites above; kept to show an it.skip with its reason" }],
});

async function runCase(options: AdapterConformanceOptions, name: ConformanceCaseName) {
  const found = createConformanceCases(options).find((c) => c.name === name);
  if (!found) throw new Error(`no case ${name}`);
  return found.run();
}

describe("the conformance kit catches non-conforming adapters", () => {
  it("an adapter that hangs ignoring its signal fails lookup_honours_abort_signal", async () => {
    const suite = suiteFor("hangs", {}, {});
    suite.double.setFaults({ adapterFault: "hangs_ignoring_signal" });
    await expect(runCase({ ...suite, abortGraceMs: 30 }, "lookup_honours_abort_signal")).rejects.toThrow(/did not settle/);
  });

  it("an adapter waiting on a slow provider but honouring its signal passes lookup_honours_abort_signal", async () => {
    const suite = suiteFor("slow but cancellable", { faults: { lookupDelayMs: 60_000 } });
    await expect(runCase(suite, "lookup_honours_abort_signal")).resolves.toEqual({ status: "passed" });
  });

  it("an adapter claiming a fence its provider does not have fails fenced_key_refuses_later_writes", async () => {
    const suite = suiteFor("lying fence", { keyFencing: { kind: "max_in_flight", maxInFlightMs: 50 } }, { keyFencing: { kind: "lookup_fences_key" } });
    await expect(runCase(suite, "fenced_key_refuses_later_writes")).rejects.toThrow(/took a write/);
  });

  it("the fence case is not applicable to a max_in_flight declaration", async () => {
    const suite = suiteFor("unfenced", { keyFencing: { kind: "max_in_flight", maxInFlightMs: 50 } });
    await expect(runCase(suite, "fenced_key_refuses_later_writes")).resolves.toMatchObject({ status: "not_applicable" });
  });

  it("an adapter that confirms success for every key fails unused_key_is_never_succeeded", async () => {
    const suite = suiteFor("always yes");
    const yes: ReconciliationAdapter = {
      declaration: createProviderDoubleAdapter(suite.double).declaration,
      lookup: async (request) => ({
        outcome: "confirmed_succeeded",
        toolName: request.toolName,
        idempotencyKey: request.idempotencyKey,
        result: { content: [] },
        receipt: { observedAt: new Date().toISOString() },
      }),
    };
    await expect(runCase({ ...suite, createAdapter: () => yes }, "unused_key_is_never_succeeded")).rejects.toThrow(/confirmed_succeeded/);
  });

  it.each([
    ["wrong_key", "answers_echo_tool_and_key"],
    ["wrong_tool", "answers_echo_tool_and_key"],
    ["oversized_receipt", "answers_pass_runtime_validation"],
    ["garbage", "committed_key_is_confirmed_succeeded"],
    ["conflicting_fingerprint", "committed_key_is_confirmed_succeeded"],
  ] as const)("adapter fault %s fails %s", async (fault, caseName) => {
    const suite = suiteFor(fault);
    suite.double.setFaults({ adapterFault: fault });
    await expect(runCase(suite, caseName)).rejects.toThrow();
  });

  it("a declaration that does not name the suite's tool fails declares_the_tool", async () => {
    const suite = suiteFor("other tool", {}, { tools: ["close_issue"] });
    await expect(runCase(suite, "declares_the_tool")).rejects.toThrow(/does not include/);
  });

  it("an invalid declaration fails declaration_is_valid", async () => {
    const suite = suiteFor("bad declaration", {}, { version: "latest" });
    await expect(runCase(suite, "declaration_is_valid")).rejects.toThrow(/invalid declaration/);
  });
});

describe("runAdapterConformance options", () => {
  const base = suiteFor("options");
  it.each(["", "   "])("a skip with an empty reason (%j) throws", (reason) => {
    expect(() => createConformanceCases({ ...base, skip: [{ case: "lookup_honours_abort_signal", reason }] })).toThrow(/written reason/);
    expect(() => runAdapterConformance({ ...base, skip: [{ case: "lookup_honours_abort_signal", reason }] })).toThrow(/written reason/);
  });

  it("a skip of an unknown case throws", () => {
    expect(() => createConformanceCases({ ...base, skip: [{ case: "no_such_case" as ConformanceCaseName, reason: "because" }] })).toThrow(/unknown case/);
  });

  it("builds one case per name, carrying the skip reason", () => {
    const cases = createConformanceCases({ ...base, skip: [{ case: "declares_the_tool", reason: " not relevant " }] });
    expect(cases.map((c) => c.name)).toEqual([...CONFORMANCE_CASES]);
    expect(cases.find((c) => c.name === "declares_the_tool")?.skipReason).toBe("not relevant");
    expect(cases.filter((c) => c.skipReason !== undefined)).toHaveLength(1);
  });

  it("the unused keys it looks up are fresh ULIDs, never a committed one", async () => {
    const suite = suiteFor("fresh keys");
    const key = newUlid();
    await suite.double.commit(key, ARGS);
    await runCase(suite, "unused_key_is_never_succeeded");
    expect(suite.double.lookupCount(key)).toBe(0);
  });
});
