// The conformance kit's cases and runner: judges every answer of an adapter against what its provider really holds.
import { isDeepStrictEqual } from "node:util";
import { fingerprintArguments, newUlid } from "@mosoo/contracts";
import {
  AdapterDeclarationSchema,
  type LookupContext,
  type LookupRequest,
  type ReconciliationAdapter,
} from "../../author/adapter.contract.js";
import { NOOP_LOGGER } from "../../host/adapter-logger.js";
import type { ReconcileDecision } from "../../host/reconcile-decision.contract.js";
import { reconcileEffect } from "../../host/reconcile.service.js";
import type { KitProvider, KitWriteResult } from "./kit-provider.contract.js";
import { measureProvider, type ProviderMeasurements } from "./kit-measure.js";
import { describeDecision, wrongDecisionLines } from "./kit-verdict.js";
import { pickCanary, type KitLedgerEntry } from "./kit-canary.js";

/**
 * The kit's cases (README "The conformance kit"). Every decision is judged against what the
 * provider really holds for that key at that moment (`KitProvider.truth` and the kit's own record
 * of what committed): one wrong answer fails the case, and retrying until success never hides it.
 */
export const KIT_CASES = [
  "declaration_is_valid",
  "declaration_matches_provider",
  "committed_keys_are_confirmed",
  "older_key_after_newer_writes",
  "conflicting_request_not_confirmed",
  "never_used_keys_not_succeeded",
  "late_commit_never_not_executed",
  "pending_never_not_executed",
  "aborted_lookup_confirms_nothing",
  "provider_outage_confirms_nothing",
  "forgetful_provider_never_not_executed",
  "input_not_mutated",
  "no_async_errors_left_behind",
] as const;
/** One of {@link KIT_CASES}. */
export type KitCaseName = (typeof KIT_CASES)[number];

/**
 * THE KIT'S ISOLATION PORT: how the kit calls `adapter.lookup`. The default calls it in this
 * process. To run the adapter exactly as the API does (docs/DESIGN.md §4 "Adapters are untrusted code"),
 * let `createAdapter` return an `AdapterHost` handle (`(await host.bind(source, options)).adapter`
 * from the API's isolated worker host): each call then runs in a worker thread. The kit always
 * hands the caller a copy of the request and checks the original copy afterwards.
 */
export type AdapterCaller = (adapter: ReconciliationAdapter, request: LookupRequest, context: LookupContext) => Promise<unknown>;

/**
 * Options of {@link judgeAdapter}: `name`; `createAdapter` (one adapter for the whole run);
 * `provider` ({@link KitProvider}); `serverId?` (default `conformance`); `timeoutMs?` (lookup
 * timeout, default 2000 ms); `settleMs?` (how long a committed key may take to be confirmed, default
 * the measured lag + 1500 ms); `retentionProbeMs?` (how long a key is watched, default 1200 ms);
 * `caller?` ({@link AdapterCaller}).
 */
export interface KitOptions {
  name: string;
  createAdapter: () => ReconciliationAdapter | Promise<ReconciliationAdapter>;
  provider: KitProvider;
  serverId?: string;
  timeoutMs?: number;
  settleMs?: number;
  retentionProbeMs?: number;
  caller?: AdapterCaller;
}

/** How one case ended: `failures` (one line each) empty when passed; `not_applicable` with its reason. */
export interface KitCaseReport {
  case: KitCaseName;
  status: "passed" | "failed" | "not_applicable";
  failures: string[];
  note?: string;
}

