import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The slowest test files, slowest first, with the seconds each took alone on a quiet 2-core machine
 * (`vitest run --project <name> <file>`, or a full run's report: node_modules/.cache/vitest-report.json).
 * Paths are relative to the repository root. A file missing here (or renamed) only loses its place at the
 * front; add a file here when it takes more than about 20 s.
 */
const SLOW_TEST_FILES: ReadonlyArray<readonly [file: string, seconds: number]> = [
  ["apps/api/tests/ledger-model.property.test.ts", 226],
  ["apps/api/tests/crash-point-matrix.test.ts", 155],
  ["packages/e2e/tests/driver-crash.e2e.test.ts", 95],
  ["apps/api/tests/reconciliation-config.test.ts", 76],
  ["apps/api/tests/adapter-sandbox-hostile.test.ts", 65],
  ["packages/effect-reconciliation/tests/adapter-conformance.test.ts", 43],
  ["apps/api/tests/adapter-sandbox-confinement.test.ts", 20],
  ["apps/api/tests/console-browser.test.ts", 18],
  ["apps/api/tests/bad-input-catalogue.test.ts", 17],
];

/**
 * Orders the test files of a run for the shared pool of workers (one per core): the longest first, so
 * that the workers finish together instead of one running a long file alone at the end (on 2 cores, a
 * long file started last adds its whole duration to the run's wall time). Vitest's own order runs the
 * projects one after another (by name) and, without a cache of durations (a fresh CI checkout), the
 * larger files first, which starts a short-sourced long file (the ledger model, driver-crash.e2e) late.
 *
 * A file's duration is its seconds in {@link SLOW_TEST_FILES}, else the one vitest cached from a previous
 * run on this machine (which may be a run of a few of its tests, hence second); files with neither follow
 * in vitest's own order. Only the order changes: every file still runs, each in its own isolated worker as before.
 */
export class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const root = this.ctx.config.root;
    const listed = new Map(SLOW_TEST_FILES.map(([file, seconds]) => [file, seconds * 1000]));
    const durationMs = (spec: TestSpecification): number | undefined => {
      const file = relative(root, spec.moduleId);
      return listed.get(file) ?? this.ctx.cache.getFileTestResults(`${spec.project.name}:${file}`)?.duration;
    };
    const known = base.filter((spec) => durationMs(spec) !== undefined);
    const unknown = base.filter((spec) => durationMs(spec) === undefined);
    return [...known.sort((a, b) => durationMs(b)! - durationMs(a)!), ...unknown];
  }
}
