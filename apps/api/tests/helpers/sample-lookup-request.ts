// The lookup request the sandbox tests hand an adapter: a well-formed one whose values no test reads back.
import type { LookupRequest } from "@mosoo/effect-reconciliation";

/** A lookup request for `tracker`/`createIssue` with fixed ULIDs and fingerprint, dispatched at 1 ms since the epoch. */
export const SAMPLE_LOOKUP_REQUEST = {
  effectId: "01J00000000000000000000000",
  serverId: "tracker",
  toolName: "createIssue",
  idempotencyKey: "01J00000000000000000000001",
  requestFingerprint: "f".repeat(64),
  firstDispatchedAtMs: 1,
  lastDispatchedAtMs: 1,
} as unknown as LookupRequest;
