import { createAdapterRegistry, type AdapterRegistry } from "@mosoo/effect-reconciliation";
import { fixtureIssueTrackerAdapterFactory, fixtureIssueTrackerMaxInFlightAdapterFactory } from "./fixture-issue-tracker.adapter.js";

/**
 * A registry holding every adapter this API ships. It stays open so a host may register more
 * before startup; `startApi` closes it once the bindings are resolved.
 * @throws ReconciliationError `adapter.invalid_declaration` / `adapter.duplicate_id` (a bug here).
 */
export function createBuiltInAdapterRegistry(): AdapterRegistry {
  const registry = createAdapterRegistry();
  registry.register(fixtureIssueTrackerAdapterFactory);
  registry.register(fixtureIssueTrackerMaxInFlightAdapterFactory);
  return registry;
}
