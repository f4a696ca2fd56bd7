import { fileURLToPath } from "node:url";
import type { AdapterSource } from "@mosoo/effect-reconciliation";

/**
 * The adapters this API ships, by adapter id, as adapter sources (DESIGN.md §4): the module file
 * and the export holding the factory. A bindings file names them by `adapterId`; the
 * isolated adapter host loads them in its workers, never on the API's main thread.
 */
export const BUILT_IN_ADAPTER_SOURCES: Readonly<Record<string, AdapterSource>> = Object.freeze({
  "fixture-issue-tracker": Object.freeze({
    module: fileURLToPath(new URL("./fixture-issue-tracker.adapter.ts", import.meta.url)),
    export: "fixtureIssueTrackerAdapterFactory",
  }),
  "fixture-issue-tracker-max-in-flight": Object.freeze({
    module: fileURLToPath(new URL("./fixture-issue-tracker.adapter.ts", import.meta.url)),
    export: "fixtureIssueTrackerMaxInFlightAdapterFactory",
  }),
});
