// The fixture issue tracker's reconciliation adapter (fenced and max-in-flight variants), looking writes up via `getOperation`.
import { z } from "zod";
import {
  confirmedNotExecuted,
  ConventionLookupAnswerSchema,
  stillUnknown,
  type LookupContext,
  type LookupRequest,
  type ReconciliationAdapterFactory,
} from "@mosoo/effect-reconciliation";
import { callLookupTool, McpEndpointUrlSchema } from "@mosoo/effect-reconciliation";

/** Options (the binding's `options`): `url`, the provider's MCP endpoint (Streamable HTTP, no fetch-forbidden port) serving `getOperation`. */
export const FixtureIssueTrackerOptionsSchema = z.strictObject({
  url: McpEndpointUrlSchema,
});
/** See {@link FixtureIssueTrackerOptionsSchema}. */
export type FixtureIssueTrackerOptions = z.infer<typeof FixtureIssueTrackerOptionsSchema>;

/**
 * What the fixture provider promises: it keeps every key as long as its SQLite file lives (we
 * declare 30 days) and, started with `--fence-on-lookup-miss`, a `getOperation` miss writes a
 * durable tombstone (`lookup_fences_key`). Both write tools are looked up; `createIssue` is undone by `closeIssue`.
 */
const DECLARATION = {
  id: "fixture-issue-tracker",
  version: "1.1.0",
  tools: ["createIssue", "closeIssue"],
  retentionWindowMs: 30 * 24 * 60 * 60 * 1000,
  keyFencing: { kind: "lookup_fences_key" as const },
  compensations: {
    createIssue: { toolName: "closeIssue", description: "Close the issue this createIssue created (found by its idempotency key)." },
  },
};

/** `getOperation(key)`; its answer has the shape of the convention's lookup answer. @throws on a tool error or a malformed answer. */
const getOperation = (o: FixtureIssueTrackerOptions, key: string, signal: AbortSignal) =>
  callLookupTool(o.url, "getOperation", { idempotencyKey: key }, ConventionLookupAnswerSchema, signal);

/**
 * found → `confirmed_succeeded` (the recorded result, operation id and request fingerprint);
 * a fenced miss → `confirmed_not_executed`; an unfenced miss → `still_unknown` `not_found_unfenced`
 * (the plain-miss rule for `lookup_fences_key`, README of `@mosoo/effect-reconciliation`).
 */
async function lookup(
  o: FixtureIssueTrackerOptions,
  request: LookupRequest,
  { signal }: LookupContext,
  trustUnfencedMiss = false,
): Promise<unknown> {
  const answer = await getOperation(o, request.idempotencyKey, signal);
  if (answer.found) {
    const receipt = {
      observedAt: new Date().toISOString(),
      providerOperationId: answer.operationId,
      requestFingerprint: answer.requestFingerprint,
    };
    return {
      outcome: "confirmed_succeeded",
      toolName: answer.toolName,
      idempotencyKey: answer.idempotencyKey,
      result: answer.result,
      receipt,
    };
  }
  return answer.fenced || trustUnfencedMiss
    ? confirmedNotExecuted(request, { detail: { fenced: true } })
    : stillUnknown("not_found_unfenced");
}

/** The factory (fenced misses only), exported for bindings as `{"module": "@mosoo/fixture-adapter", "export": "fixtureIssueTrackerAdapterFactory"}`. */
export const fixtureIssueTrackerAdapterFactory: ReconciliationAdapterFactory = factory(DECLARATION, false);

/** The maximum in-flight time (ms) the max-in-flight variant declares for the fixture provider. */
export const FIXTURE_MAX_IN_FLIGHT_MS = 2_000;

/**
 * The same provider seen WITHOUT a fence (started without `--fence-on-lookup-miss`): declares
 * `max_in_flight` 2 s and answers a miss `confirmed_not_executed`, which the runtime accepts only
 * after claim + send-by deadline + 2 s (see `sendDeadlinePassed` in effect-claim.contract.ts). Export `fixtureIssueTrackerMaxInFlightAdapterFactory`.
 */
export const fixtureIssueTrackerMaxInFlightAdapterFactory: ReconciliationAdapterFactory = factory(
  {
    ...DECLARATION,
    id: "fixture-issue-tracker-max-in-flight",
    keyFencing: { kind: "max_in_flight" as const, maxInFlightMs: FIXTURE_MAX_IN_FLIGHT_MS },
  },
  true,
);

function factory(declaration: ReconciliationAdapterFactory["declaration"], trustUnfencedMiss: boolean): ReconciliationAdapterFactory {
  return {
    declaration,
    create(options: unknown) {
      const o = FixtureIssueTrackerOptionsSchema.parse(options);
      return {
        declaration,
        lookup: (request, context) => lookup(o, request, context, trustUnfencedMiss),
        // The issue a createIssue made, found by its key (read-only for a committed key), closed by closeIssue.
        async planCompensation(request, { signal }) {
          const answer = await getOperation(o, request.idempotencyKey, signal);
          if (!answer.found || answer.toolName !== "createIssue")
            throw new Error(`no createIssue recorded under key ${request.idempotencyKey}: nothing to close`);
          return { arguments: { issueId: answer.operationId, reason: `compensates effect ${request.effectId}` } };
        },
      };
    },
  };
}
