// The answer of one adapter call before it is judged, and the binding it was asked through.
import type { AdapterDeclaration, ReconciliationAdapter } from "../author/adapter.contract.js";
import type { LookupOutcome } from "../author/lookup-outcome.contract.js";
import type { IneligibleDecision, RuntimeStillUnknownDecision } from "./reconcile-decision.contract.js";

/** The MCP server an adapter instance is bound to (from the host's config). */
export interface ReconcileBinding {
  serverId: string;
  adapter: ReconciliationAdapter;
}

/**
 * What one adapter call answered, before it is judged (`askAdapter`); judge it with
 * `judgeLookupAnswer` against the effect as read from the store:
 * - `ineligible`: no adapter call was made (`decision` says why);
 * - `refused`: the call failed on its own terms (`adapter_error`, `adapter_crashed`,
 *   `lookup_timeout`, `lookup_cancelled`, `invalid_adapter_output`): `decision` is final;
 * - `answered`: a schema-valid {@link LookupOutcome} (a detached copy), with the binding's
 *   `serverId`, the validated `declaration` (the host's copy, never the adapter's), and the
 *   `nowMs` / `timeoutMs` the windows are measured with.
 */
export type LookupAnswer =
  | { kind: "ineligible"; decision: IneligibleDecision }
  | { kind: "refused"; decision: RuntimeStillUnknownDecision }
  | { kind: "answered"; outcome: LookupOutcome; serverId: string; declaration: AdapterDeclaration; nowMs: number; timeoutMs: number };
