import assert from "node:assert/strict";
import { fingerprintArguments, McpToolResultSchema, newUlid, type McpToolResult } from "@mosoo/contracts";
import { AdapterDeclarationSchema, type AdapterDeclaration, type LookupRequest, type ReconciliationAdapter } from "../adapter.contract.js";
import { NOOP_LOGGER } from "../adapter-logger.js";
import { LookupOutcomeSchema, type LookupOutcome } from "../lookup-outcome.contract.js";
import type { ReconcileDecision } from "../reconcile-decision.contract.js";
import { reconcileEffect } from "../reconcile.service.js";

/**
 * The cases every adapter must pass (DESIGN.md §4–§5):
 * - `declaration_is_valid`: the declaration passes `AdapterDeclarationSchema`;
 * - `declares_the_tool`: `declaration.tools` includes the suite's `toolName`;
 * - `committed_key_is_confirmed_succeeded`: after `commitWrite(key, args)`, `reconcileEffect` decides
 *   `confirmed_succeeded`, the receipt's fingerprint (if any) is `fingerprintArguments(args)` and the
 *   result equals what the write returned;
 * - `unused_key_is_never_succeeded`: a never-used key is `confirmed_not_executed` or `still_unknown`;
 * - `fenced_key_refuses_later_writes`: with `lookup_fences_key`, after a not-executed answer the
 *   provider refuses a write with that key (not applicable, hence skipped, with `max_in_flight`);
 * - `lookup_honours_abort_signal`: with a signal aborted before or just after the call, `lookup`
 *   settles (rejects or returns) within `abortGraceMs`;
 * - `answers_echo_tool_and_key`: confirmed answers name the asked tool and key;
 * - `answers_pass_runtime_validation`: answers pass `LookupOutcomeSchema` (size limits included) and
 *   `reconcileEffect` never refuses them as `invalid_adapter_output`, `answer_mismatch`,
 *   `key_conflict`, `adapter_error` or `lookup_timeout`.
 */
export const CONFORMANCE_CASES = [
  "declaration_is_valid",
  "declares_the_tool",
  "committed_key_is_confirmed_succeeded",
  "unused_key_is_never_succeeded",
  "fenced_key_refuses_later_writes",
  "lookup_honours_abort_signal",
  "answers_echo_tool_and_key",
  "answers_pass_runtime_validation",
] as const;
/** One of {@link CONFORMANCE_CASES}. */
export type ConformanceCaseName = (typeof CONFORMANCE_CASES)[number];

/**
 * The real provider behind the adapter under test (or a sandbox of it):
 * - `commitWrite(key, args)`: performs the write with the idempotency key, resolves with the MCP
 *   tool result the provider returned;
 * - `tryWriteAfterLookup(key, args)`: attempts the same write after the adapter answered
 *   not-executed: `"committed"` if the provider took it, `"refused"` if it refused the key.
 */
export interface ConformanceProvider {
  commitWrite(idempotencyKey: string, args: Record<string, unknown>): Promise<{ result: McpToolResult }>;
  tryWriteAfterLookup(idempotencyKey: string, args: Record<string, unknown>): Promise<"committed" | "refused">;
}

/** A case the adapter author chose not to run, with the written reason. */
export interface ConformanceSkip {
  case: ConformanceCaseName;
  reason: string;
}

/**
 * Options of the conformance suite:
 * - `name`: the adapter under test, for the suite's title;
 * - `createAdapter`: a fresh adapter per case;
 * - `provider`: see {@link ConformanceProvider}; `toolName`, `sampleArguments`: the write to test;
 * - `serverId?` (default `conformance`), `timeoutMs?` (lookup timeout, default 5000 ms),
 *   `abortGraceMs?` (default 1000 ms), `lookupSettleMs?` (how long to keep looking a committed key
 *   up while the provider's reads lag, default 0 ms: one lookup);
 * - `skip?`: cases not to run, each with a non-empty reason.
 */