/** The kit's verdict on one adapter against one provider: `passed` only when no case failed. */
export interface KitReport {
  name: string;
  provider: string;
  passed: boolean;
  cases: KitCaseReport[];
  measurements: ProviderMeasurements | null;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const inProcess: AdapterCaller = (adapter, request, context) => Promise.resolve().then(() => adapter.lookup(request, context));

/**
 * Runs every {@link KIT_CASES} case of the adapter against the provider and returns the report
 * (never throws for adapter misbehaviour; a provider that cannot be measured fails
 * `declaration_matches_provider`). Watches the process for unhandled rejections and uncaught
 * exceptions while it runs (`no_async_errors_left_behind`).
 */
export async function judgeAdapter(options: KitOptions): Promise<KitReport> {
  const { provider } = options;
  const serverId = options.serverId ?? "conformance";
  const timeoutMs = options.timeoutMs ?? 2_000;
  const caller = options.caller ?? inProcess;
  const failures = new Map<KitCaseName, string[]>(KIT_CASES.map((c) => [c, []]));
  const notes = new Map<KitCaseName, string>();
  const fail = (c: KitCaseName, line: string): void => void failures.get(c)!.push(line);
  const failed = (c: KitCaseName): boolean => failures.get(c)!.length > 0;
  const ledger = new Map<string, KitLedgerEntry>();
  const asyncErrors: string[] = [];
  const onAsyncError = (error: unknown): void => void asyncErrors.push(error instanceof Error ? error.message : String(error));
  process.on("unhandledRejection", onAsyncError);
  process.on("uncaughtException", onAsyncError);

  const write = async (tool: string, key: string, args: Record<string, unknown>, opts?: { delayMs?: number }): Promise<KitWriteResult> => {
    const dispatchedAtMs = Date.now();
    const written = await provider.write(tool, key, args, opts);
    if (written.status === "committed")
      ledger.set(key, { toolName: tool, fingerprint: fingerprintArguments(args), result: written.result, dispatchedAtMs });
    return written;
  };

  let adapter: ReconciliationAdapter;
  let measurements: ProviderMeasurements | null = null;
  try {
    adapter = await options.createAdapter();
    const parsed = AdapterDeclarationSchema.safeParse(adapter.declaration);
    if (!parsed.success || typeof adapter.lookup !== "function") {
      fail(
        "declaration_is_valid",
        parsed.success ? "the adapter has no lookup function" : `invalid declaration: ${parsed.error.issues[0]?.message ?? "invalid"}`,
      );
      return report();
    }
    const declaration = parsed.data;
    const tools = provider.tools.filter((t) => declaration.tools.includes(t));
    if (tools.length === 0) {
      fail("declaration_is_valid", `the adapter declares none of the provider's tools (${provider.tools.join(", ")})`);
      return report();
    }
    if (tools.length < provider.tools.length)
      notes.set(
        "committed_keys_are_confirmed",
        `not declared, not exercised: ${provider.tools.filter((t) => !tools.includes(t)).join(", ")}`,
      );

    const guarded: ReconciliationAdapter = {
      declaration: adapter.declaration,
      async lookup(request, context) {
        const original = structuredClone(request);
        const handed = structuredClone(request);
        try {
          return await caller(adapter, handed, context);
        } finally {
          if (!isDeepStrictEqual(handed, original))
            fail("input_not_mutated", `the adapter changed the request it was handed (key ${original.idempotencyKey})`);
        }
      },
    };

    // --- measurements
    try {
      const measured = await measureProvider(provider, declaration, tools[0]!, write, options.retentionProbeMs ?? 1_200);
      measurements = measured.measurements;
      for (const line of measured.failures) fail("declaration_matches_provider", line);
    } catch (error) {
      fail("declaration_matches_provider", `could not measure the provider: ${error instanceof Error ? error.message : String(error)}`);
    }
    const settleMs = options.settleMs ?? (measurements?.lookupLagMs ?? 0) + 1_500;
    const inFlightMs = declaration.keyFencing.kind === "max_in_flight" ? declaration.keyFencing.maxInFlightMs : 0;

    // The retention canary is chosen as the runtime chooses it (docs/DESIGN.md §4): the oldest key the
    // kit saw commit, of the same tool, first sent inside the declared window and no later than the key
    // looked up; a case may name its own (`canaryKey`).
    const decide = (
      tool: string,
      key: string,
      fingerprint: string,
      dispatchedAtMs: number,
      canaryKey?: string,
    ): Promise<ReconcileDecision> => {
      const nowMs = Date.now();
      return reconcileEffect({
        effect: {
          effectId: newUlid(),
          serverId,
          toolName: tool,
          idempotencyKey: key,
          requestFingerprint: fingerprint,
          firstDispatchedAtMs: dispatchedAtMs,
          lastDispatchedAtMs: dispatchedAtMs,
        },
        binding: { serverId, adapter: guarded },
        nowMs,
        timeoutMs,
        logger: NOOP_LOGGER,
        canary: pickCanary(ledger, { serverId, tool, key, dispatchedAtMs, nowMs, timeoutMs, declaration, canaryKey }),
      });
    };

    /** Judges one decision against the ground truth; returns it for the caller's loop. */
    const judge = async (
      c: KitCaseName,
      tool: string,
      key: string,
      fingerprint: string,
      decision: ReconcileDecision,
    ): Promise<ReconcileDecision> => {
      const truth = await provider.truth(key);
      const known =
        ledger.get(key) ??
        (truth.state === "committed"
          ? { toolName: truth.toolName, fingerprint: truth.requestFingerprint, result: truth.result }
          : undefined);
      for (const line of wrongDecisionLines({ decision, tool, key, fingerprint, known, pending: truth.state === "pending" })) fail(c, line);
      return decision;
    };

    /** Looks a committed key up until confirmed (every answer judged); fails when it never is. */
    const settleCommitted = async (
      c: KitCaseName,
      tool: string,
      key: string,
      fingerprint: string,
      dispatchedAtMs: number,
    ): Promise<void> => {
      if (failed(c)) return; // one wrong answer already failed the case
      const deadline = Date.now() + settleMs;
      let d = await judge(c, tool, key, fingerprint, await decide(tool, key, fingerprint, dispatchedAtMs));
      while (d.decision !== "confirmed_succeeded" && Date.now() < deadline && !failed(c)) {
        await sleep(40);
        d = await judge(c, tool, key, fingerprint, await decide(tool, key, fingerprint, dispatchedAtMs));
      }
      if (d.decision !== "confirmed_succeeded" && !failed(c))
        fail(c, `a committed write (${tool}, key ${key}) was never confirmed within ${settleMs} ms; last decision ${describeDecision(d)}`);
    };

    // --- committed keys: several tools, argument sets and keys
    for (const tool of tools) {
      for (const args of provider.argumentSets(tool).slice(0, 2)) {
        for (let k = 0; k < 2; k += 1) {
          const key = newUlid();
          const at = Date.now();
          const w = await write(tool, key, args);
          if (w.status !== "committed") fail("committed_keys_are_confirmed", `the provider refused a fresh write (${w.reason})`);
          else await settleCommitted("committed_keys_are_confirmed", tool, key, fingerprintArguments(args), at);
        }
      }
    }

    // --- an older key after newer writes (of other arguments and another tool): more than two pages of
    // the provider's list endpoint, so an adapter that reads only a list's first page cannot find it
    {
      const [a0, a1] = provider.argumentSets(tools[0]!);
      const k1 = newUlid();
      const at = Date.now();
      await write(tools[0]!, k1, a0!);
      const newer = 2 * (provider.listPageSize ?? 10) + 1;
      const other = tools[1] ?? tools[0]!;
      await Promise.all(
        Array.from({ length: newer }, (_, i) =>
          i % 2 === 0 ? write(tools[0]!, newUlid(), a1!) : write(other, newUlid(), provider.argumentSets(other)[1]!),
        ),
      );
      await settleCommitted("older_key_after_newer_writes", tools[0]!, k1, fingerprintArguments(a0!), at);
    }

    // --- another request under a committed key
    {
      const [a0, a1] = provider.argumentSets(tools[0]!);
      const key = newUlid();
      const at = Date.now();
      await write(tools[0]!, key, a0!);
      const other = fingerprintArguments(a1!);
      const deadline = Date.now() + settleMs;
      let conflict = false;
      while (!conflict && Date.now() < deadline) {
        const d = await judge("conflicting_request_not_confirmed", tools[0]!, key, other, await decide(tools[0]!, key, other, at));
        conflict = d.decision === "still_unknown" && d.reasonCode === "key_conflict";
        if (d.decision === "confirmed_succeeded") break;
        if (!conflict) await sleep(40);
      }
      if (!conflict)
        fail(
          "conflicting_request_not_confirmed",
          `a request with other arguments under a committed key was never reported key_conflict (put the provider's recorded fingerprint in the receipt)`,
        );
    }

    // --- keys never used
    for (let i = 0; i < 3; i += 1) {
      const tool = tools[i % tools.length]!;
      const key = newUlid();
      await judge(
        "never_used_keys_not_succeeded",
        tool,
        key,
        fingerprintArguments(provider.argumentSets(tool)[0]!),
        await decide(tool, key, fingerprintArguments(provider.argumentSets(tool)[0]!), Date.now() - inFlightMs - 1),
      );
    }

    // --- a late commit while lookups run
    if (provider.supportsDelayedWrites === false) notes.set("late_commit_never_not_executed", "the provider cannot delay a write");
    else await lateCommitCase("late_commit_never_not_executed", 200);

    // --- a pending write
    if (!provider.hasPendingState) notes.set("pending_never_not_executed", "the provider has no observable pending state");
    else await lateCommitCase("pending_never_not_executed", 0);

    async function lateCommitCase(c: KitCaseName, delayMs: number): Promise<void> {
      const tool = tools[0]!;
      const args = provider.argumentSets(tool)[1]!;
      const fingerprint = fingerprintArguments(args);
      const key = newUlid();
      const at = Date.now();
      let settled = false;
      const writing = write(tool, key, args, { delayMs }).finally(() => {
        settled = true;
      });
      const notExecuted: string[] = [];
      await sleep(30);
      while (!settled) {
        const d = await judge(c, tool, key, fingerprint, await decide(tool, key, fingerprint, at));
        if (d.decision === "confirmed_not_executed") notExecuted.push(new Date().toISOString());
        await sleep(40);
      }
      const written = await writing;
      if (written.status === "committed" && notExecuted.length > 0)
        fail(c, `decided confirmed_not_executed while the write (${tool}, key ${key}) was in flight; it committed afterwards`);
      if (written.status === "committed") await settleCommitted(c, tool, key, fingerprint, at);
    }

    // --- an aborted lookup
    {
      const c: KitCaseName = "aborted_lookup_confirms_nothing";
      const tool = tools[0]!;
      const args = provider.argumentSets(tool)[0]!;
      const key = newUlid();
      const at = Date.now();
      await write(tool, key, args);
      await settleCommitted(c, tool, key, fingerprintArguments(args), at);
      const slowed = provider.setLookupDelay !== undefined;
      if (slowed) await provider.setLookupDelay!(400);
      const signal = slowed ? AbortSignal.timeout(50) : AbortSignal.abort(new Error("aborted by the kit"));
      const request: LookupRequest = {
        effectId: newUlid(),
        serverId,
        toolName: tool,
        idempotencyKey: key,
        requestFingerprint: fingerprintArguments(args),
        firstDispatchedAtMs: at,
        lastDispatchedAtMs: at,
      };
      const answer = await Promise.race([
        guarded.lookup(request, { signal, logger: NOOP_LOGGER }).then(
          (v) => ({ v }),
          () => ({ v: "rejected" as unknown }),
        ),
        sleep(1_500).then(() => ({ v: "hung" as unknown })),
      ]);
      if (slowed) await provider.setLookupDelay!(0);
      const outcome = (answer.v as { outcome?: unknown } | null)?.outcome;
      if (answer.v === "hung") fail(c, "the lookup did not settle within 1.5 s after its signal aborted");
      else if (outcome === "confirmed_succeeded" || outcome === "confirmed_not_executed")
        fail(c, `answered ${String(outcome)} after its signal aborted (it could not have asked the provider)`);
    }

    // --- the provider's lookup API is down: nothing may be confirmed (a failed lookup proves nothing)
    {
      const c: KitCaseName = "provider_outage_confirms_nothing";
      if (provider.setOutage === undefined) notes.set(c, "the provider cannot simulate an outage");
      else {
        const tool = tools[0]!;
        const args = provider.argumentSets(tool)[0]!;
        const committedKey = newUlid();
        const at = Date.now();
        await write(tool, committedKey, args);
        const neverUsedKey = newUlid();
        await provider.setOutage(true);
        try {
          for (const key of [committedKey, neverUsedKey]) {
            const d = await decide(tool, key, fingerprintArguments(args), at - inFlightMs - 1);
            if (d.decision === "confirmed_succeeded" || d.decision === "confirmed_not_executed") {
              fail(
                c,
                `decided ${d.decision} (${tool}, key ${key}) while the provider's lookup API was down: a failed lookup proves nothing (throw, or answer still_unknown)`,
              );
            }
          }
        } finally {
          await provider.setOutage(false);
        }
      }
    }

    // --- a provider that forgets every key sooner than declared: a miss must never be believed. The
    // runtime's retention canary (an older committed key the adapter confirmed before) must catch it,
    // so the adapter must ask the provider about the canary, not answer it from memory.
    {
      const c: KitCaseName = "forgetful_provider_never_not_executed";
      if (declaration.keyFencing.kind !== "max_in_flight") notes.set(c, "the adapter declares a key fence: its misses need no canary");
      else if (provider.forgetEverything === undefined) notes.set(c, "the provider cannot forget keys");
      else {
        const tool = tools[0]!;
        const [a0, a1] = provider.argumentSets(tool);
        const canaryKey = newUlid();
        const canaryAt = Date.now();
        await write(tool, canaryKey, a0!);
        await settleCommitted(c, tool, canaryKey, fingerprintArguments(a0!), canaryAt);
        const key = newUlid();
        const at = Date.now();
        await write(tool, key, a1!);
        await sleep(inFlightMs + 20); // past the in-flight window: only the canary stands between a miss and not_executed
        await provider.forgetEverything();
        const fingerprint = fingerprintArguments(a1!);
        const d = await judge(c, tool, key, fingerprint, await decide(tool, key, fingerprint, at, canaryKey));
        if (d.decision === "confirmed_not_executed")
          fail(
            c,
            `the retention canary (key ${canaryKey}) was confirmed although the provider had forgotten it: answer lookups from the provider, never from memory`,
          );
      }
    }
  } catch (error) {
    fail("declaration_is_valid", `the kit could not run the adapter: ${error instanceof Error ? error.message : String(error)}`);
  }
  return report();

  async function finish(): Promise<void> {
    await sleep(50);
    await new Promise((resolve) => setImmediate(resolve));
    process.off("unhandledRejection", onAsyncError);
    process.off("uncaughtException", onAsyncError);
    for (const e of asyncErrors) fail("no_async_errors_left_behind", `left an async error behind: ${e}`);
  }

  async function report(): Promise<KitReport> {
    await finish();
    const cases = KIT_CASES.map((c): KitCaseReport => {
      const lines = [...new Set(failures.get(c)!)];
      const note = notes.get(c);
      if (lines.length > 0) return { case: c, status: "failed", failures: lines, ...(note ? { note } : {}) };
      return note &&
        (c === "late_commit_never_not_executed" || c === "pending_never_not_executed" || c === "forgetful_provider_never_not_executed")
        ? { case: c, status: "not_applicable", failures: [], note }
        : { case: c, status: "passed", failures: [], ...(note ? { note } : {}) };
    });
    return { name: options.name, provider: provider.name, passed: cases.every((c) => c.status !== "failed"), cases, measurements };
  }
}
