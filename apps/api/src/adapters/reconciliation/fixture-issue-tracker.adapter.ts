import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { z } from "zod";
import { CLOSE_ISSUE_TOOL, CREATE_ISSUE_TOOL, GET_OPERATION_TOOL, GetOperationAnswerSchema, type GetOperationAnswer } from "@mosoo/fixture-provider";
import type {
  CompensationPlanRequest,
  LookupContext,
  LookupRequest,
  ReconciliationAdapter,
  ReconciliationAdapterFactory,
} from "@mosoo/effect-reconciliation";

/** Id of the fixture issue tracker's adapter, as named in a bindings file. */
export const FIXTURE_ISSUE_TRACKER_ADAPTER_ID = "fixture-issue-tracker";

/**
 * Options of the fixture adapter (the `options` of its binding): `url`, the provider's MCP
 * endpoint (Streamable HTTP) where `getOperation` is served.
 */
export const FixtureIssueTrackerOptionsSchema = z.strictObject({ url: z.url({ protocol: /^https?$/, error: "url must be an http(s) MCP endpoint" }) });
/** See {@link FixtureIssueTrackerOptionsSchema}. */
export type FixtureIssueTrackerOptions = z.infer<typeof FixtureIssueTrackerOptionsSchema>;

/**
 * What the fixture provider promises (packages/fixture-provider, `getOperation`): it keeps every
 * key in its own SQLite file for as long as the file lives (retention: we declare 30 days), and,
 * when started with `--fence-on-lookup-miss`, a lookup that finds nothing writes a durable
 * tombstone so that the key can never commit afterwards (`lookup_fences_key`). Bind it only to a
 * provider started that way: the adapter still refuses to confirm non-execution when the answer
 * says `fenced: false` (it answers `still_unknown`, reason `not_found_unfenced`).
 * Both write tools are looked up (`createIssue`, and `closeIssue` so that an interrupted
 * compensation can be reconciled too); `createIssue` declares `closeIssue` as its compensating action.
 */
const DECLARATION = {
  id: FIXTURE_ISSUE_TRACKER_ADAPTER_ID,
  version: "1.1.0",
  tools: [CREATE_ISSUE_TOOL, CLOSE_ISSUE_TOOL],
  retentionWindowMs: 30 * 24 * 60 * 60 * 1000,
  keyFencing: { kind: "lookup_fences_key" as const },
  compensations: {
    [CREATE_ISSUE_TOOL]: { toolName: CLOSE_ISSUE_TOOL, description: "Close the issue this createIssue created (found by its idempotency key)." },
  },
};