export interface AdapterConformanceOptions {
  name: string;
  createAdapter: () => ReconciliationAdapter | Promise<ReconciliationAdapter>;
  provider: ConformanceProvider;
  toolName: string;
  sampleArguments: Record<string, unknown>;
  serverId?: string;
  timeoutMs?: number;
  abortGraceMs?: number;
  lookupSettleMs?: number;
  skip?: ConformanceSkip[];
}

/** How a case ended without failing: `passed`, or `not_applicable` with why (registered as a runtime skip). */
export type ConformanceCaseResult = { status: "passed" } | { status: "not_applicable"; reason: string };

/** One runnable case: `run()` rejects (an `AssertionError`) when the adapter does not conform. */
export interface ConformanceCase {
  name: ConformanceCaseName;
  /** A generous bound for the whole case (ms), derived from the options; the vitest test timeout. */
  budgetMs: number;
  /** The author's skip reason, when skipped. */
  skipReason?: string;
  run(): Promise<ConformanceCaseResult>;
}

/**
 * Builds the cases (test-runner agnostic; `runAdapterConformance` registers them with vitest).
 * @throws Error when a skip has an empty reason or names no known case, or options are malformed.
 */
export function createConformanceCases(options: AdapterConformanceOptions): ConformanceCase[] {
  const skips = validateOptions(options);
  const serverId = options.serverId ?? "conformance";
  const timeoutMs = options.timeoutMs ?? 5000;
  const abortGraceMs = options.abortGraceMs ?? 1000;
  const settleMs = options.lookupSettleMs ?? 0;
  const args = options.sampleArguments;
  const fingerprint = fingerprintArguments(args);

  const effectFor = (key: string, dispatchedAtMs: number) => ({
    effectId: newUlid(),
    serverId,
    toolName: options.toolName,
    idempotencyKey: key,
    requestFingerprint: fingerprint,
    firstDispatchedAtMs: dispatchedAtMs,
    lastDispatchedAtMs: dispatchedAtMs,
  });
  const reconcile = async (adapter: ReconciliationAdapter, key: string, dispatchedAtMs: number): Promise<ReconcileDecision> =>
    reconcileEffect({ effect: effectFor(key, dispatchedAtMs), binding: { serverId, adapter }, nowMs: Date.now(), timeoutMs });
  const rawLookup = async (adapter: ReconciliationAdapter, key: string, dispatchedAtMs: number): Promise<LookupOutcome> => {
    const { effectId: _effectId, ...rest } = effectFor(key, dispatchedAtMs);
    const request: LookupRequest = { effectId: newUlid(), ...rest };
    const answer = await withDeadline(adapter.lookup(request, { signal: AbortSignal.timeout(timeoutMs), logger: NOOP_LOGGER }), timeoutMs + abortGraceMs);
    const parsed = LookupOutcomeSchema.safeParse(answer);
    assert.ok(parsed.success, `the adapter's answer fails LookupOutcomeSchema: ${parsed.success ? "" : parsed.error.message}`);
    return parsed.data;
  };
  /** A dispatch time for a never-used key at which a not-executed answer can be accepted. */
  const unusedKeyDispatchMs = (declaration: AdapterDeclaration): number =>
    Date.now() - (declaration.keyFencing.kind === "max_in_flight" ? declaration.keyFencing.maxInFlightMs : 0);
  const commitAndReconcile = async (adapter: ReconciliationAdapter) => {
    const key = newUlid();
    const dispatchedAtMs = Date.now();
    const written = await options.provider.commitWrite(key, args);
    const deadline = Date.now() + settleMs;
    let decision = await reconcile(adapter, key, dispatchedAtMs);
    while (decision.decision !== "confirmed_succeeded" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(100, Math.max(1, deadline - Date.now()))));
      decision = await reconcile(adapter, key, dispatchedAtMs);
    }
    return { key, dispatchedAtMs, written, decision };
  };

  const bodies: Record<ConformanceCaseName, () => Promise<ConformanceCaseResult>> = {
    async declaration_is_valid() {
      const adapter = await options.createAdapter();
      const parsed = AdapterDeclarationSchema.safeParse(adapter.declaration);
      assert.ok(parsed.success, `invalid declaration: ${parsed.success ? "" : parsed.error.message}`);
      assert.equal(typeof adapter.lookup, "function", "the adapter has no lookup function");
      return { status: "passed" };
    },
    async declares_the_tool() {
      const adapter = await options.createAdapter();
      assert.ok(adapter.declaration.tools.includes(options.toolName), `declaration.tools does not include "${options.toolName}"`);
      return { status: "passed" };
    },
    async committed_key_is_confirmed_succeeded() {
      const adapter = await options.createAdapter();
      const { written, decision } = await commitAndReconcile(adapter);
      if (decision.decision !== "confirmed_succeeded") assert.fail(`a committed key was decided ${describeDecision(decision)}, not confirmed_succeeded`);
      if (decision.receipt.requestFingerprint !== undefined) assert.equal(decision.receipt.requestFingerprint, fingerprint, "receipt fingerprint");
      assert.deepEqual(decision.result, JSON.parse(JSON.stringify(McpToolResultSchema.parse(written.result))), "result differs from the write's");
      return { status: "passed" };
    },
    async unused_key_is_never_succeeded() {
      const adapter = await options.createAdapter();
      const key = newUlid();
      const outcome = await rawLookup(adapter, key, unusedKeyDispatchMs(adapter.declaration));
      assert.notEqual(outcome.outcome, "confirmed_succeeded", "a never-used key was answered confirmed_succeeded");
      const decision = await reconcile(adapter, newUlid(), unusedKeyDispatchMs(adapter.declaration));
      assert.notEqual(decision.decision, "confirmed_succeeded", "a never-used key was decided confirmed_succeeded");
      return { status: "passed" };
    },
    async fenced_key_refuses_later_writes() {
      const adapter = await options.createAdapter();
      if (adapter.declaration.keyFencing.kind !== "lookup_fences_key") {
        return { status: "not_applicable", reason: `keyFencing is ${adapter.declaration.keyFencing.kind}: no fence is claimed` };
      }
      const key = newUlid();
      const outcome = await rawLookup(adapter, key, Date.now());
      assert.equal(
        outcome.outcome,
        "confirmed_not_executed",
        "declared lookup_fences_key but a never-used key was not answered confirmed_not_executed (skip this case with a reason if that is expected)",
      );
      assert.equal(await options.provider.tryWriteAfterLookup(key, args), "refused", "the provider took a write with a key the adapter declared fenced");
      return { status: "passed" };
    },
    async lookup_honours_abort_signal() {
      const adapter = await options.createAdapter();
      const dispatchedAtMs = unusedKeyDispatchMs(adapter.declaration);
      const preAborted = AbortSignal.abort(new DOMException("aborted before the call", "AbortError"));
      assert.equal(await settlesWithin(() => callLookup(adapter, newUlid(), dispatchedAtMs, preAborted), abortGraceMs), true, "lookup did not settle with an already aborted signal");
      const controller = new AbortController();
      const pending = settlesWithin(() => callLookup(adapter, newUlid(), dispatchedAtMs, controller.signal), abortGraceMs);
      setImmediate(() => controller.abort(new DOMException("aborted during the call", "AbortError")));
      assert.equal(await pending, true, "lookup did not settle after its signal aborted");
      return { status: "passed" };
    },
    async answers_echo_tool_and_key() {
      const adapter = await options.createAdapter();
      const { key, dispatchedAtMs } = await commitAndReconcile(adapter);
      const unusedKey = newUlid();
      const asked: Array<[string, LookupOutcome]> = [
        [key, await rawLookup(adapter, key, dispatchedAtMs)],
        [unusedKey, await rawLookup(adapter, unusedKey, unusedKeyDispatchMs(adapter.declaration))],
      ];
      let checked = 0;
      for (const [askedKey, outcome] of asked) {
        if (outcome.outcome === "still_unknown") continue;
        checked += 1;
        assert.equal(outcome.toolName, options.toolName, "the answer names another tool");
        assert.equal(outcome.idempotencyKey, askedKey, "the answer names another idempotency key");
      }
      assert.ok(checked > 0, "no confirmed answer to check: both lookups answered still_unknown");
      return { status: "passed" };
    },
    async answers_pass_runtime_validation() {
      const adapter = await options.createAdapter();
      const refusals = new Set(["invalid_adapter_output", "answer_mismatch", "key_conflict", "adapter_error", "lookup_timeout"]);
      const { decision: committed } = await commitAndReconcile(adapter);
      const unused = await reconcile(adapter, newUlid(), unusedKeyDispatchMs(adapter.declaration));
      for (const decision of [committed, unused]) {
        assert.notEqual(decision.decision, "ineligible", `ineligible: ${describeDecision(decision)}`);
        if (decision.decision === "still_unknown" && decision.reasonSource === "runtime") {
          assert.ok(!refusals.has(decision.reasonCode), `the runtime refused the answer: ${describeDecision(decision)}`);
        }
      }
      return { status: "passed" };
    },
  };

  function callLookup(adapter: ReconciliationAdapter, key: string, dispatchedAtMs: number, signal: AbortSignal): Promise<unknown> {
    const { effectId: _effectId, ...rest } = effectFor(key, dispatchedAtMs);
    return adapter.lookup({ effectId: newUlid(), ...rest }, { signal, logger: NOOP_LOGGER });
  }

  const budgetMs = settleMs + 4 * (timeoutMs + abortGraceMs) + 5000;
  return CONFORMANCE_CASES.map((name) => {
    const skipReason = skips.get(name);
    return skipReason === undefined ? { name, budgetMs, run: bodies[name] } : { name, budgetMs, skipReason, run: bodies[name] };
  });
}

