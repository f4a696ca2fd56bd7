// Registers the adapter conformance kit with vitest: one test per kit case against a real provider.
import { beforeAll, describe, expect, it } from "vitest";
import { judgeAdapter } from "./kit/kit-runner.js";
import { KIT_CASES, type KitOptions, type KitReport } from "./kit/kit-run.contract.js";

/**
 * Registers the adapter conformance kit with vitest (docs/DESIGN.md §4–§5): one
 * `describe("adapter conformance: <name> on <provider>")` that runs {@link judgeAdapter} once
 * (`beforeAll`, budget `budgetMs`, default 120 s) and one `it` per case of `KIT_CASES`, failing
 * with every wrong answer the case saw. A case that does not apply to the provider (no delayed
 * writes, no pending state) is skipped with its reason. Call it at the top level of a test file.
 *
 * Imports `vitest`: import `@mosoo/effect-reconciliation/testing` only from test files (or use
 * `judgeAdapter`, which does not need vitest, from a script).
 */
export function runAdapterConformance(options: KitOptions & { budgetMs?: number }): void {
  describe(`adapter conformance: ${options.name} on ${options.provider.name}`, () => {
    let report: KitReport | undefined;
    beforeAll(async () => {
      report = await judgeAdapter(options);
    }, options.budgetMs ?? 120_000);
    for (const name of KIT_CASES) {
      it(name, (context) => {
        const result = report?.cases.find((c) => c.case === name);
        if (!result) throw new Error("the kit did not run");
        if (result.status === "not_applicable") context.skip(result.note ?? "not applicable");
        expect(result.failures).toEqual([]);
      });
    }
  });
}
