/**
 * `npm test`'s progress reporter (scripts/test-progress.reporter.mjs): a line a minute saying how many test files
 * are done and which are running, and none after the run ends.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..", "..");

interface Reporter {
  onTestRunStart(specs: unknown[]): void;
  onTestModuleStart(m: { moduleId: string }): void;
  onTestModuleEnd(m: { moduleId: string }): void;
  onTestRunEnd(): void;
  line(): string;
}

async function reporter(print: (line: string) => void): Promise<Reporter> {
  const mod = (await import(pathToFileURL(join(ROOT, "scripts", "test-progress.reporter.mjs")).href)) as {
    default: new (opts: { print: (line: string) => void; root: string }) => Reporter;
  };
  return new mod.default({ print, root: ROOT });
}

describe("npm test's progress reporter", () => {
  afterEach(() => vi.useRealTimers());

  it("says how many files are done and which are running, and ignores the end of a file it never saw start", async () => {
    const r = await reporter(() => undefined);
    r.onTestRunStart([{}, {}, {}]);
    r.onTestModuleStart({ moduleId: join(ROOT, "apps/api/tests/a.test.ts") });
    r.onTestModuleStart({ moduleId: join(ROOT, "apps/api/tests/b.test.ts") });
    r.onTestModuleEnd({ moduleId: join(ROOT, "apps/api/tests/a.test.ts") });
    r.onTestModuleEnd({ moduleId: join(ROOT, "apps/api/tests/never-started.test.ts") });
    expect(r.line()).toMatch(/^\[progress \d+:\d{2}\] 1 of 3 test files done; running: apps\/api\/tests\/b\.test\.ts$/);
    r.onTestRunEnd();
  });

  it("prints a line each minute while the run lasts, and none once it ended", async () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const r = await reporter((l) => lines.push(l));
    r.onTestRunStart([{}]);
    vi.advanceTimersByTime(60_000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("0 of 1 test files done; running: none");
    r.onTestRunEnd();
    vi.advanceTimersByTime(180_000);
    expect(lines).toHaveLength(1);
  });
});
