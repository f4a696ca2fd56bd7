import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as root from "../src/index.ts";
import * as host from "../src/host/index.ts";
import * as testing from "../src/testing/index.ts";

const SRC = fileURLToPath(new URL("../src", import.meta.url));
const PACKAGE_JSON = fileURLToPath(new URL("../package.json", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/** Every name an entry file exports (values and types), read from its `export { … }` / `export type { … }` statements. */
function exportedNames(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)]
    .flatMap((m) => (m[1] ?? "").split(","))
    .map(
      (name) =>
        name
          .trim()
          .split(/\s+as\s+/)
          .pop() ?? "",
    )
    .filter((name) => name !== "")
    .sort();
}

/** Relative specifiers each file under `dir` imports, resolved to the folder of `src/` they land in. */
function foldersImportedFrom(dir: string): string[] {
  const folders = sourceFiles(join(SRC, dir)).flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/from\s+"(\.[^"]+)"/g)].map((m) => {
      const target = join(file, "..", m[1] ?? "");
      return target.slice(SRC.length + 1).split("/")[0] ?? "";
    }),
  );
  return [...new Set(folders)].sort();
}

/** The author's surface: what an adapter package imports from the package root, values and types. */
const AUTHOR_SURFACE = [
  // the adapter contract
  "ReconciliationAdapterFactory",
  "ReconciliationAdapter",
  "AdapterDeclaration",
  "LookupRequest",
  "LookupContext",
  "AdapterLogger",
  "CompensationPlanRequest",
  // answer and receipt builders
  "confirmedSucceeded",
  "confirmedNotExecuted",
  "stillUnknown",
  "ReceiptInput",
  // the idempotency convention
  "IDEMPOTENCY_CONVENTION_META",
  "IdempotencyConventionSchema",
  "ConventionLookupAnswerSchema",
  // the MCP lookup helper
  "callLookupTool",
  "McpEndpointUrlSchema",
  // the request fingerprint
  "fingerprintArguments",
];

describe("public surface", () => {
  it("no source file uses `export *`", () => {
    const offenders = sourceFiles(SRC).filter((file) => /export\s+\*/.test(readFileSync(file, "utf8")));
    expect(offenders).toEqual([]);
  });

  it("package.json exports exactly the root, ./host and ./testing", () => {
    const pkg = JSON.parse(readFileSync(PACKAGE_JSON, "utf8")) as { exports: Record<string, { default: string }> };
    expect(Object.fromEntries(Object.entries(pkg.exports).map(([entry, target]) => [entry, target.default]))).toEqual({
      ".": "./src/index.ts",
      "./host": "./src/host/index.ts",
      "./testing": "./src/testing/index.ts",
    });
  });

  it("the package imports no app, database or HTTP library (DESIGN §2); only the author's MCP lookup helper and the built-in task reconciler use the MCP SDK", () => {
    const importsOf = (files: string[]) =>
      files.flatMap((file) => [...readFileSync(file, "utf8").matchAll(/from\s+"([^"]+)"/g)].map((m) => m[1] ?? ""));
    const external = (files: string[]) => [...new Set(importsOf(files).filter((specifier) => !specifier.startsWith(".")))].sort();
    const mcpLookup = join(SRC, "author", "mcp-lookup.ts");
    const mcpTasks = join(SRC, "host", "mcp-tasks-adapter.ts");
    const rest = sourceFiles(SRC).filter((file) => file !== mcpLookup && file !== mcpTasks);
    expect(external(rest)).toEqual([
      "@mosoo/contracts",
      "canonicalize",
      "node:buffer",
      "node:crypto",
      "node:events",
      "node:fs",
      "node:module",
      "node:path",
      "node:url",
      "node:util",
      "vitest",
      "zod",
    ]);
    // p-retry: a network-level failure of a lookup (a read) is retried (mcp-lookup.ts)
    expect(external([mcpLookup])).toEqual([
      "@modelcontextprotocol/sdk/client/index.js",
      "@modelcontextprotocol/sdk/client/streamableHttp.js",
      "@modelcontextprotocol/sdk/types.js",
      "p-retry",
      "zod",
    ]);
    // the task reconciler speaks MCP tasks (tasks/get, tasks/result) through the helper's client, and
    // picks the tools it covers with the Driver's own rule (taskCallableToolNames, @mosoo/contracts)
    expect(external([mcpTasks])).toEqual([
      "@modelcontextprotocol/sdk/client/index.js",
      "@modelcontextprotocol/sdk/types.js",
      "@mosoo/contracts",
      "zod",
    ]);
  });

  it("the author's files import nothing of the host or the kit; the host imports nothing of the kit", () => {
    expect(foldersImportedFrom("author")).toEqual(["author"]);
    expect(foldersImportedFrom("host")).toEqual(["author", "host"]);
  });

  it("the root exports exactly the author's surface (values and types), so it cannot grow by accident", () => {
    expect(exportedNames(join(SRC, "index.ts"))).toEqual([...AUTHOR_SURFACE].sort());
    expect(Object.keys(root).sort()).toEqual(
      [
        "ConventionLookupAnswerSchema",
        "IDEMPOTENCY_CONVENTION_META",
        "IdempotencyConventionSchema",
        "McpEndpointUrlSchema",
        "callLookupTool",
        "confirmedNotExecuted",
        "confirmedSucceeded",
        "fingerprintArguments",
        "stillUnknown",
      ].sort(),
    );
  });

  it("the ./host entry exports the host's machinery and repeats none of the root's names", () => {
    expect(Object.keys(host).sort()).toEqual(
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
        "CONVENTION_ADAPTER_ID",
        "CompensationDeclarationSchema",
        "CompensationPlanSchema",
        "ConfirmedNotExecutedOutcomeSchema",
        "ConfirmedSucceededOutcomeSchema",
        "ConventionAdapterOptionsSchema",
        "INELIGIBLE_REASON_CODES",
        "IneligibleReasonCodeSchema",
        "KeyFencingSchema",
        "LookupOutcomeSchema",
        "LookupRequestSchema",
        "McpTasksAdapterOptionsSchema",
        "MAX_COMPENSATION_ARGUMENTS_BYTES",
        "MAX_LOOKUP_TIMEOUT_MS",
        "MCP_TASKS_ADAPTER_ID",
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
        "adapterModuleFromNamespace",
        "answerNeedsRetentionCanary",
        "askAdapter",
        "askRetentionCanary",
        "checkEligibility",
        "conventionAdapterFactory",
        "conventionDeclaration",
        "createAdapterRegistry",
        "declarationHash",
        "discoverConvention",
        "equivalentToolResults",
        "instantiateBinding",
        "isEligible",
        "judgeLookupAnswer",
        "listMcpTools",
        "loadAdapterModule",
        "mcpTasksAdapterFactory",
        "narrowAdapter",
        "nearestPackage",
        "planCompensation",
        "reconcileEffect",
        "resolveAdapterModule",
        "retentionCanaryWindow",
        "withMcpClient",
      ].sort(),
    );
    const rootNames = new Set(exportedNames(join(SRC, "index.ts")));
    expect(exportedNames(join(SRC, "host", "index.ts")).filter((name) => rootNames.has(name))).toEqual([]);
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

  it("reason-code enums match their const arrays", () => {
    expect(host.RuntimeReasonCodeSchema.options).toEqual([...host.RUNTIME_REASON_CODES]);
    expect(host.IneligibleReasonCodeSchema.options).toEqual([...host.INELIGIBLE_REASON_CODES]);
    expect(host.RUNTIME_REASON_CODES.every((code) => host.REASON_CODE_PATTERN.test(code))).toBe(true);
  });
});
