import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as root from "../src/index.ts";
import * as testing from "../src/testing/index.ts";

const SRC = fileURLToPath(new URL("../src", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

describe("public surface", () => {
  it("no source file uses `export *`", () => {
    const offenders = sourceFiles(SRC).filter((file) => /export\s+\*/.test(readFileSync(file, "utf8")));
    expect(offenders).toEqual([]);
  });

  it("the package imports no app, database or HTTP library (DESIGN §2)", () => {
    const imports = sourceFiles(SRC).flatMap((file) => [...readFileSync(file, "utf8").matchAll(/from\s+"([^"]+)"/g)].map((m) => m[1] ?? ""));
    const external = [...new Set(imports.filter((specifier) => !specifier.startsWith(".")))].sort();
    expect(external).toEqual(["@mosoo/contracts", "node:assert/strict", "node:buffer", "vitest", "zod"]);
  });

  it("the root entry exports exactly the documented runtime values", () => {
    expect(Object.keys(root).sort()).toEqual(
      [
        "ADAPTER_TERMINATION_REASONS",
        "AdapterCrashedError",
        "AdapterDeclarationSchema",
        "AdapterIdSchema",
        "AdapterSourceSchema",
        "AdapterReasonCodeSchema",
        "AdapterVersionSchema",
        "BoundedMcpToolResultSchema",
        "CompensationDeclarationSchema",
        "CompensationPlanSchema",
        "ConfirmedNotExecutedOutcomeSchema",
        "ConfirmedSucceededOutcomeSchema",
        "INELIGIBLE_REASON_CODES",
        "IneligibleReasonCodeSchema",
        "KeyFencingSchema",
        "LookupOutcomeSchema",
        "LookupRequestSchema",
        "MAX_COMPENSATION_ARGUMENTS_BYTES",
        "MAX_LOOKUP_TIMEOUT_MS",
        "MAX_PROVIDER_OPERATION_ID_LENGTH",
        "MAX_RECEIPT_BYTES",
        "MAX_RESULT_BYTES",
        "NOOP_LOGGER",
        "REASON_CODE_PATTERN",
        "RECONCILIATION_ERROR_CODES",
        "RUNTIME_REASON_CODES",
        "ReceiptSchema",
        "ReconcilableEffectSchema",
        "ReconciliationError",
        "RuntimeReasonCodeSchema",
        "StillUnknownOutcomeSchema",
        "adapterFactoryOf",
        "askAdapter",
        "judgeLookupAnswer",
        "checkEligibility",
        "createAdapterRegistry",
        "isEligible",
        "planCompensation",
        "reconcileEffect",
      ].sort(),
    );
  });

  it("the ./testing entry exports exactly the kit", () => {
    expect(Object.keys(testing).sort()).toEqual(
      [
        "CONFORMANCE_CASES",
        "PROVIDER_DOUBLE_ADAPTER_ID",
        "ProviderResponseLostError",
        "createConformanceCases",
        "createManualClock",
        "createProviderDouble",
        "createProviderDoubleAdapter",
        "runAdapterConformance",
        "systemClock",
      ].sort(),
    );
  });

  it("reason-code enums match their const arrays", () => {
    expect(root.RuntimeReasonCodeSchema.options).toEqual([...root.RUNTIME_REASON_CODES]);
    expect(root.IneligibleReasonCodeSchema.options).toEqual([...root.INELIGIBLE_REASON_CODES]);
    expect(root.RUNTIME_REASON_CODES.every((code) => root.REASON_CODE_PATTERN.test(code))).toBe(true);
  });
});
