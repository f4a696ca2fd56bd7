// The reference reconciliation adapter over the provider double, whose declaration tests can make lie.
import { newUlid } from "@mosoo/contracts";
import type { AdapterDeclaration, LookupContext, LookupRequest, ReconciliationAdapter } from "../author/adapter.contract.js";
import type { LookupOutcomeInput } from "../author/lookup-outcome.contract.js";
import { MAX_RECEIPT_BYTES, MAX_RESULT_BYTES } from "../author/receipt.contract.js";
import type { ProviderDouble } from "./provider-double.js";

/** The id of the reference adapter over the provider double. */
export const PROVIDER_DOUBLE_ADAPTER_ID = "provider-double";

/**
 * The reference adapter: a `ReconciliationAdapter` over a {@link ProviderDouble}. Its declaration is
 * `{id: "provider-double", version: "1.0.0", tools: [double.toolName], retentionWindowMs,
 * keyFencing}` taken from the double, then `declarationOverrides` (use them to make it lie, e.g.
 * claim a fence the double does not have).
 *
 * `lookup` honours the signal (rejects with `signal.reason` once aborted, also while waiting
 * `faults.lookupDelayMs`), reads the double and answers `confirmed_succeeded` (receipt with the
 * operation id and the recorded request fingerprint) or, when nothing is visible,
 * `confirmed_not_executed` (receipt `detail.fenced` says whether the key is fenced; the runtime
 * decides what that proves, docs/DESIGN.md §5). A tool it does not serve gets `still_unknown`
 * `unsupported_tool`. `faults.adapterFault` / `faults.answerOverride` make it misbehave.
 */
export function createProviderDoubleAdapter(
  double: ProviderDouble,
  declarationOverrides: Partial<AdapterDeclaration> = {},
): ReconciliationAdapter {
  const declaration: AdapterDeclaration = {
    id: PROVIDER_DOUBLE_ADAPTER_ID,
    version: "1.0.0",
    tools: [double.toolName],
    retentionWindowMs: double.retentionWindowMs,
    keyFencing: double.keyFencing,
    ...declarationOverrides,
  };
  return {
    declaration,
    lookup(request: LookupRequest, context: LookupContext): Promise<unknown> {
      const faults = double.faults;
      if (faults.adapterFault === "throws") throw new Error("provider double adapter: simulated crash");
      if (faults.adapterFault === "rejects") return Promise.reject(new Error("provider double adapter: simulated 503"));
      if (faults.adapterFault === "hangs_ignoring_signal") return new Promise<unknown>(() => {});
      if (faults.answerOverride) return Promise.resolve(faults.answerOverride(request));
      return answer(double, request, context);
    },
  };
}

async function answer(double: ProviderDouble, request: LookupRequest, { signal, logger }: LookupContext): Promise<unknown> {
  signal.throwIfAborted();
  if (double.faults.lookupDelayMs > 0) await sleep(double, double.faults.lookupDelayMs, signal);
  if (request.toolName !== double.toolName)
    return { outcome: "still_unknown", reasonCode: "unsupported_tool" } satisfies LookupOutcomeInput;

  const seen = double.lookup(request.idempotencyKey);
  const observedAt = new Date(double.clock.now()).toISOString();
  logger.debug({ found: seen.found }, "provider double lookup");
  let outcome: LookupOutcomeInput = seen.found
    ? {
        outcome: "confirmed_succeeded",
        toolName: request.toolName,
        idempotencyKey: request.idempotencyKey,
        result: seen.record.result,
        receipt: {
          providerOperationId: seen.record.operationId,
          observedAt,
          requestFingerprint: seen.record.requestFingerprint,
          detail: { committedAtMs: seen.record.committedAtMs },
        },
      }
    : {
        outcome: "confirmed_not_executed",
        toolName: request.toolName,
        idempotencyKey: request.idempotencyKey,
        receipt: { observedAt, detail: { fenced: seen.fenced } },
      };
  outcome = mangle(outcome, double.faults.adapterFault);
  return outcome;
}

function mangle(outcome: LookupOutcomeInput, fault: ProviderDouble["faults"]["adapterFault"]): LookupOutcomeInput {
  if (outcome.outcome === "still_unknown") return outcome;
  switch (fault) {
    case "garbage":
      return { outcome: "confirmed_succeeded", result: "<html>502 Bad Gateway</html>" } as unknown as LookupOutcomeInput;
    case "oversized_receipt":
      return { ...outcome, receipt: { ...outcome.receipt, detail: { padding: "x".repeat(MAX_RECEIPT_BYTES) } } };
    case "oversized_result":
      return {
        outcome: "confirmed_succeeded",
        toolName: outcome.toolName,
        idempotencyKey: outcome.idempotencyKey,
        receipt: outcome.receipt,
        result: { content: [{ type: "text", text: "y".repeat(MAX_RESULT_BYTES + 1) }] },
      };
    case "wrong_key":
      return { ...outcome, idempotencyKey: newUlid() };
    case "wrong_tool":
      return { ...outcome, toolName: `${outcome.toolName}_other` };
    case "conflicting_fingerprint":
      return { ...outcome, receipt: { ...outcome.receipt, requestFingerprint: "f".repeat(64) } };
    default:
      return outcome;
  }
}

function sleep(double: ProviderDouble, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      cancel();
      reject(signal.reason);
    };
    const cancel = double.clock.setTimer(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