/** Calls `getOperation` for `idempotencyKey` over a fresh MCP client, aborted by `signal`. @throws on a tool error or an answer that fails the provider's schema. */
async function getOperation(options: FixtureIssueTrackerOptions, idempotencyKey: string, signal: AbortSignal): Promise<GetOperationAnswer> {
  const client = new Client({ name: "mosoo-reconciler", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(options.url));
  try {
    await client.connect(transport, { signal });
    const res = await client.callTool({ name: GET_OPERATION_TOOL, arguments: { idempotencyKey } }, undefined, { signal });
    if (res.isError) throw new Error(`getOperation answered a tool error: ${JSON.stringify(res.content).slice(0, 200)}`);
    return GetOperationAnswerSchema.parse(res.structuredContent);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * Looks one idempotency key up with the provider's `getOperation` tool (one MCP client per
 * lookup, aborted by `signal`) and maps the answer onto the adapter contract: found →
 * `confirmed_succeeded` with the recorded `createIssue` result and a receipt carrying the
 * provider's operation id, commit time and request fingerprint; not found and fenced →
 * `confirmed_not_executed`; not found and not fenced → `still_unknown` (`not_found_unfenced`).
 * A tool error or an answer that fails the provider's schema is thrown (the runtime turns it into
 * `still_unknown` `adapter_error`).
 */
async function lookup(options: FixtureIssueTrackerOptions, request: LookupRequest, { signal, logger }: LookupContext, trustUnfencedMiss = false): Promise<unknown> {
  const answer = await getOperation(options, request.idempotencyKey, signal);
  logger.debug({ idempotencyKey: request.idempotencyKey, found: answer.found }, "fixture_adapter.lookup_answered");
  if (answer.found) {
    return {
      outcome: "confirmed_succeeded",
      toolName: answer.toolName,
      idempotencyKey: answer.idempotencyKey,
      result: answer.result,
      receipt: {
        providerOperationId: answer.operationId,
        observedAt: new Date().toISOString(),
        requestFingerprint: answer.requestFingerprint,
        detail: { committedAt: answer.committedAt },
      },
    };
  }
  if (!answer.fenced && !trustUnfencedMiss) return { outcome: "still_unknown", reasonCode: "not_found_unfenced" };
  return {
    outcome: "confirmed_not_executed",
    toolName: request.toolName,
    idempotencyKey: answer.idempotencyKey,
    receipt: { observedAt: answer.observedAt, detail: { fenced: answer.fenced } },
  };
}

/**
 * Plans the compensation of a `createIssue`: finds the issue it created with `getOperation` on the
 * original idempotency key (read-only for a committed key) and answers
 * `{arguments: {issueId, reason: "compensates effect <effectId>"}}` for `closeIssue`.
 * @throws when the provider has no `createIssue` recorded under the key (nothing to close).
 */
async function planCompensation(options: FixtureIssueTrackerOptions, request: CompensationPlanRequest, { signal }: LookupContext): Promise<unknown> {
  const answer = await getOperation(options, request.idempotencyKey, signal);
  if (!answer.found || answer.toolName !== CREATE_ISSUE_TOOL) {
    throw new Error(`the provider has no createIssue recorded under key ${request.idempotencyKey}: nothing to close`);
  }
  return { arguments: { issueId: answer.operationId, reason: `compensates effect ${request.effectId}` } };
}

/** The adapter factory for the fixture issue tracker; options per {@link FixtureIssueTrackerOptionsSchema}. */
export const fixtureIssueTrackerAdapterFactory: ReconciliationAdapterFactory = {
  declaration: DECLARATION,
  create(options: unknown): ReconciliationAdapter {
    const parsed = FixtureIssueTrackerOptionsSchema.parse(options);
    return {
      declaration: DECLARATION,
      lookup: (request, ctx) => lookup(parsed, request, ctx),
      planCompensation: (request, ctx) => planCompensation(parsed, request, ctx),
    };
  },
};

/** Id of {@link fixtureIssueTrackerMaxInFlightAdapterFactory}. */
export const FIXTURE_ISSUE_TRACKER_MAX_IN_FLIGHT_ADAPTER_ID = "fixture-issue-tracker-max-in-flight";
/** The maximum in-flight time (ms) that adapter declares for the fixture provider. */
export const FIXTURE_MAX_IN_FLIGHT_MS = 2_000;

/**
 * The same fixture provider, seen as a provider WITHOUT a fence (started without
 * `--fence-on-lookup-miss`): the adapter declares `keyFencing {kind: "max_in_flight", maxInFlightMs:
 * 2000}` (a request commits within 2 s of being sent, or never) and answers a miss
 * `confirmed_not_executed`. The runtime accepts that answer only after the claim + the claim's
 * send-by deadline + 2 s (DESIGN.md §3 rule 12, §5 `in_flight_window`); the Driver never sends after
 * the deadline. Used by the real-process test of issue 16 repro 3; no lookup fences anything.
 */
export const fixtureIssueTrackerMaxInFlightAdapterFactory: ReconciliationAdapterFactory = {
  declaration: { ...DECLARATION, id: FIXTURE_ISSUE_TRACKER_MAX_IN_FLIGHT_ADAPTER_ID, keyFencing: { kind: "max_in_flight" as const, maxInFlightMs: FIXTURE_MAX_IN_FLIGHT_MS } },
  create(options: unknown): ReconciliationAdapter {
    const parsed = FixtureIssueTrackerOptionsSchema.parse(options);
    return {
      declaration: this.declaration,
      lookup: (request, ctx) => lookup(parsed, request, ctx, true),
      planCompensation: (request, ctx) => planCompensation(parsed, request, ctx),
    };
  },
};