function validateOptions(options: AdapterConformanceOptions): Map<ConformanceCaseName, string> {
  if (typeof options.name !== "string" || options.name.trim() === "") throw new Error("runAdapterConformance: `name` must be a non-empty string");
  if (typeof options.createAdapter !== "function") throw new Error("runAdapterConformance: `createAdapter` must be a function");
  if (typeof options.toolName !== "string" || options.toolName === "") throw new Error("runAdapterConformance: `toolName` must be a non-empty string");
  fingerprintArguments(options.sampleArguments);
  const skips = new Map<ConformanceCaseName, string>();
  for (const skip of options.skip ?? []) {
    if (!(CONFORMANCE_CASES as readonly string[]).includes(skip.case)) {
      throw new Error(`runAdapterConformance: cannot skip unknown case "${String(skip.case)}"; known cases: ${CONFORMANCE_CASES.join(", ")}`);
    }
    if (typeof skip.reason !== "string" || skip.reason.trim() === "") {
      throw new Error(`runAdapterConformance: skipping "${skip.case}" needs a written reason`);
    }
    if (skips.has(skip.case)) throw new Error(`runAdapterConformance: "${skip.case}" is skipped twice`);
    skips.set(skip.case, skip.reason.trim());
  }
  return skips;
}

/** Resolves like `promise`, or rejects with an AssertionError when it has not settled within `ms`. */
async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new assert.AssertionError({ message: `lookup did not settle within ${ms} ms` })), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function settlesWithin(call: () => Promise<unknown>, graceMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = (async () => call())().then(
    () => true,
    () => true,
  );
  const gaveUp = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), graceMs);
  });
  try {
    return await Promise.race([settled, gaveUp]);
  } finally {
    clearTimeout(timer);
  }
}

function describeDecision(decision: ReconcileDecision): string {
  const reason = "reasonCode" in decision ? ` (${decision.reasonCode})` : "";
  const error = "error" in decision && decision.error ? `: ${decision.error}` : "";
  return `${decision.decision}${reason}${error}`;
}
