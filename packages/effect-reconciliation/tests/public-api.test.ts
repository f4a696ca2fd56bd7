import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as root from "../src/index.ts";
import * as testing from "../src/testing/index.ts";
import * as mcp from "../src/mcp/index.ts";

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

  it("the package imports no app, database or HTTP library (DESIGN §2); only the ./mcp subpath uses the MCP SDK client", () => {
    const importsOf = (files: string[]) =>
      files.flatMap((file) => [...readFileSync(file, "utf8").matchAll(/from\s+"([^"]+)"/g)].map((m) => m[1] ?? ""));
    const external = (files: string[]) => [...new Set(importsOf(files).filter((specifier) => !specifier.startsWith(".")))].sort();
    const mcpDir = join(SRC, "mcp");
    const core = sourceFiles(SRC).filter((file) => !file.startsWith(mcpDir));
    expect(external(core)).toEqual([
      "@mosoo/contracts",
      "canonicalize",
      "node:buffer",
      "node:crypto",
      "node:fs",
      "node:module",
      "node:path",
      "node:url",
      "node:util",
      "vitest",
      "zod",
    ]);
    // p-retry: a network-level failure of a lookup (a read) is retried (mcp-lookup.ts)
    expect(external(sourceFiles(mcpDir))).toEqual([
      "@modelcontextprotocol/sdk/client/index.js",
      "@modelcontextprotocol/sdk/client/streamableHttp.js",
      "@modelcontextprotocol/sdk/types.js",
      "p-retry",
      "zod",
    ]);
  });

  it("the root entry exports exactly the documented runtime values", () => {
    expect(Object.keys(root).sort()).toEqual(
      [
        "ADAPTER_TERMINATION_REASONS",
        "AdapterAnswerRefusedError",
        "AdapterCrashedError",
        "AdapterDeclarationSchema",
        "AdapterIdSchema",
        "AdapterReasonCodeSchema",
        "AdapterSourceSchema",
        "AdapterVersionSchema",
        "BoundedMcpToolResultSchema",
        "CompensationDeclarationSchema",
        "CompensationPlanSchema",
        "ConfirmedNotExecutedOutcomeSchema",
        "ConfirmedSucceededOutcomeSchema",
        "ConventionLookupAnswerSchema",
        "DEFAULT_KEY_PLACEMENT",
        "IDEMPOTENCY_CONVENTION_META",
        "INELIGIBLE_REASON_CODES",
        "IdempotencyConventionSchema",
        "IneligibleReasonCodeSchema",
        "KeyFencingSchema",
        "KeyPlacementSchema",
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
        "REQUEST_FINGERPRINT_PATTERN",
        "RUNTIME_REASON_CODES",
        "ReceiptSchema",
        "ReconcilableEffectSchema",
        "ReconciliationError",
        "RuntimeReasonCodeSchema",
        "StillUnknownOutcomeSchema",
        "adapterFactoryOf",
        "adapterModuleFromNamespace",
        "askAdapter",
        "judgeLookupAnswer",
        "checkEligibility",
        "confirmedNotExecuted",
        "confirmedSucceeded",
        "createAdapterRegistry",
        "declarationHash",
        "equivalentToolResults",
        "fingerprintArguments",
        "instantiateBinding",
        "isEligible",
        "loadAdapterModule",
        "narrowAdapter",
        "nearestPackage",
        "planCompensation",
        "reconcileEffect",
        "resolveAdapterModule",
        "stillUnknown",
      ].sort(),
    );
  });

  it("the ./testing entry exports exactly the kit", () => {
    expect(Object.keys(testing).sort()).toEqual(
      [
        "KIT_CASES",
        "PLANTED_BUGS",
        "PROBE_MODES",
        "PROBE_MODE_SETTINGS",
        "PROBE_TOOLS",
        "PROVIDER_DOUBLE_ADAPTER_ID",
        "ProviderResponseLostError",
        "createInProcessAdapterHost",
        "createManualClock",
        "createPlantedBugAdapter",
        "createProbeAdapter",
        "createProbeProvider",
        "createProviderDouble",
        "createProviderDoubleAdapter",
        "judgeAdapter",
        "mapProbeAnswer",
        "measureProvider",
        "probeDeclaration",
        "runAdapterConformance",
        "systemClock",
      ].sort(),
    );
  });

  it("the ./mcp entry exports the MCP lookup helper and the convention adapter", () => {
    expect(Object.keys(mcp).sort()).toEqual(
      [
        "CONVENTION_ADAPTER_ID",
        "ConventionAdapterOptionsSchema",
        "McpEndpointUrlSchema",
        "callLookupTool",
        "conventionAdapterFactory",
        "conventionDeclaration",
        "discoverConvention",
        "listMcpTools",
        "withMcpClient",
      ].sort(),
    );
  });

  it("reason-code enums match their const arrays", () => {
    expect(root.RuntimeReasonCodeSchema.options).toEqual([...root.RUNTIME_REASON_CODES]);
    expect(root.IneligibleReasonCodeSchema.options).toEqual([...root.INELIGIBLE_REASON_CODES]);
    expect(root.RUNTIME_REASON_CODES.every((code) => root.REASON_CODE_PATTERN.test(code))).toBe(true);
  });
});
