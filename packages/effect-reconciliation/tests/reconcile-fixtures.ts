import { fingerprintArguments, newUlid } from "@mosoo/contracts";
import type { AdapterDeclaration, LookupContext, LookupRequest, ReconciliationAdapter } from "../src/index.ts";
import type { LookupOutcomeInput, ReconcilableEffect } from "../src/host/index.ts";

export const SERVER_ID = "issues";
export const TOOL = "create_issue";
export const ARGS = { title: "Printer on fire", labels: ["ops"] };
export const ARGS_FINGERPRINT = fingerprintArguments(ARGS);
/** A fixed "dispatch time" (ms since the epoch); tests compute every other time from it. */
export const T0 = 1_700_000_000_000;
export const HOUR_MS = 60 * 60 * 1000;
export const TIMEOUT_MS = 1000;

export function makeDeclaration(overrides: Partial<AdapterDeclaration> = {}): AdapterDeclaration {
  return {
    id: "issues-adapter",
    version: "1.2.0",
    tools: [TOOL],
    retentionWindowMs: 24 * HOUR_MS,
    keyFencing: { kind: "lookup_fences_key" },
    ...overrides,
  };
}

export function makeEffect(overrides: Partial<ReconcilableEffect> = {}): ReconcilableEffect {
  return {
    effectId: newUlid(),
    serverId: SERVER_ID,
    toolName: TOOL,
    idempotencyKey: newUlid(),
    requestFingerprint: ARGS_FINGERPRINT,
    firstDispatchedAtMs: T0,
    lastDispatchedAtMs: T0,
    ...overrides,
  };
}

/** An adapter whose `lookup` runs `answer` and records every call (request and context). */
export function scriptedAdapter(
  answer: (request: LookupRequest, context: LookupContext) => unknown,
  declaration: AdapterDeclaration = makeDeclaration(),
): { adapter: ReconciliationAdapter; calls: Array<{ request: LookupRequest; context: LookupContext }> } {
  const calls: Array<{ request: LookupRequest; context: LookupContext }> = [];
  const adapter: ReconciliationAdapter = {
    declaration,
    lookup(request, context) {
      calls.push({ request, context });
      return answer(request, context) as Promise<unknown>;
    },
  };
  return { adapter, calls };
}

export function observedAt(ms = T0 + 1000): string {
  return new Date(ms).toISOString();
}

export function succeededAnswer(effect: ReconcilableEffect, overrides: Record<string, unknown> = {}): LookupOutcomeInput {
  return {
    outcome: "confirmed_succeeded",
    toolName: effect.toolName,
    idempotencyKey: effect.idempotencyKey,
    result: { content: [{ type: "text", text: "created issue #7" }], structuredContent: { number: 7 } },
    receipt: {
      providerOperationId: "issue-7",
      observedAt: observedAt(),
      requestFingerprint: effect.requestFingerprint,
      detail: { number: 7 },
    },
    ...overrides,
  } as LookupOutcomeInput;
}

export function notExecutedAnswer(effect: ReconcilableEffect, overrides: Record<string, unknown> = {}): LookupOutcomeInput {
  return {
    outcome: "confirmed_not_executed",
    toolName: effect.toolName,
    idempotencyKey: effect.idempotencyKey,
    receipt: { observedAt: observedAt(), detail: { fenced: true } },
    ...overrides,
  } as LookupOutcomeInput;
}

/** A request fingerprint that is not {@link ARGS_FINGERPRINT}. */
export const OTHER_FINGERPRINT = fingerprintArguments({ title: "Something else" });
