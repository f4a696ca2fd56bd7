// What one conformance-kit run shares between its cases: failure lines, notes, the ledger of commits, and the judged lookups.
import { isDeepStrictEqual } from "node:util";
import { fingerprintArguments, newUlid } from "@mosoo/contracts";
import type { AdapterDeclaration, ReconciliationAdapter } from "../../author/adapter.contract.js";
import { NOOP_LOGGER } from "../../host/adapter-logger.js";
import type { ReconcileDecision } from "../../host/reconcile-decision.contract.js";
import { reconcileEffect } from "../../host/reconcile.service.js";
import type { KitProvider, KitWriteResult } from "./kit-provider.contract.js";
import type { ProviderMeasurements } from "./kit-measure.js";
import { describeDecision, wrongDecisionLines } from "./kit-verdict.js";
import { pickCanary, type KitLedgerEntry } from "./kit-canary.js";
import { KIT_CASES, type AdapterCaller, type KitCaseName } from "./kit-run.contract.js";

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What a run records from its first step, before the adapter is known: `failures` (lines per case,
 * in the order seen), `notes` (one per case), `ledger` (every write the kit saw commit, by key),
 * `measurements` (once taken; null until then or when the provider could not be measured).
 * `fail(c, line)` adds a failure line; `failed(c)` says whether the case has one; `write(tool, key,
 * args, {delayMs?})` writes through the provider and records a commit in the ledger.
 */
export interface KitRecord {
  provider: KitProvider;
  failures: Map<KitCaseName, string[]>;
  notes: Map<KitCaseName, string>;
  ledger: Map<string, KitLedgerEntry>;
  measurements: ProviderMeasurements | null;
  fail: (c: KitCaseName, line: string) => void;
  failed: (c: KitCaseName) => boolean;
  write: (tool: string, key: string, args: Record<string, unknown>, opts?: { delayMs?: number }) => Promise<KitWriteResult>;
}

/** A fresh {@link KitRecord} for one run against `provider`: no failures, no notes, an empty ledger. */
export function createKitRecord(provider: KitProvider): KitRecord {
  const failures = new Map<KitCaseName, string[]>(KIT_CASES.map((c) => [c, []]));
  const ledger = new Map<string, KitLedgerEntry>();
  return {
    provider,
    failures,
    notes: new Map<KitCaseName, string>(),
    ledger,
    measurements: null,
    fail: (c, line) => void failures.get(c)!.push(line),
    failed: (c) => failures.get(c)!.length > 0,
    write: async (tool, key, args, opts) => {
      const dispatchedAtMs = Date.now();
      const written = await provider.write(tool, key, args, opts);
      if (written.status === "committed")
        ledger.set(key, { toolName: tool, fingerprint: fingerprintArguments(args), result: written.result, dispatchedAtMs });
      return written;
    },
  };
}

/**
 * The adapter as the kit's cases call it: every `lookup` goes through `caller` with a copy of the
 * request, and fails `input_not_mutated` when the adapter changed the copy it was handed.
 */
export function guardAdapter(record: KitRecord, adapter: ReconciliationAdapter, caller: AdapterCaller): ReconciliationAdapter {
  return {
    declaration: adapter.declaration,
    async lookup(request, context) {
      const original = structuredClone(request);
      const handed = structuredClone(request);
      try {
        return await caller(adapter, handed, context);
      } finally {
        if (!isDeepStrictEqual(handed, original))
          record.fail("input_not_mutated", `the adapter changed the request it was handed (key ${original.idempotencyKey})`);
      }
    },
  };
}

/** What a run knows once the adapter is valid and the provider measured (see {@link createKitContext}). */
export interface KitSetup {
  serverId: string;
  /** Lookup timeout (ms). */
  timeoutMs: number;
  /** How long a committed key may take to be confirmed (ms). */
  settleMs: number;
  /** The provider's tools the adapter declares, in the provider's order (at least one). */
  tools: string[];
  declaration: AdapterDeclaration;
  /** The adapter wrapped by {@link guardAdapter}. */
  guarded: ReconciliationAdapter;
}

/**
 * Everything a case needs: the {@link KitRecord}, the {@link KitSetup}, `inFlightMs` (the declared
 * `maxInFlightMs`, 0 under a key fence), and three steps:
 * - `decide(tool, key, fingerprint, dispatchedAtMs, canaryKey?)`: one reconcile decision through the
 *   runtime's own `reconcileEffect` on the guarded adapter;
 * - `judge(c, tool, key, fingerprint, decision)`: fails `c` for every way the decision contradicts
 *   what the provider holds; returns the decision;
 * - `settleCommitted(c, tool, key, fingerprint, dispatchedAtMs)`: looks a committed key up until it
 *   is confirmed (every answer judged), failing `c` when it is not within `settleMs`.
 */
export interface KitContext extends KitRecord, KitSetup {
  inFlightMs: number;
  decide: (tool: string, key: string, fingerprint: string, dispatchedAtMs: number, canaryKey?: string) => Promise<ReconcileDecision>;
  judge: (c: KitCaseName, tool: string, key: string, fingerprint: string, decision: ReconcileDecision) => Promise<ReconcileDecision>;
  settleCommitted: (c: KitCaseName, tool: string, key: string, fingerprint: string, dispatchedAtMs: number) => Promise<void>;
}

/** Builds the {@link KitContext} of a run from its record and setup. */
export function createKitContext(record: KitRecord, setup: KitSetup): KitContext {
  const { provider, ledger, fail, failed } = record;
  const { serverId, timeoutMs, settleMs, declaration, guarded } = setup;
  const inFlightMs = declaration.keyFencing.kind === "max_in_flight" ? declaration.keyFencing.maxInFlightMs : 0;

  // The retention canary is chosen as the runtime chooses it (docs/DESIGN.md §4): the oldest key the
  // kit saw commit, of the same tool, first sent inside the declared window and no later than the key
  // looked up; a case may name its own (`canaryKey`).
  const decide: KitContext["decide"] = (tool, key, fingerprint, dispatchedAtMs, canaryKey) => {
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

  const judge: KitContext["judge"] = async (c, tool, key, fingerprint, decision) => {
    const truth = await provider.truth(key);
    const known =
      ledger.get(key) ??
      (truth.state === "committed" ? { toolName: truth.toolName, fingerprint: truth.requestFingerprint, result: truth.result } : undefined);
    for (const line of wrongDecisionLines({ decision, tool, key, fingerprint, known, pending: truth.state === "pending" })) fail(c, line);
    return decision;
  };

  const settleCommitted: KitContext["settleCommitted"] = async (c, tool, key, fingerprint, dispatchedAtMs) => {
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

  return { ...record, ...setup, inFlightMs, decide, judge, settleCommitted };
}
