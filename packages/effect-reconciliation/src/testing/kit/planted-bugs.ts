// Deliberately broken variants of the reference probe adapter, each of which the conformance kit must catch.
import { MAX_RECEIPT_BYTES } from "../../author/receipt.contract.js";
import type { AdapterDeclaration, LookupContext, LookupRequest, ReconciliationAdapter } from "../../author/adapter.contract.js";
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

/** What every planted bug is built from: the provider, its reference adapter and the reference declaration. */
interface Planting {
  readonly provider: ProbeProvider;
  readonly reference: ReconciliationAdapter;
  readonly declaration: AdapterDeclaration;
}

/** An adapter with `declaration` and `lookup` (the shape every planted bug returns). */
function adapterWith(
  declaration: AdapterDeclaration,
  lookup: (request: LookupRequest, context: LookupContext) => Promise<unknown>,
): ReconciliationAdapter {
  return { declaration, lookup };
}

/** The reference adapter with its answer edited in place by `edit` before it is returned (the reference declaration). */
function editReferenceAnswer<T>(p: Planting, edit: (answer: T) => void): ReconciliationAdapter {
  return adapterWith(p.declaration, async (request, context) => {
    const answer = (await p.reference.lookup(request, context)) as T;
    edit(answer);
    return answer;
  });
}

/** The reference adapter remembering answers `keep` accepts per key, repeated (cloned) without asking again. */
function cachingReference(p: Planting, keep: (outcome: string) => boolean, checkAbortFirst: boolean): ReconciliationAdapter {
  const cache = new Map<string, unknown>();
  return adapterWith(p.declaration, async (request, context) => {
    if (checkAbortFirst) context.signal.throwIfAborted();
    const cached = cache.get(request.idempotencyKey);
    if (cached !== undefined) return structuredClone(cached);
    const answer = (await p.reference.lookup(request, context)) as { outcome: string };
    if (keep(answer.outcome)) cache.set(request.idempotencyKey, answer);
    return answer;
  });
}

/** The reference adapter answering `confirmed_not_executed` for a failed lookup `swallows` (by whether it was aborted). */
function swallowingReference(p: Planting, swallows: (aborted: boolean) => boolean): ReconciliationAdapter {
  return adapterWith(p.declaration, async (request, context) => {
    try {
      return await p.reference.lookup(request, context);
    } catch (error) {
      if (swallows(context.signal.aborted)) return confirmedNotExecuted(request);
      throw error;
    }
  });
}

/** Plants `lookup_fences_key` whatever the provider does, and answers `confirmed_not_executed` on every miss. */
function plantUnfencedMiss({ provider, declaration }: Planting): ReconciliationAdapter {
  const d = { ...declaration, keyFencing: { kind: "lookup_fences_key" as const } };
  return adapterWith(d, async (request, { signal }) => {
    const answer = await provider.lookupByKey(request.idempotencyKey, signal);
    return answer.status === "not_found" ? confirmedNotExecuted(request) : mapProbeAnswer(answer, request, d);
  });
}

/** Plants an answer read from the provider's latest commit, echoing the asked key. */
function plantAnswerForAnotherKey({ provider, declaration }: Planting): ReconciliationAdapter {
  return adapterWith(declaration, async (request, { signal }) => {
    await provider.lookupByKey(request.idempotencyKey, signal);
    const latest = provider.latest();
    const answer = latest ?? (await provider.lookupByKey(request.idempotencyKey, signal));
    return mapProbeAnswer({ ...answer, idempotencyKey: request.idempotencyKey }, request, declaration);
  });
}

/** Plants a declared `max_in_flight` of 1 ms. */
function plantWrongMaxInFlight({ provider, declaration }: Planting): ReconciliationAdapter {
  const d = { ...declaration, keyFencing: { kind: "max_in_flight" as const, maxInFlightMs: 1 } };
  return adapterWith(d, async (request, { signal }) =>
    mapProbeAnswer(await provider.lookupByKey(request.idempotencyKey, signal), request, d),
  );
}

