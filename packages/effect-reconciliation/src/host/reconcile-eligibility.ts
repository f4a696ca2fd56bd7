import { AdapterDeclarationSchema, type AdapterDeclaration, type LookupRequest } from "../author/adapter.contract.js";
import { summarizeError } from "./error-message.js";
import type { IneligibleReasonCode } from "./reconcile-decision.contract.js";
import { ReconcilableEffectSchema, type ReconcilableEffect } from "./reconcilable-effect.contract.js";

/** Whether an effect would be looked up, and if not, why (see `INELIGIBLE_REASON_CODES`). */
export type EligibilityVerdict = { eligible: true } | { eligible: false; reasonCode: IneligibleReasonCode; error?: string };

/** @internal The verdict plus the parsed inputs the reconcile step goes on with. */
export type EligibilityEvaluation =
  | { eligible: true; request: LookupRequest; declaration: AdapterDeclaration; sendWithinMs: number }
  | { eligible: false; reasonCode: IneligibleReasonCode; error?: string };

/**
 * Would `reconcileEffect` look this effect up with an adapter declaring `declaration`, bound to MCP
 * server `serverId`? Pure: calls nothing, never throws. Checks, in order (docs/DESIGN.md §3 rule 4):
 * the effect is well-formed (`invalid_input`), the declaration validates (`invalid_declaration`),
 * `effect.serverId === serverId` (`server_mismatch`), `declaration.tools` includes
 * `effect.toolName` (`undeclared_tool`), the effect was dispatched (`never_dispatched`).
 * The feature flag is the host's business, not checked here.
 */
export function checkEligibility(effect: ReconcilableEffect, declaration: AdapterDeclaration, serverId: string): EligibilityVerdict {
  const evaluation = evaluateEligibility(effect, declaration, serverId);
  if (evaluation.eligible) return { eligible: true };
  return evaluation.error === undefined
    ? { eligible: false, reasonCode: evaluation.reasonCode }
    : { eligible: false, reasonCode: evaluation.reasonCode, error: evaluation.error };
}

/** `checkEligibility(effect, declaration, serverId).eligible`: true when a lookup would be made. */
export function isEligible(effect: ReconcilableEffect, declaration: AdapterDeclaration, serverId: string): boolean {
  return evaluateEligibility(effect, declaration, serverId).eligible;
}

/**
 * @internal See {@link checkEligibility}; also returns the parsed effect (as a lookup request; the
 * adapter never sees `sendWithinMs`), the declaration, and the send-by deadline (ms, 0 when none).
 */
export function evaluateEligibility(effect: unknown, declaration: unknown, serverId: unknown): EligibilityEvaluation {
  let parsedEffect: ReturnType<typeof ReconcilableEffectSchema.safeParse>;
  let parsedDeclaration: ReturnType<typeof AdapterDeclarationSchema.safeParse>;
  try {
    parsedEffect = ReconcilableEffectSchema.safeParse(effect);
  } catch (error) {
    return { eligible: false, reasonCode: "invalid_input", error: `effect: ${summarizeError(error)}` };
  }
  if (!parsedEffect.success)
    return { eligible: false, reasonCode: "invalid_input", error: `effect: ${summarizeError(parsedEffect.error)}` };
  try {
    parsedDeclaration = AdapterDeclarationSchema.safeParse(declaration);
  } catch (error) {
    return { eligible: false, reasonCode: "invalid_declaration", error: summarizeError(error) };
  }
  if (!parsedDeclaration.success)
    return { eligible: false, reasonCode: "invalid_declaration", error: summarizeError(parsedDeclaration.error) };

  const e = parsedEffect.data;
  const d = parsedDeclaration.data;
  if (e.serverId !== serverId) return { eligible: false, reasonCode: "server_mismatch" };
  if (!d.tools.includes(e.toolName)) return { eligible: false, reasonCode: "undeclared_tool" };
  if (e.firstDispatchedAtMs === null || e.lastDispatchedAtMs === null) return { eligible: false, reasonCode: "never_dispatched" };
  return {
    eligible: true,
    declaration: d,
    sendWithinMs: e.sendWithinMs ?? 0,
    request: {
      effectId: e.effectId,
      serverId: e.serverId,
      toolName: e.toolName,
      idempotencyKey: e.idempotencyKey,
      requestFingerprint: e.requestFingerprint,
      firstDispatchedAtMs: e.firstDispatchedAtMs,
      lastDispatchedAtMs: e.lastDispatchedAtMs,
      ...(e.taskId ? { taskId: e.taskId } : {}),
    },
  };
}
