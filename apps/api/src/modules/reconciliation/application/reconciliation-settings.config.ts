// The runtime settings of reconciliation: the feature flag, each server's adapter binding, lookup timeout, lease, concurrency and backoff.
import type { ReconciliationAdapter } from "@mosoo/effect-reconciliation";
import type { AdapterProvenance, ToolCoverage } from "@mosoo/effect-reconciliation/host";
import type { LookupBackoff } from "../domain/lookup-schedule.js";
import type { GroupCommitSettings } from "./outcome-group-commit.service.js";

/**
 * Runtime settings of reconciliation (from config, see docs/how-it-works.md):
 * - `enabled`: the `MOSOO_EFFECT_RECONCILIATION` flag; off means exactly the baseline fence, no lookup ever;
 * - `bindings`: MCP server id → its adapter handle (servers without one keep the fence). In the API
 *   (`startApi`) and the operator CLI every handle comes from the isolated adapter host (worker
 *   threads: `createIsolatedAdapterHost` in adapter-sandbox.host.ts); an in-process adapter object here is for tests only;
 * - `boundAdapters?`: per bound server, where its adapter came from (recorded with every lookup and
 *   outcome) and which tools it covers (startup report, `show`); absent for adapters
 *   a test binds directly;
 * - `lookupTimeoutMs`: bound of one lookup (ms); `leaseMs`: how long a reconciler holds an effect (ms;
 *   {@link leaseMsFor} of the bound in the API: a lookup, and its retention canary, each start only while at
 *   least `lookupTimeoutMs` of the lease is left, so a shorter lease turns lookups into `lease_lapsed` and
 *   canaries into `retention_unverified`);
 * - `concurrency`: lookups at once during finalization repair and the sweep;
 * - `backoff` and `maxLookups`: the schedule of further lookups, then an operator must act;
 * - `groupCommit?`: how outcomes share transactions (default `DEFAULT_GROUP_COMMIT`; see `outcome-group-commit.service.ts`);
 * - `beforeLookup?`: test seam, awaited between a lease's commit and the check that the lease still
 *   outlasts the lookup, right before the adapter call (the window in which an operator or a Driver's
 *   evidence may change the effect); production code never sets it.
 */
export interface ReconciliationSettings {
  enabled: boolean;
  bindings: ReadonlyMap<string, ReconciliationAdapter>;
  boundAdapters?: ReadonlyMap<string, BoundAdapterInfo>;
  lookupTimeoutMs: number;
  leaseMs: number;
  concurrency: number;
  backoff: LookupBackoff;
  maxLookups: number;
  groupCommit?: GroupCommitSettings;
  beforeLookup?: (effectId: string) => Promise<void>;
}

/**
 * The lease (ms) a reconciler takes for lookups bounded by `lookupTimeoutMs` (ms): two lookups (the
 * effect's and its retention canary's) plus 10 s to commit the outcome.
 */
export function leaseMsFor(lookupTimeoutMs: number): number {
  return 2 * lookupTimeoutMs + 10_000;
}

/** Reconciliation switched off: the baseline fence, no bindings. */
export const RECONCILIATION_OFF: ReconciliationSettings = {
  enabled: false,
  bindings: new Map(),
  lookupTimeoutMs: 5_000,
  leaseMs: leaseMsFor(5_000),
  concurrency: 4,
  backoff: { initialMs: 1_000, maxMs: 60_000, factor: 2 },
  maxLookups: 8,
};

/** One bound server: its (narrowed) adapter, the tools it covers, and its provenance. */
export interface BoundAdapterInfo {
  serverId: string;
  adapter: ReconciliationAdapter;
  coverage: ToolCoverage;
  provenance: AdapterProvenance;
}