/** Plants `confirmed_not_executed` while the provider says pending. */
function plantPendingAsNotExecuted({ provider, declaration }: Planting): ReconciliationAdapter {
  return adapterWith(declaration, async (request, { signal }) => {
    const answer = await provider.lookupByKey(request.idempotencyKey, signal);
    return answer.status === "pending" ? confirmedNotExecuted(request) : mapProbeAnswer(answer, request, declaration);
  });
}

/** Plants a lookup through the list endpoint's first page only ("not on page one" is a miss). */
function plantFirstPageOnly({ provider, declaration }: Planting): ReconciliationAdapter {
  return adapterWith(declaration, async (request, { signal }) => {
    const page = await provider.listOperations(undefined, signal);
    const found = page.operations.find((o) => o.idempotencyKey === request.idempotencyKey);
    return mapProbeAnswer(found ?? { status: "not_found", idempotencyKey: request.idempotencyKey, fenced: false }, request, declaration);
  });
}

/** How each {@link PlantedBug} is built (see {@link PLANTED_BUGS} for what each one does). */
const PLANTERS: Readonly<Record<PlantedBug, (p: Planting) => ReconciliationAdapter>> = {
  plain_miss_not_executed_unfenced: plantUnfencedMiss,
  fingerprint_ignored: (p) =>
    editReferenceAnswer<{ receipt?: { requestFingerprint?: string } }>(p, (answer) => {
      if (answer.receipt) delete answer.receipt.requestFingerprint;
    }),
  answer_for_another_key: plantAnswerForAnotherKey,
  answer_for_another_tool: (p) =>
    editReferenceAnswer<{ toolName?: string }>(p, (answer) => {
      if (answer.toolName !== undefined) answer.toolName = p.declaration.tools[0]!;
    }),
  timeout_swallowed: (p) => swallowingReference(p, (aborted) => aborted),
  receipt_over_limit: (p) =>
    editReferenceAnswer<{ receipt?: Record<string, unknown> }>(p, (answer) => {
      if (answer.receipt) answer.receipt["detail"] = { trace: "x".repeat(MAX_RECEIPT_BYTES) };
    }),
  mutates_input: (p) =>
    adapterWith(p.declaration, async (request, context) => {
      const answer = await p.reference.lookup(request, context);
      (request as { lastDispatchedAtMs: number }).lastDispatchedAtMs = 0;
      return answer;
    }),
  floating_rejection: (p) =>
    adapterWith(p.declaration, async (request, context) => {
      void Promise.reject(new Error("planted: a rejection nobody handles"));
      return p.reference.lookup(request, context);
    }),
  wrong_declared_retention: (p) => createProbeAdapter(p.provider, { retentionWindowMs: 24 * 60 * 60 * 1000 }),
  wrong_max_in_flight: plantWrongMaxInFlight,
  pending_answered_not_executed: plantPendingAsNotExecuted,
  caches_first_miss: (p) => cachingReference(p, (outcome) => outcome !== "confirmed_succeeded", false),
  result_rebuilt: (p) =>
    editReferenceAnswer<{ result?: unknown }>(p, (answer) => {
      if (answer.result !== undefined) answer.result = { content: [{ type: "text", text: "done" }] };
    }),
  outage_answered_not_executed: (p) => swallowingReference(p, (aborted) => !aborted),
  reads_first_page_only: plantFirstPageOnly,
  caches_confirmations: (p) => cachingReference(p, (outcome) => outcome === "confirmed_succeeded", true),
};

/** Builds the adapter with `bug` planted, for `provider`. */
export function createPlantedBugAdapter(bug: PlantedBug, provider: ProbeProvider): ReconciliationAdapter {
  return PLANTERS[bug]({ provider, reference: createProbeAdapter(provider), declaration: probeDeclaration(provider) });
}
