// The conformance kit's runner: validates and measures once, runs every case in `KIT_CASES` order, and reports.
import { AdapterDeclarationSchema, type AdapterDeclaration, type ReconciliationAdapter } from "../../author/adapter.contract.js";
import { measureProvider } from "./kit-measure.js";
import { createKitContext, createKitRecord, guardAdapter, sleep, type KitContext, type KitRecord } from "./kit-context.js";
import {
  abortedLookupCase,
  committedKeysCase,
  conflictingRequestCase,
  forgetfulProviderCase,
  lateCommitCases,
  neverUsedKeysCase,
  olderKeyAfterNewerWritesCase,
  providerOutageCase,
} from "./kit-cases.js";
import {
  KIT_CASES,
  type AdapterCaller,
  type KitCaseName,
  type KitCaseReport,
  type KitOptions,
  type KitReport,
} from "./kit-run.contract.js";

const inProcess: AdapterCaller = (adapter, request, context) => Promise.resolve().then(() => adapter.lookup(request, context));

/** The lookup cases in the order they run (the declaration cases run first, the async-error check last). */
const CASE_STEPS: ReadonlyArray<(ctx: KitContext) => Promise<void>> = [
  committedKeysCase,
  olderKeyAfterNewerWritesCase,
  conflictingRequestCase,
  neverUsedKeysCase,
  lateCommitCases,
  abortedLookupCase,
  providerOutageCase,
  forgetfulProviderCase,
];

/** Cases reported `not_applicable` (rather than `passed` with a note) when they carry a note and no failure. */
const SKIPPABLE_CASES: ReadonlySet<KitCaseName> = new Set([
  "late_commit_never_not_executed",
  "pending_never_not_executed",
  "forgetful_provider_never_not_executed",
]);

/**
 * Runs every {@link KIT_CASES} case of the adapter against the provider and returns the report
 * (never throws for adapter misbehaviour; a provider that cannot be measured fails
 * `declaration_matches_provider`). Watches the process for unhandled rejections and uncaught
 * exceptions while it runs (`no_async_errors_left_behind`).
 */
export async function judgeAdapter(options: KitOptions): Promise<KitReport> {
  const record = createKitRecord(options.provider);
  const asyncErrors: string[] = [];
  const onAsyncError = (error: unknown): void => void asyncErrors.push(error instanceof Error ? error.message : String(error));
  process.on("unhandledRejection", onAsyncError);
  process.on("uncaughtException", onAsyncError);
  try {
    const ctx = await prepareRun(options, record);
    if (ctx !== null) for (const step of CASE_STEPS) await step(ctx);
  } catch (error) {
    record.fail("declaration_is_valid", `the kit could not run the adapter: ${error instanceof Error ? error.message : String(error)}`);
  }
  // Give a floating rejection or a late throw of the adapter the chance to surface before judging.
  await sleep(50);
  await new Promise((resolve) => setImmediate(resolve));
  process.off("unhandledRejection", onAsyncError);
  process.off("uncaughtException", onAsyncError);
  for (const e of asyncErrors) record.fail("no_async_errors_left_behind", `left an async error behind: ${e}`);
  return buildReport(options, record);
}

/**
 * Creates the adapter, checks its declaration (`declaration_is_valid`), guards it and measures the
 * provider (`declaration_matches_provider`); null when the declaration failed and no case can run.
 */
async function prepareRun(options: KitOptions, record: KitRecord): Promise<KitContext | null> {
  const adapter = await options.createAdapter();
  const valid = validateAdapter(record, adapter);
  if (valid === null) return null;
  const { declaration, tools } = valid;
  const guarded = guardAdapter(record, adapter, options.caller ?? inProcess);
  await measure(record, declaration, tools[0]!, options.retentionProbeMs ?? 1_200);
  return createKitContext(record, {
    serverId: options.serverId ?? "conformance",
    timeoutMs: options.timeoutMs ?? 2_000,
    settleMs: options.settleMs ?? (record.measurements?.lookupLagMs ?? 0) + 1_500,
    tools,
    declaration,
    guarded,
  });
}

/**
 * `declaration_is_valid`: the declaration parses, `lookup` is a function, and at least one of the
 * provider's tools is declared (tools not declared are noted on `committed_keys_are_confirmed`).
 * Returns the parsed declaration and the declared tools in the provider's order, or null (failed).
 */
function validateAdapter(record: KitRecord, adapter: ReconciliationAdapter): { declaration: AdapterDeclaration; tools: string[] } | null {
  const { provider } = record;
  const parsed = AdapterDeclarationSchema.safeParse(adapter.declaration);
  if (!parsed.success || typeof adapter.lookup !== "function") {
    record.fail(
      "declaration_is_valid",
      parsed.success ? "the adapter has no lookup function" : `invalid declaration: ${parsed.error.issues[0]?.message ?? "invalid"}`,
    );
    return null;
  }
  const declaration = parsed.data;
  const tools = provider.tools.filter((t) => declaration.tools.includes(t));
  if (tools.length === 0) {
    record.fail("declaration_is_valid", `the adapter declares none of the provider's tools (${provider.tools.join(", ")})`);
    return null;
  }
  if (tools.length < provider.tools.length)
    record.notes.set(
      "committed_keys_are_confirmed",
      `not declared, not exercised: ${provider.tools.filter((t) => !tools.includes(t)).join(", ")}`,
    );
  return { declaration, tools };
}

/** `declaration_matches_provider`: measures the provider with `tool` into `record.measurements`; a measurement that throws fails the case. */
async function measure(record: KitRecord, declaration: AdapterDeclaration, tool: string, retentionProbeMs: number): Promise<void> {
  try {
    const measured = await measureProvider(record.provider, declaration, tool, record.write, retentionProbeMs);
    record.measurements = measured.measurements;
    for (const line of measured.failures) record.fail("declaration_matches_provider", line);
  } catch (error) {
    record.fail(
      "declaration_matches_provider",
      `could not measure the provider: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** The report of a finished run: each case's distinct failure lines in the order seen, with its note. */
function buildReport(options: KitOptions, record: KitRecord): KitReport {
  const cases = KIT_CASES.map((c): KitCaseReport => {
    const lines = [...new Set(record.failures.get(c)!)];
    const note = record.notes.get(c);
    if (lines.length > 0) return { case: c, status: "failed", failures: lines, ...(note ? { note } : {}) };
    return note && SKIPPABLE_CASES.has(c)
      ? { case: c, status: "not_applicable", failures: [], note }
      : { case: c, status: "passed", failures: [], ...(note ? { note } : {}) };
  });
  return {
    name: options.name,
    provider: record.provider.name,
    passed: cases.every((c) => c.status !== "failed"),
    cases,
    measurements: record.measurements,
  };
}
