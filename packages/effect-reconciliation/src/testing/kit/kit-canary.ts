// The kit's choice of a retention canary: the oldest key it saw commit, chosen as the runtime chooses it.
import { newUlid } from "@mosoo/contracts";
import type { AdapterDeclaration } from "../../author/adapter.contract.js";
import type { ReconcilableEffect } from "../../host/reconcilable-effect.contract.js";
import { retentionCanaryWindow } from "../../host/retention-canary.js";

/** What the kit recorded of one committed write: its tool, request fingerprint (64 hex), result and when it was sent (ms since the epoch). */
export interface KitLedgerEntry {
  toolName: string;
  fingerprint: string;
  result: unknown;
  dispatchedAtMs: number;
}

/**
 * The retention canary for a lookup of `key` (`tool`, sent at `dispatchedAtMs`) at `nowMs`:
 * `canaryKey` when given (and committed), else the oldest other committed key of the same tool whose
 * send time lies in `retentionCanaryWindow`; null when none fits (the runtime then refuses a fence-less miss).
 */
export function pickCanary(
  ledger: ReadonlyMap<string, KitLedgerEntry>,
  at: {
    serverId: string;
    tool: string;
    key: string;
    dispatchedAtMs: number;
    nowMs: number;
    timeoutMs: number;
    declaration: AdapterDeclaration;
    canaryKey?: string | undefined;
  },
): ReconcilableEffect | null {
  const window = retentionCanaryWindow(
    { firstDispatchedAtMs: at.dispatchedAtMs },
    at.declaration.retentionWindowMs,
    at.nowMs,
    at.timeoutMs,
  );
  if (window === null) return null;
  let best: { key: string; entry: KitLedgerEntry } | null = null;
  for (const [key, entry] of ledger) {
    if (key === at.key || entry.toolName !== at.tool) continue;
    if (at.canaryKey !== undefined) {
      if (key === at.canaryKey) best = { key, entry };
      continue;
    }
    if (entry.dispatchedAtMs < window.fromMs || entry.dispatchedAtMs > window.toMs) continue;
    if (best === null || entry.dispatchedAtMs < best.entry.dispatchedAtMs) best = { key, entry };
  }
  if (best === null) return null;
  return {
    effectId: newUlid(),
    serverId: at.serverId,
    toolName: best.entry.toolName,
    idempotencyKey: best.key,
    requestFingerprint: best.entry.fingerprint,
    firstDispatchedAtMs: best.entry.dispatchedAtMs,
    lastDispatchedAtMs: best.entry.dispatchedAtMs,
  };
}
