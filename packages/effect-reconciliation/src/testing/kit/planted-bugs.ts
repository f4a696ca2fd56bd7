// Deliberately broken variants of the reference probe adapter, each of which the conformance kit must catch.
import { MAX_RECEIPT_BYTES } from "../../author/receipt.contract.js";
import type { LookupContext, LookupRequest, ReconciliationAdapter } from "../../author/adapter.contract.js";
import { confirmedNotExecuted } from "../../author/lookup-outcome.builders.js";
import { createProbeAdapter, mapProbeAnswer, probeDeclaration } from "./probe-adapter.js";
import type { ProbeProvider } from "./probe-provider.js";

/**
 * Deliberately broken adapters the kit must catch (`npm run check:adapter-kit`), each a small
 * change to the reference probe adapter:
 * - `plain_miss_not_executed_unfenced`: declares `lookup_fences_key` whatever the provider does and
 *   answers `confirmed_not_executed` on every miss, fenced or not;
 * - `fingerprint_ignored`: never reports the provider's recorded request fingerprint;
 * - `answer_for_another_key`: answers with the provider's latest commit, echoing the asked key;
 * - `answer_for_another_tool`: always names its first declared tool;
 * - `timeout_swallowed`: turns an aborted lookup into `confirmed_not_executed`;
 * - `receipt_over_limit`: pads the receipt beyond `MAX_RECEIPT_BYTES`;
 * - `mutates_input`: rewrites the request it was handed;
 * - `floating_rejection`: leaves a rejected promise nobody handles on every lookup;
 * - `wrong_declared_retention`: declares 24 h whatever the provider keeps;
 * - `wrong_max_in_flight`: declares `max_in_flight` 1 ms;
 * - `pending_answered_not_executed`: answers `confirmed_not_executed` while the provider says pending;
 * - `caches_first_miss`: remembers a miss and answers it again for that key forever;
 * - `result_rebuilt`: answers a result it made up (drops the provider's structured content);
 * - `outage_answered_not_executed`: turns a failed lookup (provider down) into `confirmed_not_executed`;
 * - `reads_first_page_only`: finds the key in the provider's list endpoint but reads only its first
 *   page, and takes "not on page one" as a miss;
 * - `caches_confirmations`: remembers every confirmed answer and repeats it without asking the
 *   provider again (a provider that forgot the key goes unnoticed, the retention canary included).
 */
export const PLANTED_BUGS = [
  "plain_miss_not_executed_unfenced",
  "fingerprint_ignored",
  "answer_for_another_key",
  "answer_for_another_tool",
  "timeout_swallowed",
  "receipt_over_limit",
  "mutates_input",
  "floating_rejection",
  "wrong_declared_retention",
  "wrong_max_in_flight",
  "pending_answered_not_executed",
  "caches_first_miss",
  "result_rebuilt",
  "outage_answered_not_executed",
  "reads_first_page_only",
  "caches_confirmations",
] as const;
/** One of {@link PLANTED_BUGS}. */
export type PlantedBug = (typeof PLANTED_BUGS)[number];

