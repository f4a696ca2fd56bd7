// The reference adapter of the kit's probe provider: the correct declaration and answer mapping, passing the kit in every mode.
import type { AdapterDeclaration, LookupContext, LookupRequest, ReconciliationAdapter } from "../../author/adapter.contract.js";
import { confirmedNotExecuted, stillUnknown } from "../../author/lookup-outcome.builders.js";
import { PROBE_TOOLS, type ProbeLookupAnswer, type ProbeProvider } from "./probe-provider.js";

/** Margin (ms) the reference adapter adds to the provider's in-flight time and lag in its declaration. */
const IN_FLIGHT_MARGIN_MS = 100;

/** The correct declaration for a probe provider's mode (what the reference adapter declares). */
export function probeDeclaration(provider: ProbeProvider): AdapterDeclaration {
  const s = provider.settings;
  return {
    id: "probe-reference",
    version: "1.0.0",
    tools: [...PROBE_TOOLS],
    retentionWindowMs: s.retentionMs,
    keyFencing: s.fences
      ? { kind: "lookup_fences_key" }
      : { kind: "max_in_flight", maxInFlightMs: (s.maxInFlightMs ?? 0) + s.lookupLagMs + IN_FLIGHT_MARGIN_MS },
  };
}

/**
 * Maps a probe lookup answer onto the contract, following the plain-miss rule (README): committed →
 * `confirmed_succeeded` with the recorded fingerprint; `pending` → `still_unknown`; a fenced miss →
 * `confirmed_not_executed`; an unfenced miss → `confirmed_not_executed` only under `max_in_flight`.
 */
export function mapProbeAnswer(answer: ProbeLookupAnswer, request: LookupRequest, declaration: AdapterDeclaration): unknown {
  if (answer.status === "committed") {
    return {
      outcome: "confirmed_succeeded",
      toolName: answer.toolName,
      idempotencyKey: answer.idempotencyKey,
      result: answer.result,
      receipt: {
        observedAt: new Date().toISOString(),
        providerOperationId: answer.operationId,
        requestFingerprint: answer.requestFingerprint,
      },
    };
  }
  if (answer.status === "pending") return stillUnknown("pending", 50);
  if (answer.fenced || declaration.keyFencing.kind === "max_in_flight")
    return confirmedNotExecuted(request, { detail: { fenced: answer.fenced } });
  return stillUnknown("not_found_unfenced");
}

/** The reference adapter of a probe provider: passes the kit in every mode. `overrides` change its declaration. */
export function createProbeAdapter(provider: ProbeProvider, overrides: Partial<AdapterDeclaration> = {}): ReconciliationAdapter {
  const declaration = { ...probeDeclaration(provider), ...overrides };
  return {
    declaration,
    async lookup(request: LookupRequest, { signal }: LookupContext) {
      return mapProbeAnswer(await provider.lookupByKey(request.idempotencyKey, signal), request, declaration);
    },
  };
}
