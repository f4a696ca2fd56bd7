// The conformance kit's case names, options and report shapes (what `judgeAdapter` takes and returns).
import type { LookupContext, LookupRequest, ReconciliationAdapter } from "../../author/adapter.contract.js";
import type { KitProvider } from "./kit-provider.contract.js";
import type { ProviderMeasurements } from "./kit-measure.js";

/**
 * The kit's cases (README "The conformance kit"). Every decision is judged against what the
 * provider really holds for that key at that moment (`KitProvider.truth` and the kit's own record
 * of what committed): one wrong answer fails the case, and retrying until success never hides it.
 */
export const KIT_CASES = [
  "declaration_is_valid",
  "declaration_matches_provider",
  "committed_keys_are_confirmed",
  "older_key_after_newer_writes",
  "conflicting_request_not_confirmed",
  "never_used_keys_not_succeeded",
  "late_commit_never_not_executed",
  "pending_never_not_executed",
  "aborted_lookup_confirms_nothing",
  "provider_outage_confirms_nothing",
  "forgetful_provider_never_not_executed",
  "input_not_mutated",
  "no_async_errors_left_behind",
] as const;
/** One of {@link KIT_CASES}. */
export type KitCaseName = (typeof KIT_CASES)[number];

/**
 * THE KIT'S ISOLATION PORT: how the kit calls `adapter.lookup`. The default calls it in this
 * process. To run the adapter exactly as the API does (docs/DESIGN.md §4 "Adapters are untrusted code"),
 * let `createAdapter` return an `AdapterHost` handle (`(await host.bind(source, options)).adapter`
 * from the API's isolated worker host): each call then runs in a worker thread. The kit always
 * hands the caller a copy of the request and checks the original copy afterwards.
 */
export type AdapterCaller = (adapter: ReconciliationAdapter, request: LookupRequest, context: LookupContext) => Promise<unknown>;

/**
 * Options of `judgeAdapter`: `name`; `createAdapter` (one adapter for the whole run);
 * `provider` ({@link KitProvider}); `serverId?` (default `conformance`); `timeoutMs?` (lookup
 * timeout, default 2000 ms); `settleMs?` (how long a committed key may take to be confirmed, default
 * the measured lag + 1500 ms); `retentionProbeMs?` (how long a key is watched, default 1200 ms);
 * `caller?` ({@link AdapterCaller}).
 */
export interface KitOptions {
  name: string;
  createAdapter: () => ReconciliationAdapter | Promise<ReconciliationAdapter>;
  provider: KitProvider;
  serverId?: string;
  timeoutMs?: number;
  settleMs?: number;
  retentionProbeMs?: number;
  caller?: AdapterCaller;
}

/** How one case ended: `failures` (one line each) empty when passed; `not_applicable` with its reason. */
export interface KitCaseReport {
  case: KitCaseName;
  status: "passed" | "failed" | "not_applicable";
  failures: string[];
  note?: string;
}

/** The kit's verdict on one adapter against one provider: `passed` only when no case failed. */
export interface KitReport {
  name: string;
  provider: string;
  passed: boolean;
  cases: KitCaseReport[];
  measurements: ProviderMeasurements | null;
}