/** Builds the adapter with `bug` planted, for `provider`. */
export function createPlantedBugAdapter(bug: PlantedBug, provider: ProbeProvider): ReconciliationAdapter {
  const reference = createProbeAdapter(provider);
  const declaration = probeDeclaration(provider);
  const withLookup = (
    lookup: (request: LookupRequest, context: LookupContext) => Promise<unknown>,
    d = declaration,
  ): ReconciliationAdapter => ({ declaration: d, lookup });
  switch (bug) {
    case "plain_miss_not_executed_unfenced": {
      const d = { ...declaration, keyFencing: { kind: "lookup_fences_key" as const } };
      return withLookup(async (request, { signal }) => {
        const answer = await provider.lookupByKey(request.idempotencyKey, signal);
        return answer.status === "not_found" ? confirmedNotExecuted(request) : mapProbeAnswer(answer, request, d);
      }, d);
    }
    case "fingerprint_ignored":
      return withLookup(async (request, context) => {
        const answer = (await reference.lookup(request, context)) as { receipt?: { requestFingerprint?: string } };
        if (answer.receipt) delete answer.receipt.requestFingerprint;
        return answer;
      });
    case "answer_for_another_key":
      return withLookup(async (request, { signal }) => {
        await provider.lookupByKey(request.idempotencyKey, signal);
        const latest = provider.latest();
        const answer = latest ?? (await provider.lookupByKey(request.idempotencyKey, signal));
        return mapProbeAnswer({ ...answer, idempotencyKey: request.idempotencyKey }, request, declaration);
      });
    case "answer_for_another_tool":
      return withLookup(async (request, context) => {
        const answer = (await reference.lookup(request, context)) as { toolName?: string };
        if (answer.toolName !== undefined) answer.toolName = declaration.tools[0]!;
        return answer;
      });
    case "timeout_swallowed":
      return withLookup(async (request, context) => {
        try {
          return await reference.lookup(request, context);
        } catch (error) {
          if (context.signal.aborted) return confirmedNotExecuted(request);
          throw error;
        }
      });
    case "receipt_over_limit":
      return withLookup(async (request, context) => {
        const answer = (await reference.lookup(request, context)) as { receipt?: Record<string, unknown> };
        if (answer.receipt) answer.receipt["detail"] = { trace: "x".repeat(MAX_RECEIPT_BYTES) };
        return answer;
      });
    case "mutates_input":
      return withLookup(async (request, context) => {
        const answer = await reference.lookup(request, context);
        (request as { lastDispatchedAtMs: number }).lastDispatchedAtMs = 0;
        return answer;
      });
    case "floating_rejection":
      return withLookup(async (request, context) => {
        void Promise.reject(new Error("planted: a rejection nobody handles"));
        return reference.lookup(request, context);
      });
    case "wrong_declared_retention":
      return createProbeAdapter(provider, { retentionWindowMs: 24 * 60 * 60 * 1000 });
    case "wrong_max_in_flight": {
      const d = { ...declaration, keyFencing: { kind: "max_in_flight" as const, maxInFlightMs: 1 } };
      return withLookup(
        async (request, { signal }) => mapProbeAnswer(await provider.lookupByKey(request.idempotencyKey, signal), request, d),
        d,
      );
    }
    case "pending_answered_not_executed":
      return withLookup(async (request, { signal }) => {
        const answer = await provider.lookupByKey(request.idempotencyKey, signal);
        return answer.status === "pending" ? confirmedNotExecuted(request) : mapProbeAnswer(answer, request, declaration);
      });
    case "caches_first_miss": {
      const misses = new Map<string, unknown>();
      return withLookup(async (request, context) => {
        const cached = misses.get(request.idempotencyKey);
        if (cached !== undefined) return structuredClone(cached);
        const answer = (await reference.lookup(request, context)) as { outcome: string };
        if (answer.outcome !== "confirmed_succeeded") misses.set(request.idempotencyKey, answer);
        return answer;
      });
    }
    case "outage_answered_not_executed":
      return withLookup(async (request, context) => {
        try {
          return await reference.lookup(request, context);
        } catch (error) {
          if (context.signal.aborted) throw error;
          return confirmedNotExecuted(request);
        }
      });
    case "reads_first_page_only":
      return withLookup(async (request, { signal }) => {
        const page = await provider.listOperations(undefined, signal);
        const found = page.operations.find((o) => o.idempotencyKey === request.idempotencyKey);
        return mapProbeAnswer(
          found ?? { status: "not_found", idempotencyKey: request.idempotencyKey, fenced: false },
          request,
          declaration,
        );
      });
    case "caches_confirmations": {
      const confirmed = new Map<string, unknown>();
      return withLookup(async (request, context) => {
        context.signal.throwIfAborted();
        const cached = confirmed.get(request.idempotencyKey);
        if (cached !== undefined) return structuredClone(cached);
        const answer = (await reference.lookup(request, context)) as { outcome: string };
        if (answer.outcome === "confirmed_succeeded") confirmed.set(request.idempotencyKey, answer);
        return answer;
      });
    }
    case "result_rebuilt":
      return withLookup(async (request, context) => {
        const answer = (await reference.lookup(request, context)) as { result?: unknown };
        if (answer.result !== undefined) answer.result = { content: [{ type: "text", text: "done" }] };
        return answer;
      });
  }
}
