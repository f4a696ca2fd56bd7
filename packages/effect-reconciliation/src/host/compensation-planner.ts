// Asks the bound adapter to plan a declared compensation of a succeeded effect, refusing on any failure so nothing is written.
import { CompensationPlanSchema, type CompensationPlanRequest, type ReconciliationAdapter } from "../author/adapter.contract.js";
import { safeLogger } from "./adapter-logger.js";
import { summarizeError } from "./error-message.js";
import { jsonByteLength } from "../author/json-size.js";
import { runBoundedAdapterCall } from "./lookup-runner.js";
import type { AdapterLogger } from "../author/adapter.contract.js";
import type { AdapterRef } from "./reconcile-decision.contract.js";

/** Largest compensation `arguments` accepted from an adapter, in bytes of JSON (the API's own enqueue limit). */
export const MAX_COMPENSATION_ARGUMENTS_BYTES = 256 * 1024;

/**
 * Why a compensation was refused before anything was written:
 * - `compensation.not_declared`: the bound adapter declares no compensating action for the effect's tool;
 * - `compensation.plan_failed`: `planCompensation` threw, timed out, or answered something that is
 *   not `{arguments: {...}}` within {@link MAX_COMPENSATION_ARGUMENTS_BYTES}.
 */
export type CompensationRefusalCode = "compensation.not_declared" | "compensation.plan_failed";

/**
 * The runtime's verdict on one compensation request: `planned` with the declared compensating tool,
 * the validated arguments and the adapter that planned them; or `refused` with a code and one line.
 */
export type CompensationPlanDecision =
  | { kind: "planned"; toolName: string; arguments: Record<string, unknown>; adapter: AdapterRef }
  | { kind: "refused"; code: CompensationRefusalCode; message: string; adapter: AdapterRef };

/** Input of {@link planCompensation}: the bound adapter, the effect to undo, the bound (ms) on the call, a logger and an optional cancel signal. */
export interface PlanCompensationInput {
  adapter: ReconciliationAdapter;
  request: CompensationPlanRequest;
  timeoutMs: number;
  logger: AdapterLogger;
  signal?: AbortSignal;
}

/**
 * Asks the bound adapter to plan the declared compensating action of a `succeeded` effect
 * (docs/DESIGN.md §3 rule 8): looks the compensation up in the adapter's declaration (never infers one
 * from a tool's name or annotations), calls `planCompensation` within `timeoutMs` (ms) and
 * validates its answer against `CompensationPlanSchema`. Fail-closed: every failure is a
 * `refused` decision, so the caller writes nothing. Never throws.
 */
export async function planCompensation(input: PlanCompensationInput): Promise<CompensationPlanDecision> {
  const { adapter, request } = input;
  const ref: AdapterRef = { id: adapter.declaration.id, version: adapter.declaration.version };
  const declared = adapter.declaration.compensations?.[request.toolName];
  const refuse = (code: CompensationRefusalCode, message: string): CompensationPlanDecision => ({
    kind: "refused",
    code,
    message,
    adapter: ref,
  });
  if (!declared || typeof adapter.planCompensation !== "function") {
    return refuse("compensation.not_declared", `adapter ${ref.id}@${ref.version} declares no compensating action for ${request.toolName}`);
  }
  const logger = safeLogger(input.logger, { adapterId: ref.id, effectId: request.effectId });
  const run = await runBoundedAdapterCall((context) => adapter.planCompensation!(request, context), logger, input.timeoutMs, input.signal);
  if (run.kind === "timed_out" || run.kind === "cancelled")
    return refuse("compensation.plan_failed", `planCompensation did not answer within ${input.timeoutMs} ms`);
  if (run.kind === "threw") return refuse("compensation.plan_failed", `planCompensation failed: ${summarizeError(run.error)}`);
  const parsed = CompensationPlanSchema.safeParse(run.value);
  if (!parsed.success)
    return refuse("compensation.plan_failed", `planCompensation answered an invalid plan: ${summarizeError(parsed.error)}`);
  const size = jsonByteLength(parsed.data.arguments);
  if (size === null || size > MAX_COMPENSATION_ARGUMENTS_BYTES) {
    return refuse("compensation.plan_failed", `planned arguments are not JSON or exceed ${MAX_COMPENSATION_ARGUMENTS_BYTES} bytes`);
  }
  return { kind: "planned", toolName: declared.toolName, arguments: parsed.data.arguments, adapter: ref };
}
