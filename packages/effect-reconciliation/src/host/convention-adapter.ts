// The built-in zero-code adapter: discovers the idempotency convention from `tools/list` and looks keys up through it.
import { z } from "zod";
import type {
  AdapterDeclaration,
  DiscoveringAdapterFactory,
  KeyFencing,
  LookupContext,
  LookupRequest,
  ReconciliationAdapter,
} from "../author/adapter.contract.js";
import {
  ConventionLookupAnswerSchema,
  IDEMPOTENCY_CONVENTION_META,
  IdempotencyConventionSchema,
  type IdempotencyConvention,
} from "../author/idempotency-convention.contract.js";
import { confirmedNotExecuted, stillUnknown } from "../author/lookup-outcome.builders.js";
import { McpEndpointUrlSchema } from "../author/mcp-endpoint-url.js";
import { callLookupTool, listMcpTools } from "../author/mcp-lookup.js";

/** The built-in id of the generic convention adapter, as named in a bindings file (`"adapterId": "mcp-convention"`). */
export const CONVENTION_ADAPTER_ID = "mcp-convention";

/** Options of the convention adapter: `url`, the provider's MCP endpoint (Streamable HTTP; {@link McpEndpointUrlSchema}: no fetch-forbidden port). */
export const ConventionAdapterOptionsSchema = z.strictObject({
  url: McpEndpointUrlSchema,
});

/**
 * Reads `tools/list` and keeps every tool whose `_meta["io.mosoo/idempotency"]` passes
 * {@link IdempotencyConventionSchema} (an invalid advertisement leaves that tool uncovered).
 */
export async function discoverConvention(url: string, signal: AbortSignal): Promise<Map<string, IdempotencyConvention>> {
  const advertised = new Map<string, IdempotencyConvention>();
  for (const tool of await listMcpTools(url, signal)) {
    const raw = (tool._meta as Record<string, unknown> | undefined)?.[IDEMPOTENCY_CONVENTION_META];
    const parsed = IdempotencyConventionSchema.safeParse(raw);
    if (raw !== undefined && parsed.success) advertised.set(tool.name, parsed.data);
  }
  return advertised;
}

/**
 * The declaration in force for the advertised tools, the most conservative across them: the
 * shortest retention; `lookup_fences_key` only if every tool fences, else `max_in_flight` with the
 * longest advertised in-flight time.
 */
export function conventionDeclaration(advertised: ReadonlyMap<string, IdempotencyConvention>): AdapterDeclaration {
  const all = [...advertised.values()];
  const unfenced = all.flatMap((c) => (c.fencing.kind === "max_in_flight" ? [c.fencing.maxInFlightMs] : []));
  const keyFencing: KeyFencing =
    unfenced.length === 0 ? { kind: "lookup_fences_key" } : { kind: "max_in_flight", maxInFlightMs: Math.max(...unfenced) };
  return {
    id: CONVENTION_ADAPTER_ID,
    version: "1.0.0",
    tools: [...advertised.keys()],
    retentionWindowMs: Math.min(...all.map((c) => c.retentionMs)),
    keyFencing,
  };
}

/**
 * Looks `request` up with the lookup tool its tool advertises and maps the answer (plain-miss rule,
 * README): found → `confirmed_succeeded` (echoing the provider's tool, key and fingerprint);
 * `pending` → `still_unknown` `pending`; fenced miss → `confirmed_not_executed`; unfenced miss →
 * `confirmed_not_executed` only when the tool advertises `max_in_flight` (the runtime refuses it
 * inside that window), else `still_unknown` `not_found_unfenced`.
 */
async function conventionLookup(
  url: string,
  advertised: ReadonlyMap<string, IdempotencyConvention>,
  request: LookupRequest,
  { signal }: LookupContext,
): Promise<unknown> {
  const convention = advertised.get(request.toolName);
  if (!convention) return stillUnknown("unsupported_tool");
  const answer = await callLookupTool(
    url,
    convention.lookupTool,
    { [convention.lookupKeyArgument]: request.idempotencyKey },
    ConventionLookupAnswerSchema,
    signal,
  );
  if (answer.found) {
    const receipt = {
      observedAt: new Date().toISOString(),
      ...(answer.operationId ? { providerOperationId: answer.operationId } : {}),
      ...(answer.requestFingerprint ? { requestFingerprint: answer.requestFingerprint } : {}),
    };
    return {
      outcome: "confirmed_succeeded",
      toolName: answer.toolName,
      idempotencyKey: answer.idempotencyKey,
      result: answer.result,
      receipt,
    };
  }
  if (answer.pending) return stillUnknown("pending");
  if (answer.idempotencyKey !== request.idempotencyKey) return stillUnknown("answer_for_another_key");
  if (answer.fenced || convention.fencing.kind === "max_in_flight")
    return confirmedNotExecuted(request, { detail: { fenced: answer.fenced } });
  return stillUnknown("not_found_unfenced");
}

/**
 * The built-in generic adapter of the zero-code convention (docs/DESIGN.md §4): `discover({url})` reads
 * `tools/list` once (at startup) and returns an adapter declaring the advertised tools.
 * @throws (rejects) when the provider cannot be reached or advertises no valid convention.
 */
export const conventionAdapterFactory: DiscoveringAdapterFactory = {
  kind: "discovering",
  id: CONVENTION_ADAPTER_ID,
  version: "1.0.0",
  async discover(options: unknown, { signal }): Promise<ReconciliationAdapter> {
    const { url } = ConventionAdapterOptionsSchema.parse(options);
    const advertised = await discoverConvention(url, signal);
    if (advertised.size === 0) throw new Error(`no tool at ${url} advertises _meta["${IDEMPOTENCY_CONVENTION_META}"]`);
    return {
      declaration: conventionDeclaration(advertised),
      lookup: (request, context) => conventionLookup(url, advertised, request, context),
    };
  },
};
