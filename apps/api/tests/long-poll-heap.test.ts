/**
 * The long-poll leaks nothing. Each poll used to build
 * `AbortSignal.any([request, shutdown])` (and another with a timeout signal); on Node 20 the heap
 * after GC grew 110–200 bytes per poll. Here 50,000 polls run through the real command queue in a
 * child process started with `--expose-gc` (so the test does not depend on vitest's flags), and the
 * heap used after a full GC must stay within 2 MB. The figures are printed.
 */
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const API_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");
const POLLS = 50_000;

describe("long-poll heap", () => {
  it(`stays flat (within 2 MB after GC) over ${POLLS} polls`, async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--expose-gc", "--import", "tsx", "tests/helpers/long-poll-heap.main.ts", String(POLLS), "5000"],
      { cwd: API_DIR, maxBuffer: 1024 * 1024 },
    );
    const figures = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as {
      polls: number;
      heapBefore: number;
      heapAfter: number;
      growth: number;
      bytesPerPoll: number;
      seconds: number;
    };
    console.log(
      `long-poll heap after GC: ${(figures.heapBefore / 1e6).toFixed(2)} MB before, ${(figures.heapAfter / 1e6).toFixed(2)} MB after ${figures.polls} polls ` +
        `(growth ${figures.growth} B, ${figures.bytesPerPoll.toFixed(2)} B/poll, ${figures.seconds.toFixed(1)} s)`,
    );
    expect(figures.polls).toBe(POLLS);
    expect(figures.growth).toBeLessThan(2 * 1024 * 1024);
  }, 600_000);
});
