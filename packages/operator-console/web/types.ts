/** Shapes the console reads from `/console/api/*` (the API's operator service, docs/DESIGN.md §7). */

/** One effect in a list (the operator service's `summary`). Times are ms since the epoch. */
interface EffectSummary {
  id: string;
  runId: string;
  commandId: string;
  driverInstanceId: string;
  serverId: string;
  toolName: string;
  toolCallId: string;
  idempotencyKey: string;
  status: string;
  resolution: string | null;
  operatorAttention: string | null;
  lookupCount: number;
  nextLookupAtMs: number | null;
  compensatesEffectId: string | null;
  createdAtMs: number;
  updatedAtMs: number;
}

/** One page of the list; `nextCursor` continues it. */
export interface EffectPage {
  effects: EffectSummary[];
  nextCursor: string | null;
}

interface Attempt {
  attempt: number;
  status: string;
  connectionId: string;
  providerReceiptJson?: string | null;
  unknownReason: string | null;
  startedAtMs: number;
  finishedAtMs: number | null;
}

interface Lookup {
  id: string;
  adapterId: string;
  adapterVersion: string;
  trigger: string;
  outcome: string;
  reasonCode: string | null;
  receipt: unknown;
  error: string | null;
  startedAtMs: number;
  finishedAtMs: number;
  nextLookupAtMs: number | null;
}

interface OperatorAction {
  id: string;
  action: string;
  actor: string;
  reason: string;
  outcome: string;
  statusBefore: string;
  statusAfter: string;
  receipt: unknown;
  compensationEffectId: string | null;
  createdAtMs: number;
}

/** One effect with its whole history (the operator service's `show`). */
export interface EffectDetail extends EffectSummary {
  requestFingerprint: string;
  version: number;
  arguments: unknown;
  result: unknown;
  providerReceipt: unknown;
  reconciliationReceipt: unknown;
  command: { id: string; status: string; error: unknown; updatedAtMs?: number } | null;
  run: { id: string; status: string; error: unknown; updatedAtMs?: number } | null;
  attempts: Attempt[];
  reconciliations: Lookup[];
  operatorActions: OperatorAction[];
  compensations: EffectSummary[];
}

/** Counts for the list's header and charts. */
export interface ConsoleStats {
  unknownTotal: number;
  byAttention: Array<{ reason: string | null; count: number }>;
  lookupOutcomes: Array<{ outcome: string; reasonCode: string | null; count: number }>;
  unknownSeries: Array<{ atMs: number; count: number }>;
}

/**
 * The signed-in session as the console sees it: `actor` is the name of the operator credential whose
 * token opened it (recorded with every action), `scopes` what that credential may do.
 */
export interface SessionInfo {
  actor: string;
  scopes: Array<"read" | "reconcile" | "resolve" | "compensate">;
  csrfToken: string;
  expiresAtMs: number;
}
