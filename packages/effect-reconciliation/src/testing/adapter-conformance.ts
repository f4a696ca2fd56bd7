import { describe, it } from "vitest";
import { createConformanceCases, type AdapterConformanceOptions } from "./conformance-cases.js";

/**
 * Registers the adapter conformance suite with vitest: one `describe("adapter conformance: <name>")`
 * with one `it` per case of `CONFORMANCE_CASES` (DESIGN.md §4–§5; the shared-suite pattern of
 * hono's `runTest` and drizzle's `tests()`, research/style-anchors.md). Call it at the top level
 * of a test file. A skipped case is registered with `it.skip` and its reason in the test name; a
 * case that does not apply to the declaration (the fence case for `max_in_flight`) is skipped at
 * run time with its reason.
 *
 * Imports `vitest` (a peer of the test run): import `@mosoo/effect-reconciliation/testing` only
 * from test files.
 * @throws Error synchronously when a skip has no non-empty reason, names an unknown case, or the
 *   options are malformed (see `createConformanceCases`).
 */
export function runAdapterConformance(options: AdapterConformanceOptions): void {
  const cases = createConformanceCases(options);
  describe(`adapter conformance: ${options.name}`, () => {
    for (const conformanceCase of cases) {
      const skipReason = conformanceCase.skipReason;
      if (skipReason !== undefined) {
        // The author's written reason is the skip's note in vitest's report (never a silent skip).
        it(`${conformanceCase.name} [skipped: ${skipReason}]`, (context) => context.skip(skipReason));
        continue;
      }
      it(conformanceCase.name, async (context) => {
        const result = await conformanceCase.run();
        if (result.status === "not_applicable") context.skip(result.reason);
      }, conformanceCase.budgetMs);
    }
  });
}
